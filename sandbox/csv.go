package sandbox

import (
	"io"

	"github.com/seoetl/etl/catalog"
)

// csvWriter writes the API's CSV (spec 2.1): ';' between cells, a cell
// holding ';', '"', CR or LF quoted with '"' and inner quotes doubled, "\n"
// after every row, list items joined with ','. It writes each row to w as it
// goes; w is buffered by the caller, so no body is ever held whole.
type csvWriter struct {
	w    io.Writer
	line []byte // the row being built
	cell []byte // the cell being built
}

// quoteSet marks the bytes that make a cell need quotes.
var quoteSet = [256]bool{';': true, '"': true, '\r': true, '\n': true}

// needsQuotes reports whether a cell must be quoted.
func needsQuotes(cell []byte) bool {
	for _, c := range cell {
		if quoteSet[c] {
			return true
		}
	}
	return false
}

// appendCSVCell appends cell to dst, quoted when needed.
func appendCSVCell(dst, cell []byte) []byte {
	if !needsQuotes(cell) {
		return append(dst, cell...)
	}
	dst = append(dst, '"')
	for _, c := range cell {
		if c == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

// header writes the header row.
func (c *csvWriter) header(names []string) error {
	c.line = c.line[:0]
	for i, n := range names {
		if i > 0 {
			c.line = append(c.line, ';')
		}
		c.line = appendCSVCell(c.line, []byte(n))
	}
	c.line = append(c.line, '\n')
	_, err := c.w.Write(c.line)
	return err
}

// row writes one data row.
func (c *csvWriter) row(vals []value) error {
	c.line = c.line[:0]
	for i, v := range vals {
		if i > 0 {
			c.line = append(c.line, ';')
		}
		// Appended in place; re-appended quoted in the rare case it needs
		// quotes (only text can).
		start := len(c.line)
		c.line = v.appendText(c.line)
		if (v.kind == catalog.Text || v.kind == catalog.TextList) && needsQuotes(c.line[start:]) {
			c.cell = append(c.cell[:0], c.line[start:]...)
			c.line = appendCSVCell(c.line[:start], c.cell)
		}
	}
	c.line = append(c.line, '\n')
	_, err := c.w.Write(c.line)
	return err
}
