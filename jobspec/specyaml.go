package jobspec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// This file reads a job spec's YAML into nodes and refuses what the YAML
// library lets through or reports badly: text that is not UTF-8 or holds
// control characters, a syntax error at the line the library names (the
// start of the enclosing block, or none at all), a key given twice (the
// library keeps the last silently), a second document (ignored silently)
// and a NUL character (which PostgreSQL refuses mid-run).

// maxEcho is how many bytes of a value a message shows, quoted.
const maxEcho = 80

// Quote is how every message shows a value (of the spec, of data, of the
// command line): quoted as Go
// quotes it (so a newline shows as \n and cannot start a line of its own,
// nor can any other control character reach the terminal), and cut after
// maxEcho bytes with the value's length, so a 1 MiB value costs a line.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		q := strconv.Quote(s[i : i+size])
		q = q[1 : len(q)-1]
		if b.Len()-1+len(q) > maxEcho {
			fmt.Fprintf(&b, `"... (%d bytes)`, len(s))
			return b.String()
		}
		b.WriteString(q)
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// number shows a value the caller has checked is an integer's digits
// (which cannot mislead) as it is, unless it is too long to show whole.
func number(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	return Quote(s)
}

// named is kind followed by its quoted name, or kind alone without one.
func named(kind, name string) string {
	if name == "" {
		return kind
	}
	return kind + " " + Quote(name)
}

// readYAML parses data as one YAML document and returns its root node; nil
// when the file has no content or cannot be read (the problem reported).
func (p *parser) readYAML(data []byte) (root *yaml.Node, ok bool) {
	utf16 := bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF})
	if !utf16 && !p.checkText(data) {
		return nil, false
	}
	docs, err := decodeDocs(data)
	var after *yaml.Node // what follows the first document
	switch {
	case err != nil && len(docs) == 0:
	case err != nil || len(docs) > 1:
		// The first document is whole, and the file goes on: another
		// document, or text the library cannot read after "...".
		switch line, marker := documentMarker(data, docs[0]); {
		case line > 0:
			after = &yaml.Node{Line: line, Value: marker}
			err = nil
		case err == nil: // a second document without a marker found
			after = &yaml.Node{Line: max(docs[1].Line, 1), Value: "---"}
		}
	}
	if err != nil {
		line, msg := p.syntaxLine(data, err, utf16)
		p.problems = append(p.problems, Problem{File: p.file, Line: line, Msg: "not valid YAML: " + msg})
		return nil, false
	}
	if after != nil {
		if after.Value == "---" {
			p.errorf(after, `"---" starts a second YAML document, which would be ignored; a job spec is one document: put every job under its one jobs: list`)
		} else {
			p.errorf(after, `"..." ends the YAML document, but the file goes on and the rest would be ignored; a job spec is one document: remove the "..."`)
		}
	}
	if len(docs) == 0 || emptyDocument(docs[0]) {
		return nil, true
	}
	root = docs[0].Content[0]
	p.checkTree(root, "", false)
	return root, true
}

// decodeDocs decodes the documents of data until the end, an error, or a
// second document with content (the first one and that one returned).
// Empty documents after the first (a "---" that ends the file) are left
// out: nothing would be ignored.
func decodeDocs(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		if len(docs) > 0 && emptyDocument(&doc) {
			continue
		}
		docs = append(docs, &doc)
		if len(docs) == 2 {
			return docs, nil
		}
	}
}

func emptyDocument(doc *yaml.Node) bool {
	if len(doc.Content) == 0 {
		return true
	}
	n := doc.Content[0]
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == ""
}

// documentMarker finds the "---" or "..." that ends the first document
// (whose root starts at a line of its own or after a "---" of its own):
// the first marker at the start of a line past the root's first line.
func documentMarker(data []byte, first *yaml.Node) (line int, marker string) {
	after := 0
	if len(first.Content) > 0 {
		after = first.Content[0].Line
	}
	starts := lineStarts(data)
	for i, start := range starts {
		if i+1 <= after {
			continue
		}
		rest := data[start:]
		for _, m := range []string{"---", "..."} {
			if bytes.HasPrefix(rest, []byte(m)) && (len(rest) == len(m) || strings.ContainsRune(" \t\r\n", rune(rest[len(m)]))) {
				return i + 1, m
			}
		}
	}
	return 0, ""
}

// lineStarts returns the offset at which each line of data starts, with
// the line breaks YAML knows: LF, CRLF, CR, NEL, LS and PS.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		i += size
		switch r {
		case '\r':
			if i < len(data) && data[i] == '\n' {
				i++
			}
		case '\n', '\u0085', '\u2028', '\u2029':
		default:
			continue
		}
		if i < len(data) {
			starts = append(starts, i)
		}
	}
	return starts
}

// checkText reports the first byte that is not UTF-8 and the first
// character YAML does not allow (a control character: #x9, #xA, #xD,
// #x20-#x7E, #x85, #xA0-#xD7FF, #xE000-#xFFFD and #x10000-#x10FFFF are
// allowed), at its line and column, which the YAML library does not give.
func (p *parser) checkText(data []byte) bool {
	line, col := 1, 0
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		col++
		var msg string
		switch {
		case r == utf8.RuneError && size <= 1:
			msg = fmt.Sprintf("byte 0x%02x at column %d is not UTF-8; save the file as UTF-8", data[i], col)
		case r == 0:
			msg = fmt.Sprintf("NUL byte (U+0000) at column %d: YAML does not allow it; remove it", col)
		case r == '\t' || r == 0x85 || r >= 0x20 && r <= 0x7E || r >= 0xA0 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000:
		case r == '\r' || r == '\n':
		default:
			msg = fmt.Sprintf("control character U+%04X at column %d: YAML does not allow it; remove it", r, col)
		}
		if msg != "" {
			p.problems = append(p.problems, Problem{File: p.file, Line: line, Msg: msg})
			return false
		}
		i += size
		switch {
		case r == '\r' && i < len(data) && data[i] == '\n':
			i++
			fallthrough
		case r == '\r' || r == '\n' || r == 0x85 || r == 0x2028 || r == 0x2029:
			line, col = line+1, 0
		}
	}
	return true
}

var yamlLine = regexp.MustCompile(`^line (\d+): `)

// syntaxLine finds the line of a syntax error and words it. The library
// names the line where the enclosing block starts (a mis-indented key deep
// in a job is reported at the job's first line), or no line at all (an
// unknown alias); the line where the problem is found is the shortest
// prefix of the file, in whole lines, that fails with the same error.
func (p *parser) syntaxLine(data []byte, err error, utf16 bool) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	if !utf16 {
		starts := append(lineStarts(data), len(data))
		fails := func(k int) bool {
			_, e := decodeDocs(data[:starts[k]])
			return e != nil && e.Error() == err.Error()
		}
		// The first lo lines do not fail alike, the first hi do. The
		// line named (the enclosing block's, counted from 0 or 1) is not
		// past the problem, and a prefix that ends before it cannot fail
		// naming it.
		lo, hi := max(line-2, 0), len(starts)-1
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if fails(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		line = hi
	}
	return max(line, 1), explain(msg)
}

// explain adds to the library's words for a syntax error the likely fix.
func explain(msg string) string {
	if name, ok := strings.CutPrefix(msg, "unknown anchor '"); ok {
		name = strings.TrimSuffix(name, "' referenced")
		alias, anchor := "*"+name, "&"+name
		if len(name) > maxEcho {
			alias, anchor = Quote(alias), Quote(anchor)
		}
		return fmt.Sprintf("alias %s refers to no anchor; define it first (%s), or quote the value if the * is meant literally", alias, anchor)
	}
	for _, h := range [...]struct{ problem, fix string }{
		{"did not find expected '-' indicator", indentFix},
		{"did not find expected key", indentFix},
		{"block sequence entries are not allowed in this context", indentFix},
		{"mapping values are not allowed in this context", `quote a value that holds ": ", or check this line's indentation`},
		{"did not find expected alphabetic or numeric character", `a value that starts with * or & must be quoted (schedule: "* * * * *")`},
		{"found a tab character", "indent with spaces: YAML does not allow tabs there"},
		{"found unexpected end of stream", "close the quoted value that starts on this line"},
	} {
		if strings.HasPrefix(msg, h.problem) {
			return msg + "; " + h.fix
		}
	}
	return msg
}

const indentFix = "check this line's indentation: the keys of one mapping line up, and so do the dashes of one list"

// checkTree refuses, at every level of the document, a key given twice in
// one mapping (YAML keeps the last silently; the first is kept and the
// others skipped from then on) and a NUL character in a key or a value
// (PostgreSQL cannot store it; a key is skipped, a value loses its NULs
// once reported). n is the value of key, or an item of its list.
func (p *parser) checkTree(n *yaml.Node, key string, item bool) {
	switch n.Kind {
	case yaml.MappingNode:
		first := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				p.checkTree(k, "", false)
				p.checkTree(v, "", false)
				continue
			}
			switch line, dup := first[k.Value]; {
			case strings.ContainsRune(k.Value, 0):
				p.errorf(k, "the key %s holds a NUL character; remove it: PostgreSQL cannot store NUL in text", Quote(k.Value))
				p.skip[k] = true
			case dup:
				p.errorf(k, "key %s is given twice in one mapping (first at line %d); YAML would silently keep only the second: merge the two or delete one", Quote(k.Value), line)
				p.skip[k] = true
			default:
				first[k.Value] = k.Line
			}
			p.checkTree(v, k.Value, false)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			p.checkTree(c, key, true)
		}
	case yaml.ScalarNode:
		if oneLine[key] && strings.IndexFunc(n.Value, func(r rune) bool { return r != 0 && unicode.IsControl(r) }) >= 0 {
			// A name, url or keyword names tasks in logs, summaries and
			// the progress display: a newline or an escape there forges
			// lines or moves the cursor.
			what := key
			if item {
				what = "an item of " + key
			}
			p.errorf(n, "%s holds a control character (%s); names, urls and keywords are one line of printable text", what, Quote(n.Value))
			return
		}
		if !strings.ContainsRune(n.Value, 0) {
			return
		}
		what := "a value"
		switch {
		case key == "":
		case plainKey.MatchString(key):
			what = key
		default:
			what = "the value of key " + Quote(key)
		}
		if item && key != "" {
			what = "an item of " + strings.TrimPrefix(what, "the value of ")
		}
		p.errorf(n, "%s holds a NUL character (%s); remove it: PostgreSQL cannot store NUL in text", what, Quote(n.Value))
		n.Value = strings.ReplaceAll(n.Value, "\x00", "")
	}
}

// oneLine are the keys whose values name what a task is about and must be
// one line of printable text.
var oneLine = map[string]bool{"name": true, "url": true, "urls": true, "keywords": true, "domain": true, "countries": true}

// plainKey is a key that messages can name as it is.
var plainKey = regexp.MustCompile(`^[a-z][a-z_-]{0,39}$`)
