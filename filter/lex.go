package filter

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// tokKind is the kind of a token of the filter language.
type tokKind uint8

const (
	tEOF      tokKind = iota
	tIdent            // a name that is not a keyword: a field, or a mistake
	tAnd              // AND, any case
	tOr               // OR
	tNot              // NOT (only in NOT LIKE)
	tLike             // LIKE
	tTrue             // true
	tFalse            // false
	tInt              // -?digits
	tDecimal          // -?digits.digits
	tDate             // YYYY-MM-DD, unquoted
	tDateTime         // YYYY-MM-DDTHH:MM:SS[Z], unquoted
	tString           // '...' or "..."
	tOp               // a comparison operator
	tLParen           // (
	tRParen           // )
	tLBrack           // [
	tRBrack           // ]
	tOther            // any other character
)

// token is one token; pos and end are byte offsets into the expression.
type token struct {
	kind tokKind
	pos  int
	end  int
	text string // the source text of the token
	str  string // tString: the value, escapes resolved
	op   op     // tOp
	unix int64  // tDate, tDateTime: seconds since the epoch, UTC
}

const (
	dateLayout     = "2006-01-02"
	dateTimeLayout = "2006-01-02T15:04:05"
)

// lexer cuts the expression into tokens on demand, so the parser reports the
// leftmost problem whether it is lexical or grammatical. It is a value: the
// parser copies it to look ahead.
type lexer struct {
	src string
	off int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isRunByte reports whether c continues a number or an unquoted date. The
// run is wider than any valid literal so that "50AND", "1e5" or
// "2026-01-15T10:00:00+02:00" are one bad literal with a clear message rather
// than a puzzling sequence of tokens, and so that two words never touch.
func isRunByte(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '.' || c == ':' || c == '-' || c == '+'
}

var bracketKinds = [256]tokKind{'(': tLParen, ')': tRParen, '[': tLBrack, ']': tRBrack}

var keywords = map[string]tokKind{
	"AND": tAnd, "OR": tOr, "NOT": tNot, "LIKE": tLike, "TRUE": tTrue, "FALSE": tFalse,
}

// next returns the next token, or an error for a malformed string or literal.
func (l *lexer) next() (token, *Error) {
	for l.off < len(l.src) && isSpace(l.src[l.off]) {
		l.off++
	}
	start := l.off
	if start == len(l.src) {
		return token{kind: tEOF, pos: start, end: start}, nil
	}
	c := l.src[start]
	tok := token{pos: start}
	switch {
	case isLetter(c):
		i := start + 1
		for i < len(l.src) && (isLetter(l.src[i]) || isDigit(l.src[i])) {
			i++
		}
		tok.kind = tIdent
		tok.text = l.src[start:i]
		if len(tok.text) <= len("FALSE") {
			if k, ok := keywords[strings.ToUpper(tok.text)]; ok {
				tok.kind = k
			}
		}
		l.off = i
	case isDigit(c) || c == '-' && start+1 < len(l.src) && isDigit(l.src[start+1]):
		i := start + 1
		for i < len(l.src) && isRunByte(l.src[i]) {
			i++
		}
		l.off = i
		tok.text = l.src[start:i]
		if err := l.literal(&tok); err != nil {
			return token{}, err
		}
	case c == '.' && start+1 < len(l.src) && isDigit(l.src[start+1]):
		return token{}, errAt(l.src, start, "a number must start with a digit; expected 0%s", runText(l.src, start))
	case c == '\'' || c == '"':
		if err := l.quoted(&tok); err != nil {
			return token{}, err
		}
	case c == '(' || c == ')' || c == '[' || c == ']':
		tok.kind = bracketKinds[c]
		tok.text = l.src[start : start+1]
		l.off++
	default:
		if o, n := scanOp(l.src[start:]); n > 0 {
			tok.kind, tok.op = tOp, o
			tok.text = l.src[start : start+n]
			l.off += n
			break
		}
		_, n := utf8.DecodeRuneInString(l.src[start:])
		tok.kind = tOther
		tok.text = l.src[start : start+n]
		l.off += n
	}
	tok.end = l.off
	return tok, nil
}

// runText is the text of the number-like run at off, for messages.
func runText(src string, off int) string {
	i := off + 1
	for i < len(src) && isRunByte(src[i]) {
		i++
	}
	return src[off:i]
}

// scanOp reads a comparison operator at the start of s.
func scanOp(s string) (op, int) {
	two := ""
	if len(s) >= 2 {
		two = s[:2]
	}
	switch two {
	case "!=", "<>":
		return opNe, 2
	case "<=":
		return opLe, 2
	case ">=":
		return opGe, 2
	}
	switch s[0] {
	case '=':
		return opEq, 1
	case '<':
		return opLt, 1
	case '>':
		return opGt, 1
	}
	return 0, 0
}

// literal classifies the run in tok.text as an integer, a decimal, a date or
// a date-time.
func (l *lexer) literal(tok *token) *Error {
	s := tok.text
	switch {
	case isInteger(s):
		tok.kind = tInt
		return nil
	case isDecimal(s):
		tok.kind = tDecimal
		return nil
	}
	kind, unix, msg := parseDate(s, false)
	if msg != "" {
		return errAt(l.src, tok.pos, "%s", msg)
	}
	if kind == 0 {
		if i := strings.IndexFunc(s, func(r rune) bool { return r < utf8.RuneSelf && isLetter(byte(r)) }); i > 0 &&
			(isInteger(s[:i]) || isDecimal(s[:i])) {
			if rest := strings.TrimLeft(s[i+1:], "+-"); (s[i] == 'e' || s[i] == 'E') && isInteger(rest) && rest[0] != '-' {
				return errAt(l.src, tok.pos, "invalid number %s; expected digits only, as in 0.00015 or 150000 (no exponents)", s)
			}
			return errAt(l.src, tok.pos, "invalid value %s; expected a space between %s and %s", s, s[:i], s[i:])
		}
		return errAt(l.src, tok.pos, "invalid value %s; expected an integer (42), a decimal (0.5), "+
			"a date (2026-01-15) or a date-time (2026-01-15T10:00:00)", s)
	}
	tok.kind, tok.unix = kind, unix
	return nil
}

func isInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func isDecimal(s string) bool {
	whole, frac, ok := strings.Cut(s, ".")
	return ok && isInteger(whole) && whole != "-" && frac != "" && isInteger(frac) && frac[0] != '-'
}

// shape reports whether s matches pattern, where '9' stands for a digit and
// any other byte for itself.
func shape(s, pattern string) bool {
	if len(s) != len(pattern) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if pattern[i] == '9' {
			if !isDigit(s[i]) {
				return false
			}
		} else if s[i] != pattern[i] {
			return false
		}
	}
	return true
}

// parseDate reads a date (YYYY-MM-DD) or a date-time (YYYY-MM-DDTHH:MM:SS
// with an optional Z; in a quoted string also with a space for the T). It
// returns kind 0 and no message when s does not look like one at all, and a
// message when it does but is not a real day or time or carries an offset.
func parseDate(s string, quoted bool) (kind tokKind, unix int64, msg string) {
	layout := ""
	switch {
	case shape(s, "9999-99-99"):
		kind, layout = tDate, dateLayout
	case shape(s, "9999-99-99T99:99:99"), shape(s, "9999-99-99T99:99:99Z"):
		kind, layout = tDateTime, dateTimeLayout
		s = strings.TrimSuffix(s, "Z")
	case quoted && shape(s, "9999-99-99 99:99:99"):
		kind, layout = tDateTime, dateTimeLayout
		s = s[:10] + "T" + s[11:]
	case len(s) > 19 && shape(s[:19], "9999-99-99T99:99:99"):
		return 0, 0, fmt.Sprintf("invalid date-time %s; times are UTC: expected %s or %sZ without an offset", s, s[:19], s[:19])
	default:
		return 0, 0, ""
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		if kind == tDate {
			return 0, 0, fmt.Sprintf("invalid date %s: no such day; expected a real date such as 2026-01-15", s)
		}
		return 0, 0, fmt.Sprintf("invalid date-time %s: no such day or time; expected a real one such as 2026-01-15T10:00:00", s)
	}
	return kind, t.Unix(), ""
}

// quoted reads a string in single or double quotes, where only the quote
// character itself and the backslash are escaped with a backslash.
func (l *lexer) quoted(tok *token) *Error {
	src, start := l.src, l.off
	q := src[start]
	var b []byte // nil until the first escape
	from := start + 1
	for i := start + 1; i < len(src); {
		switch c := src[i]; c {
		case q:
			tok.kind = tString
			if b == nil {
				tok.str = src[from:i]
			} else {
				tok.str = string(append(b, src[from:i]...))
			}
			l.off = i + 1
			tok.text = src[start:l.off]
			return nil
		case '\\':
			if i+1 == len(src) {
				return errAt(src, start, "unterminated string; expected a closing %c for the string that starts here", q)
			}
			if e := src[i+1]; e != q && e != '\\' {
				r, _ := utf8.DecodeRuneInString(src[i+1:])
				return errAt(src, i, "invalid escape \\%c in a string quoted with %c; expected \\%c or \\\\, the only escapes", r, q, q)
			}
			b = append(b, src[from:i]...)
			b = append(b, src[i+1])
			i += 2
			from = i
		default:
			i++
		}
	}
	return errAt(src, start, "unterminated string; expected a closing %c for the string that starts here", q)
}
