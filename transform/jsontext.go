package transform

import (
	"bytes"
	"fmt"
	"iter"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/seoetl/etl/internal/redact"
)

// The helpers of this file read JSON text whose syntax encoding/json has
// already checked (a row decoded into a json.RawMessage), so they do not
// check it again.

// isNumber reports whether the JSON value v is a number.
func isNumber(v []byte) bool { return v[0] == '-' || v[0] >= '0' && v[0] <= '9' }

// jsonType names the type of the JSON value v for a reason.
func jsonType(v []byte) string {
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(v []byte, i int) int {
	for i < len(v) && isSpace(v[i]) {
		i++
	}
	return i
}

// stringEnd returns the index after the JSON string that starts at v[i].
func stringEnd(v []byte, i int) int {
	for i++; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(v)
}

// valueEnd returns the index after the JSON value that starts at v[i]; it
// is more than i.
func valueEnd(v []byte, i int) int {
	switch v[i] {
	case '"':
		return stringEnd(v, i)
	case '{', '[':
		depth := 0
		for ; i < len(v); i++ {
			switch v[i] {
			case '"':
				i = stringEnd(v, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(v)
	}
	j := i + 1
	for j < len(v) && !isSpace(v[j]) && v[j] != ',' && v[j] != ']' && v[j] != '}' {
		j++
	}
	return j
}

// arrayItems yields the items of the JSON array v.
func arrayItems(v []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		i := skipSpace(v, 1)
		for i < len(v) && v[i] != ']' {
			end := valueEnd(v, i)
			if !yield(v[i:end]) {
				return
			}
			if i = skipSpace(v, end); i < len(v) && v[i] == ',' {
				i = skipSpace(v, i+1)
			}
		}
	}
}

// objectMembers yields the members of the JSON object v: the name as sent
// (quoted, escapes and all) and the value.
func objectMembers(v []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		i := skipSpace(v, 1)
		for i < len(v) && v[i] == '"' {
			end := stringEnd(v, i)
			name := v[i:end]
			if i = skipSpace(v, end); i < len(v) && v[i] == ':' {
				i = skipSpace(v, i+1)
			}
			if i >= len(v) {
				return
			}
			end = valueEnd(v, i)
			if !yield(name, v[i:end]) {
				return
			}
			if i = skipSpace(v, end); i < len(v) && v[i] == ',' {
				i = skipSpace(v, i+1)
			}
		}
	}
}

// unquote appends s, the text of a JSON string between its quotes,
// unescaped to dst. Bytes that are not escapes are copied as sent, invalid
// UTF-8 included, for the caller to check. It refuses an escaped UTF-16
// surrogate that is not part of a pair, which stands for no character:
// encoding/json would turn it into U+FFFD, changing the value unseen.
func unquote(dst, s []byte) ([]byte, string) {
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			return append(dst, s...), ""
		}
		dst = append(dst, s[:i]...)
		if s = s[i:]; len(s) < 2 {
			return dst, "has a broken escape"
		}
		c := s[1]
		switch c {
		case '"', '\\', '/':
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			r, ok := hex4(s[2:])
			if !ok {
				return dst, "has a broken escape"
			}
			s = s[6:]
			if utf16.IsSurrogate(r) {
				low := rune(-1)
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					low, _ = hex4(s[2:])
				}
				pair := utf16.DecodeRune(r, low)
				if pair == utf8.RuneError {
					return dst, fmt.Sprintf(`holds an unpaired surrogate escape \u%04x, which is no character`, r)
				}
				r = pair
				s = s[6:]
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, "has a broken escape"
		}
		dst = append(dst, c)
		s = s[2:]
	}
	return dst, ""
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// showJSON renders a JSON value as sent for a reason: secrets masked by r,
// then cut to a readable length, on one line, invalid UTF-8 shown as
// U+FFFD.
func showJSON(r *redact.Redactor, v []byte) string {
	s := string(v)
	if r != nil {
		s = r.String(s)
	}
	cut := ""
	if len(s) > showMax {
		s, cut = redact.Cut(s, showMax), "..."
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s) + cut
}
