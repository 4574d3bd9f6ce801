package sandbox

import (
	"strconv"
	"unicode/utf8"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/filter"
)

// value is one cell of a row, tagged with the catalog kind it was made for;
// the encoders render it per kind (spec 2.1 for CSV, 2.2 to 2.13 for JSON).
type value struct {
	kind catalog.Kind
	i    int64    // Int, IntString; unix seconds for Timestamp and Date; Float in 1/10000
	s    string   // Text, DecString
	b    bool     // Bool
	is   []int64  // IntList
	ss   []string // TextList
}

func intV(i int64) value          { return value{kind: catalog.Int, i: i} }
func digitsV(i int64) value       { return value{kind: catalog.IntString, i: i} }
func decimalV(s string) value     { return value{kind: catalog.DecString, s: s} }
func textV(s string) value        { return value{kind: catalog.Text, s: s} }
func boolV(b bool) value          { return value{kind: catalog.Bool, b: b} }
func timestampV(unix int64) value { return value{kind: catalog.Timestamp, i: unix} }
func dateV(unix int64) value      { return value{kind: catalog.Date, i: unix} }
func textListV(ss []string) value { return value{kind: catalog.TextList, ss: ss} }
func intListV(is []int64) value   { return value{kind: catalog.IntList, is: is} }

// floatV is a number of four decimals given in 1/10000 (similarity), written
// with all four decimals ("0.0125").
func floatV(tenThousandths int64) value { return value{kind: catalog.Float, i: tenThousandths} }

// appendDecimal4 appends x/10000 with four decimals.
func appendDecimal4(dst []byte, x int64) []byte {
	if x < 0 {
		dst = append(dst, '-')
		x = -x
	}
	dst = strconv.AppendInt(dst, x/10000, 10)
	dst = append(dst, '.')
	frac := x % 10000
	for d := int64(1000); d > 0; d /= 10 {
		dst = append(dst, byte('0'+frac/d%10))
	}
	return dst
}

// filterValue is the value as the filter language reads it.
func (v value) filterValue() filter.Value {
	switch v.kind {
	case catalog.Int, catalog.IntString:
		return filter.Value{Int: v.i}
	case catalog.Float:
		return filter.Value{Float: float64(v.i) / 10000}
	case catalog.Text:
		return filter.Value{Str: v.s}
	case catalog.Bool:
		return filter.Value{Bool: v.b}
	case catalog.Timestamp, catalog.Date:
		return filter.Value{Time: v.i}
	case catalog.IntList:
		is := v.is
		if is == nil {
			is = []int64{}
		}
		return filter.Value{Ints: is}
	}
	return filter.Value{Null: true}
}

// appendTimestamp appends unix time t in UTC as YYYY-MM-DDTHH:MM:SS (spec
// 2.1), or as YYYY-MM-DD without the time; years 0 to 9999. It is
// time.Time.AppendFormat without the layout parsing, which would dominate
// streaming a list.
func appendTimestamp(dst []byte, t int64, withTime bool) []byte {
	days := t / day
	secs := t - days*day
	if secs < 0 {
		days--
		secs += day
	}
	y, m, d := civil(days)
	dst = append2(append2(dst, y/100), y%100)
	dst = append2(append(dst, '-'), m)
	dst = append2(append(dst, '-'), d)
	if !withTime {
		return dst
	}
	dst = append2(append(dst, 'T'), secs/3600)
	dst = append2(append(dst, ':'), secs/60%60)
	return append2(append(dst, ':'), secs%60)
}

func append2(dst []byte, x int64) []byte { return append(dst, byte('0'+x/10), byte('0'+x%10)) }

// civil converts days since 1970-01-01 to a proleptic Gregorian date
// (Howard Hinnant's days_from_civil, inverted).
func civil(days int64) (y, m, d int64) {
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// appendText appends the value as a CSV cell before quoting: lists joined
// with ',', booleans true/false, timestamps YYYY-MM-DDTHH:MM:SS in UTC.
func (v value) appendText(dst []byte) []byte {
	switch v.kind {
	case catalog.Int, catalog.IntString:
		return strconv.AppendInt(dst, v.i, 10)
	case catalog.Float:
		return appendDecimal4(dst, v.i)
	case catalog.Text, catalog.DecString:
		return append(dst, v.s...)
	case catalog.Bool:
		return strconv.AppendBool(dst, v.b)
	case catalog.Timestamp:
		return appendTimestamp(dst, v.i, true)
	case catalog.Date:
		return appendTimestamp(dst, v.i, false)
	case catalog.TextList:
		for i, s := range v.ss {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, s...)
		}
		return dst
	case catalog.IntList:
		for i, n := range v.is {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, n, 10)
		}
		return dst
	}
	panic("sandbox: no CSV form for " + v.kind.String())
}

// appendJSON appends the value as JSON: integers as numbers, the string
// kinds (IntString and DecString included, spec 2.13) as strings, lists as
// arrays (never null).
func (v value) appendJSON(dst []byte) []byte {
	switch v.kind {
	case catalog.Int:
		return strconv.AppendInt(dst, v.i, 10)
	case catalog.Float:
		return appendDecimal4(dst, v.i)
	case catalog.IntString:
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, v.i, 10)
		return append(dst, '"')
	case catalog.Text, catalog.DecString:
		return appendJSONString(dst, v.s)
	case catalog.Bool:
		return strconv.AppendBool(dst, v.b)
	case catalog.Timestamp, catalog.Date:
		dst = append(dst, '"')
		dst = v.appendText(dst)
		return append(dst, '"')
	case catalog.TextList:
		dst = append(dst, '[')
		for i, s := range v.ss {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, s)
		}
		return append(dst, ']')
	case catalog.IntList:
		dst = append(dst, '[')
		for i, n := range v.is {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, n, 10)
		}
		return append(dst, ']')
	}
	panic("sandbox: no JSON form for " + v.kind.String())
}

// appendJSONString appends s as a JSON string, escaping what encoding/json
// escapes except <, > and &; invalid UTF-8 becomes U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
