package transform

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/redact"
)

// column decodes the values of one catalog field into its Arrow builder. A
// row is decoded in two steps so that a bad row never leaves a half-appended
// record behind: parse (a CSV cell) or parseJSON (a JSON value) checks a
// value and keeps it in the column's scratch fields, and append moves it into
// the builder once every value of the row has parsed.
type column struct {
	field   catalog.Field
	b       array.Builder
	red     *redact.Redactor // masks secrets in text values; nil: none
	dataLen int              // bytes of string data in the last full batch

	// The current row's value.
	null  bool
	i     int64
	f     float64
	t     bool
	s     []byte
	items [][]byte // TextList items
	ints  []int64  // IntList items
	buf   []byte   // unescaped JSON strings of the row, which s and items may point into
}

func newColumn(f catalog.Field, b array.Builder, red *redact.Redactor) *column {
	return &column{field: f, b: b, red: red}
}

// parse checks cell and keeps its value for append. On failure it returns
// what is wrong with the value, to follow the quoted value in a reason
// ("is not an integer").
func (c *column) parse(cell []byte) string {
	c.null = false
	kind := c.field.Kind
	if len(cell) == 0 {
		switch kind {
		case catalog.Text:
			c.s = cell
		case catalog.TextList:
			c.items = c.items[:0]
		case catalog.IntList:
			c.ints = c.ints[:0]
		default:
			c.null = true
		}
		return ""
	}
	var ok bool
	switch kind {
	case catalog.Text:
		if msg := checkText(cell); msg != "" {
			return msg
		}
		c.s = c.red.Value(cell)
		return ""
	case catalog.Int:
		if c.i, ok = parseInt(cell, true); !ok {
			return intProblem(cell, true, "is not an integer")
		}
	case catalog.IntString:
		if c.i, ok = parseInt(cell, false); !ok {
			return intProblem(cell, false, "is not a string of digits")
		}
	case catalog.Float:
		if c.f, ok = parseFloat(cell, true); !ok {
			return "is not a number"
		}
	case catalog.DecString:
		if c.f, ok = parseFloat(cell, false); !ok {
			return "is not a decimal number"
		}
	case catalog.Bool:
		switch string(cell) {
		case "true":
			c.t = true
		case "false":
			c.t = false
		default:
			return "is not a boolean (true or false)"
		}
	case catalog.Timestamp:
		if c.i, ok = parseTimestamp(cell); !ok {
			return "is not a timestamp YYYY-MM-DDTHH:MM:SS"
		}
	case catalog.Date:
		if c.i, ok = parseDate(cell); !ok {
			return "is not a date YYYY-MM-DD"
		}
	case catalog.TextList:
		if msg := checkText(cell); msg != "" {
			return msg
		}
		cell = c.red.Value(cell)
		c.items = c.items[:0]
		for {
			item, rest, more := bytes.Cut(cell, []byte{','})
			c.items = append(c.items, item)
			if !more {
				break
			}
			cell = rest
		}
	case catalog.IntList:
		c.ints = c.ints[:0]
		for {
			item, rest, more := bytes.Cut(cell, []byte{','})
			v, ok := parseInt(item, true)
			if !ok {
				return intProblem(item, true, "is not a ','-separated list of integers")
			}
			c.ints = append(c.ints, v)
			if !more {
				break
			}
			cell = rest
		}
	default:
		panic(fmt.Sprintf("transform: no decoder for %v", kind))
	}
	return ""
}

// append appends the value parse kept.
func (c *column) append() {
	if c.null {
		c.b.AppendNull()
		return
	}
	switch b := c.b.(type) {
	case *array.Int64Builder:
		b.Append(c.i)
	case *array.Float64Builder:
		b.Append(c.f)
	case *array.StringBuilder:
		b.BinaryBuilder.Append(c.s)
	case *array.BooleanBuilder:
		b.Append(c.t)
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(c.i))
	case *array.Date32Builder:
		b.Append(arrow.Date32(c.i))
	case *array.ListBuilder:
		b.Append(true)
		switch vb := b.ValueBuilder().(type) {
		case *array.StringBuilder:
			for _, item := range c.items {
				vb.BinaryBuilder.Append(item)
			}
		case *array.Int64Builder:
			vb.AppendValues(c.ints, nil)
		}
	default:
		panic(fmt.Sprintf("transform: no builder for %T", c.b))
	}
}

// checkText rejects what PostgreSQL text cannot hold.
func checkText(b []byte) string {
	if !utf8.Valid(b) {
		return "is not valid UTF-8"
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return "holds a NUL byte"
	}
	return ""
}

// intProblem says why parseInt refused b: syntax, or else range.
func intProblem(b []byte, signed bool, syntax string) string {
	digits := b
	if signed {
		digits = bytes.TrimPrefix(b, []byte{'-'})
	}
	if len(digits) == 0 || bytes.ContainsFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) {
		return syntax
	}
	return "is out of the 64-bit integer range"
}

// parseInt parses decimal digits, with a leading '-' when signed is true,
// into an int64. It allows nothing else: no '+', no spaces, no '_'.
func parseInt(b []byte, signed bool) (int64, bool) {
	neg := false
	if signed && len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	limit := uint64(1<<63 - 1)
	if neg {
		limit++
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (limit-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n), true // n == 1<<63 wraps to MinInt64, as wanted
	}
	return int64(n), true
}

// parseFloat parses -?digits(.digits)? and, when exponent is true, an
// optional [eE][+-]?digits. Unlike strconv it takes no "NaN", "Inf", hex or
// '_', and it refuses values beyond float64.
func parseFloat(b []byte, exponent bool) (float64, bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	if !digits() {
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return 0, false
		}
	}
	if exponent && i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return 0, false
		}
	}
	if i != len(b) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil
}

// parseTimestamp parses YYYY-MM-DDTHH:MM:SS (UTC) into microseconds since
// the Unix epoch.
func parseTimestamp(b []byte) (int64, bool) {
	if len(b) != 19 || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	days, ok := parseDate(b[:10])
	if !ok {
		return 0, false
	}
	h, ok1 := twoDigits(b[11:13], 23)
	m, ok2 := twoDigits(b[14:16], 59)
	s, ok3 := twoDigits(b[17:19], 59)
	if !ok1 || !ok2 || !ok3 {
		return 0, false
	}
	return ((days*24+h)*60+m)*60*1e6 + s*1e6, true
}

// parseDate parses YYYY-MM-DD, year 0001 to 9999, into days since the Unix
// epoch.
func parseDate(b []byte) (int64, bool) {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return 0, false
	}
	y, ok := parseInt(b[:4], false)
	if !ok || y < 1 {
		return 0, false
	}
	m, ok1 := twoDigits(b[5:7], 12)
	d, ok2 := twoDigits(b[8:10], 31)
	if !ok1 || !ok2 || m < 1 || d < 1 {
		return 0, false
	}
	t := time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC)
	if t.Day() != int(d) { // 2024-02-30 rolls over into March
		return 0, false
	}
	return t.Unix() / 86400, true
}

func twoDigits(b []byte, max int64) (int64, bool) {
	if b[0] < '0' || b[0] > '9' || b[1] < '0' || b[1] > '9' {
		return 0, false
	}
	v := int64(b[0]-'0')*10 + int64(b[1]-'0')
	return v, v <= max
}

// parseJSON checks v, one JSON value as sent (encoding/json has checked its
// syntax), and keeps it for append, as parse does for a CSV cell. JSON null
// is NULL for every kind. On failure it returns what is wrong with the
// value, to follow the value in a reason.
func (c *column) parseJSON(v []byte) string {
	c.null = false
	c.buf = c.buf[:0]
	if v[0] == 'n' {
		c.null = true
		return ""
	}
	var ok bool
	switch c.field.Kind {
	case catalog.Text:
		if v[0] != '"' {
			return "is not a string"
		}
		s, msg := c.text(v)
		if msg != "" {
			return msg
		}
		c.s = c.red.Value(s)
	case catalog.Int:
		if !isNumber(v) {
			return "is not an integer"
		}
		if c.i, ok = parseInt(v, true); !ok {
			return numberProblem(v, true)
		}
	case catalog.IntString:
		return c.jsonIntString(v)
	case catalog.Float:
		if !isNumber(v) {
			return "is not a number"
		}
		if c.f, ok = parseFloat(v, true); !ok {
			return "is out of the 64-bit float range"
		}
	case catalog.DecString:
		return c.jsonDecString(v)
	case catalog.Bool:
		switch v[0] {
		case 't':
			c.t = true
		case 'f':
			c.t = false
		default:
			return "is not a boolean (true or false)"
		}
	case catalog.Timestamp:
		return c.jsonTime(v, parseTimestamp, "is not a timestamp YYYY-MM-DDTHH:MM:SS")
	case catalog.Date:
		return c.jsonTime(v, parseDate, "is not a date YYYY-MM-DD")
	case catalog.TextList:
		return c.jsonTextList(v)
	case catalog.IntList:
		return c.jsonIntList(v)
	default:
		panic(fmt.Sprintf("transform: no decoder for %v", c.field.Kind))
	}
	return ""
}

// jsonIntString is parseJSON of an IntString: a string of digits, or a
// JSON number.
func (c *column) jsonIntString(v []byte) string {
	var ok bool
	switch {
	case v[0] == '"':
		s, msg := c.text(v)
		if msg != "" {
			return msg
		}
		if c.i, ok = parseInt(s, false); !ok {
			return intProblem(s, false, "is not a string of digits")
		}
	case isNumber(v):
		if c.i, ok = parseInt(v, false); !ok {
			return numberProblem(v, false)
		}
	default:
		return "is not a string of digits"
	}
	return ""
}

// jsonDecString is parseJSON of a DecString: a string holding a decimal
// number, or a JSON number.
func (c *column) jsonDecString(v []byte) string {
	var ok bool
	switch {
	case v[0] == '"':
		s, msg := c.text(v)
		if msg != "" {
			return msg
		}
		if c.f, ok = parseFloat(s, false); !ok {
			return "is not a decimal number"
		}
	case isNumber(v):
		if c.f, ok = parseFloat(v, true); !ok {
			return "is out of the 64-bit float range"
		}
	default:
		return "is not a decimal number"
	}
	return ""
}

// jsonTime is parseJSON of a Timestamp or a Date: a string that parse
// reads into c.i; problem says what is wrong with any other value.
func (c *column) jsonTime(v []byte, parse func([]byte) (int64, bool), problem string) string {
	if v[0] != '"' {
		return problem
	}
	s, msg := c.text(v)
	if msg != "" {
		return msg
	}
	var ok bool
	if c.i, ok = parse(s); !ok {
		return problem
	}
	return ""
}

// jsonTextList is parseJSON of a TextList: an array of strings.
func (c *column) jsonTextList(v []byte) string {
	if v[0] != '[' {
		return "is not an array of strings"
	}
	c.items = c.items[:0]
	for item := range arrayItems(v) {
		if item[0] != '"' {
			return fmt.Sprintf("is not an array of strings: item %d is %s", len(c.items)+1, jsonType(item))
		}
		s, msg := c.text(item)
		if msg != "" {
			return fmt.Sprintf("is not an array of valid strings: item %d %s", len(c.items)+1, msg)
		}
		c.items = append(c.items, c.red.Value(s))
	}
	return ""
}

// jsonIntList is parseJSON of an IntList: an array of integers.
func (c *column) jsonIntList(v []byte) string {
	if v[0] != '[' {
		return "is not an array of integers"
	}
	c.ints = c.ints[:0]
	for item := range arrayItems(v) {
		if !isNumber(item) {
			return fmt.Sprintf("is not an array of integers: item %d is %s", len(c.ints)+1, jsonType(item))
		}
		x, ok := parseInt(item, true)
		if !ok {
			return fmt.Sprintf("is not an array of integers: item %d (%s) %s", len(c.ints)+1, showJSON(c.red, item), numberProblem(item, true))
		}
		c.ints = append(c.ints, x)
	}
	return ""
}

// text unescapes the JSON string v (with its quotes) and checks it as text.
// The result points into v when v holds no escape, else into c.buf.
func (c *column) text(v []byte) ([]byte, string) {
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return body, checkText(body)
	}
	start := len(c.buf)
	var msg string
	if c.buf, msg = unquote(c.buf, body); msg != "" {
		return nil, msg
	}
	s := c.buf[start:]
	return s, checkText(s)
}

// numberProblem says why parseInt refused the JSON number v.
func numberProblem(v []byte, signed bool) string {
	switch {
	case bytes.ContainsAny(v, ".eE"):
		return "is not an integer: it has a fraction or an exponent"
	case !signed && v[0] == '-':
		return "is negative, not a string of digits"
	}
	return "is out of the 64-bit integer range"
}
