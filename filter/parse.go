package filter

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/suggest"
)

// parser is a recursive-descent parser over the grammar in doc.go, one token
// of lookahead, that type-checks each condition as it reads it.
type parser struct {
	src   string
	ep    *catalog.Endpoint
	lx    lexer
	tok   token // the current token, not yet consumed
	depth int   // parentheses open around the current token
}

func parse(src string, ep *catalog.Endpoint) (node, error) {
	if len(src) > MaxLen {
		return nil, errAt(src, MaxLen, "expression too long: %d bytes; expected at most %d", len(src), MaxLen)
	}
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRuneInString(src[i:])
		if r == utf8.RuneError && n == 1 {
			return nil, errAt(src, i, "invalid UTF-8 (byte 0x%02x); expected UTF-8 text", src[i])
		}
		i += n
	}
	p := &parser{src: src, ep: ep, lx: lexer{src: src}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tEOF {
		return nil, errAt(src, 0, "empty expression; expected a condition such as %s", example(ep))
	}
	root, err := p.or("")
	if err != nil {
		return nil, err
	}
	switch p.tok.kind {
	case tEOF:
		return root, nil
	case tRParen:
		return nil, p.errorf(p.tok, `unbalanced ")": there is no "(" to close; expected AND, OR or the end of the expression`)
	}
	return nil, p.errorf(p.tok, "expected AND, OR or the end of the expression after a condition, got %s", describe(p.tok))
}

// advance moves to the next token.
func (p *parser) advance() error {
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) errorf(at token, format string, args ...any) error {
	return errAt(p.src, at.pos, format, args...)
}

func (p *parser) col(t token) int { return utf8.RuneCountInString(p.src[:t.pos]) + 1 }

// or parses conditions joined by OR; after names what came before, for
// messages.
func (p *parser) or(after string) (node, error) {
	var kids []node
	for {
		n, err := p.and(after)
		if err != nil {
			return nil, err
		}
		if o, ok := n.(*orNode); ok {
			kids = append(kids, o.kids...)
		} else {
			kids = append(kids, n)
		}
		if p.tok.kind != tOr {
			break
		}
		after = "OR"
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	return &orNode{kids: kids}, nil
}

// and parses conditions joined by AND.
func (p *parser) and(after string) (node, error) {
	var kids []node
	for {
		n, err := p.primary(after)
		if err != nil {
			return nil, err
		}
		if a, ok := n.(*andNode); ok {
			kids = append(kids, a.kids...)
		} else {
			kids = append(kids, n)
		}
		if p.tok.kind != tAnd {
			break
		}
		after = "AND"
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	return &andNode{kids: kids}, nil
}

// primary parses a condition or a parenthesized expression.
func (p *parser) primary(after string) (node, error) {
	switch p.tok.kind {
	case tIdent:
		return p.condition()
	case tLParen:
		open := p.tok
		if p.depth == MaxDepth {
			return nil, p.errorf(open, "parentheses nested too deeply; expected at most %d levels", MaxDepth)
		}
		p.depth++
		if err := p.advance(); err != nil {
			return nil, err
		}
		n, err := p.or(`"("`)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tRParen {
			return nil, p.errorf(p.tok, `expected AND, OR or ")" to close the "(" at column %d, got %s`, p.col(open), describe(p.tok))
		}
		p.depth--
		return n, p.advance()
	}
	where := ""
	if after != "" {
		where = " after " + after
	}
	return nil, p.errorf(p.tok, `expected a condition (a field name or "(")%s, got %s%s`, where, describe(p.tok), p.leftHint())
}

// leftHint suggests the right way round when the current token is a value
// followed by an operator and a field: "50 < page_score".
func (p *parser) leftHint() string {
	switch p.tok.kind {
	case tInt, tDecimal, tDate, tDateTime, tString, tTrue, tFalse:
	default:
		return ""
	}
	la := p.lx
	o, err := la.next()
	if err != nil || o.kind != tOp {
		return ""
	}
	f, err := la.next()
	if err != nil || f.kind != tIdent {
		return ""
	}
	if _, ok := p.ep.Field(f.text); !ok {
		return ""
	}
	return fmt.Sprintf("; the field goes on the left: %s %s %s", f.text, flipped[o.op], p.tok.text)
}

// condition parses operand operator value, the current token being the
// operand's name.
func (p *parser) condition() (node, error) {
	ft := p.tok
	f, ok := p.ep.Field(ft.text)
	if !ok {
		return nil, p.unknownField(ft)
	}
	targets := maxTargets(p.ep)
	if f.Kind.IsList() && (f.Kind != catalog.IntList || targets == 0) {
		return nil, p.errorf(ft, "%s is a list (%s) and cannot be filtered; expected one of the fields %s", f.Name, f.Kind, fieldList(p.ep))
	}
	c := &cond{field: f.Name, cat: categoryOf(f.Kind)}
	operand := f.Name
	if err := p.advance(); err != nil {
		return nil, err
	}
	if f.Kind == catalog.IntList {
		if err := p.index(c, targets); err != nil {
			return nil, err
		}
		operand = fmt.Sprintf("%s[%d]", f.Name, c.index)
	}

	opTok := p.tok
	switch opTok.kind {
	case tOp:
		c.op = opTok.op
	case tLike:
		c.op = opLike
	case tNot:
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tLike {
			return nil, p.errorf(p.tok, "expected LIKE after NOT (NOT appears only in NOT LIKE), got %s", describe(p.tok))
		}
		c.op = opNotLike
	default:
		return nil, p.errorf(opTok, "expected an operator after %s (%s), got %s", operand, operators(c.cat), describe(opTok))
	}
	opText := opTok.text
	if c.op == opLike || c.op == opNotLike {
		opText = c.op.String()
		if c.cat != catText {
			return nil, p.errorf(opTok, "%s works on string fields only and %s is %s; expected %s",
				opText, operand, fieldDesc[c.cat], operators(c.cat))
		}
	}
	if c.cat == catBool && c.op != opEq && c.op != opNe {
		return nil, p.errorf(opTok, "%s is a boolean field; expected = or != after it, got %q", operand, opText)
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.value(c, operand, opText); err != nil {
		return nil, err
	}
	return c, p.advance()
}

// index parses "[n]" after a per-target list field.
func (p *parser) index(c *cond, targets int) error {
	if p.tok.kind != tLBrack {
		return p.errorf(p.tok, `expected "[" and a target number after %s, as in %s[1] (targets are numbered from 1 to %d), got %s`,
			c.field, c.field, targets, describe(p.tok))
	}
	if err := p.advance(); err != nil {
		return err
	}
	t := p.tok
	if t.kind != tInt {
		return p.errorf(t, `expected a target number from 1 to %d after "[", got %s`, targets, describe(t))
	}
	n, err := strconv.ParseInt(t.text, 10, 64)
	if err != nil || n < 1 || n > int64(targets) {
		return p.errorf(t, "%s[%s] is out of range: targets are numbered from 1; expected a number from 1 to %d (%s takes at most %d targets)",
			c.field, t.text, targets, p.ep.Name, targets)
	}
	c.index, c.indexOff = int(n), t.pos
	if err := p.advance(); err != nil {
		return err
	}
	if p.tok.kind != tRBrack {
		return p.errorf(p.tok, `expected "]" after %s[%d, got %s`, c.field, n, describe(p.tok))
	}
	return p.advance()
}

// value parses the literal after the operator and converts it to the
// field's category.
func (p *parser) value(c *cond, operand, opText string) error {
	t := p.tok
	bad := func() error {
		want := wants(c.cat)
		if c.op == opLike || c.op == opNotLike {
			want = "a quoted pattern"
		}
		return p.errorf(t, "expected %s for %s after %q, got %s%s", want, operand, opText, describe(t), p.valueHint(c, t))
	}
	switch c.cat {
	case catInt:
		if t.kind != tInt {
			return bad()
		}
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return p.errorf(t, "integer %s is out of range; expected one from %d to %d", t.text, int64(math.MinInt64), int64(math.MaxInt64))
		}
		c.i = n
	case catNum:
		if t.kind != tInt && t.kind != tDecimal {
			return bad()
		}
		if d := significantDigits(t.text); d > maxDigits {
			return p.errorf(t, "number %s has %d significant digits; expected at most %d (what a float64 holds exactly)", t.text, d, maxDigits)
		}
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil || f == 0 && significantDigits(t.text) > 0 {
			return p.errorf(t, "number %s is out of range; expected one a float64 can hold", t.text)
		}
		c.f = f
	case catText:
		if t.kind != tString {
			return bad()
		}
		c.s = t.str
		if c.op == opLike || c.op == opNotLike {
			c.like = compileLike(t.str)
		}
	case catBool:
		if t.kind != tTrue && t.kind != tFalse {
			return bad()
		}
		c.b = t.kind == tTrue
	case catTime, catDate:
		kind, unix := t.kind, t.unix
		if t.kind == tString {
			var msg string
			kind, unix, msg = parseDate(t.str, true)
			if msg != "" {
				return p.errorf(t, "%s", msg)
			}
		}
		if kind != tDate && (kind != tDateTime || c.cat == catDate) {
			return bad()
		}
		c.i, c.date = unix, kind == tDate
	}
	return nil
}

// maxDigits is the most significant digits a literal of a number field may
// have: every decimal of 15 digits survives the trip through a float64, so
// the canonical form never needs more digits than were written.
const maxDigits = 15

// significantDigits counts the digits of a number from its first to its last
// non-zero digit.
func significantDigits(s string) int {
	first, last := -1, -1
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			continue
		}
		if s[i] != '0' {
			if first < 0 {
				first = n
			}
			last = n
		}
		n++
	}
	if first < 0 {
		return 0
	}
	return last - first + 1
}

// valueHint explains a common mistake in the value position.
func (p *parser) valueHint(c *cond, t token) string {
	switch t.kind {
	case tIdent:
		if _, ok := p.ep.Field(t.text); ok {
			return " (a field; comparing two fields is not supported)"
		}
		if strings.EqualFold(t.text, "null") {
			return " (there is no NULL literal; a NULL value satisfies no condition)"
		}
		if c.cat == catText {
			return fmt.Sprintf(" (strings need quotes: '%s')", t.text)
		}
	case tString:
		s := t.str
		switch {
		case (c.cat == catInt || c.cat == catNum) && (isInteger(s) || isDecimal(s)):
			return " (numbers are written without quotes)"
		case c.cat == catBool && (strings.EqualFold(s, "true") || strings.EqualFold(s, "false")):
			return " (booleans are written without quotes)"
		}
	}
	return ""
}

// unknownField explains a name that is not a filterable field of the
// endpoint: a field of another endpoint, or a likely typo.
func (p *parser) unknownField(t token) error {
	name := t.text
	hint := ""
	var others []string
	for _, e := range catalog.All() {
		if _, ok := e.Field(name); ok && e.Name != p.ep.Name {
			others = append(others, e.Name)
		}
	}
	if len(others) > 0 {
		hint = fmt.Sprintf("; it is a field of %s, not of %s", strings.Join(others, ", "), p.ep.Name)
	} else if s := closestField(name, p.ep); s != "" {
		hint = fmt.Sprintf("; did you mean %q?", s)
	}
	return p.errorf(t, "unknown field %q of %s%s (fields: %s)", name, p.ep.Name, hint, fieldList(p.ep))
}

// maxTargets is the most targets a request of ep names (its urls parameter's
// bound); the elements of a per-target list field are numbered up to it. It
// is 0 for an endpoint with one target, whose list fields cannot be filtered.
func maxTargets(ep *catalog.Endpoint) int {
	if u, ok := ep.Param("urls"); ok && u.Kind == catalog.PList {
		return u.Max
	}
	return 0
}

// filterable reports whether a field can be named in a filter of ep.
func filterable(ep *catalog.Endpoint, f catalog.Field) bool {
	return !f.Kind.IsList() || f.Kind == catalog.IntList && maxTargets(ep) > 0
}

// fieldList lists the fields a filter of ep can name, for messages.
func fieldList(ep *catalog.Endpoint) string {
	var names []string
	for _, f := range ep.Fields {
		switch {
		case !filterable(ep, f):
		case f.Kind.IsList():
			names = append(names, fmt.Sprintf("%s[1] to %s[%d]", f.Name, f.Name, maxTargets(ep)))
		default:
			names = append(names, f.Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// example is a condition on ep for the empty-expression message.
func example(ep *catalog.Endpoint) string {
	for _, f := range ep.Fields {
		if filterable(ep, f) && !f.Kind.IsList() {
			return f.Name + " " + examples[categoryOf(f.Kind)]
		}
	}
	return "field = value"
}

// closestField returns the filterable field of ep closest to name when it is
// close enough to be a typo, else "".
func closestField(name string, ep *catalog.Endpoint) string {
	var names []string
	for _, f := range ep.Fields {
		if filterable(ep, f) {
			names = append(names, f.Name)
		}
	}
	return suggest.Closest(name, names)
}

// flipped is the operator that keeps a comparison's meaning when its sides
// swap.
var flipped = [...]op{opEq: opEq, opNe: opNe, opLt: opGt, opLe: opGe, opGt: opLt, opGe: opLe}

// examples are a condition's right-hand side per category.
var examples = [...]string{
	catInt: "> 10", catNum: "> 0.5", catText: "LIKE '%seo%'", catBool: "= true",
	catTime: ">= 2026-01-15", catDate: ">= 2026-01-01",
}

// fieldDesc names a field's category for messages.
var fieldDesc = [...]string{
	catInt: "an integer field", catNum: "a number field", catText: "a string field",
	catBool: "a boolean field", catTime: "a timestamp field", catDate: "a date field",
}

func categoryOf(k catalog.Kind) category {
	switch k {
	case catalog.Int, catalog.IntString, catalog.IntList:
		return catInt
	case catalog.Float, catalog.DecString:
		return catNum
	case catalog.Text:
		return catText
	case catalog.Bool:
		return catBool
	case catalog.Timestamp:
		return catTime
	case catalog.Date:
		return catDate
	}
	return 0
}

// wants says what literal a category takes.
func wants(c category) string {
	switch c {
	case catInt:
		return "an integer"
	case catNum:
		return "a number"
	case catText:
		return "a quoted string"
	case catBool:
		return "true or false"
	case catTime:
		return "a date (2026-01-15) or a date-time (2026-01-15T10:00:00)"
	case catDate:
		return "a date (2026-01-15)"
	}
	return "a value"
}

// operators lists the operators a category takes.
func operators(c category) string {
	switch c {
	case catBool:
		return "= or !="
	case catText:
		return "=, !=, <, <=, >, >=, LIKE or NOT LIKE"
	}
	return "=, !=, <, <=, > or >="
}

// describe names a token for messages.
func describe(v token) string {
	switch v.kind {
	case tEOF:
		return "the end of the expression"
	case tIdent:
		return strconv.Quote(v.text)
	case tAnd, tOr, tNot, tLike:
		return strings.ToUpper(v.text)
	case tTrue, tFalse:
		return strings.ToLower(v.text)
	case tInt:
		return "the integer " + v.text
	case tDecimal:
		return "the decimal " + v.text
	case tDate:
		return "the date " + v.text
	case tDateTime:
		return "the date-time " + v.text
	case tString:
		return "the string " + shorten(v.text)
	}
	return strconv.Quote(v.text)
}

// shorten cuts a long source text for a message.
func shorten(s string) string {
	const most = 40
	if utf8.RuneCountInString(s) <= most {
		return s
	}
	n := 0
	for i := range s {
		if n == most-3 {
			return s[:i] + "..."
		}
		n++
	}
	return s
}
