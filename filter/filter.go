package filter

import (
	"fmt"
	"unicode/utf8"

	"github.com/seoetl/etl/catalog"
)

// Bounds of an expression, so that no input can make the parser (or the
// evaluator, or String) use much memory or a deep stack.
const (
	// MaxLen is the longest expression Parse accepts, in bytes.
	MaxLen = 4096
	// MaxDepth is how deeply parentheses may nest.
	MaxDepth = 64
)

// Error is a problem with a filter expression: where it is and what was
// expected there.
type Error struct {
	// Pos is the 1-based column of the problem in the expression, counted in
	// characters (runes; a byte that is not UTF-8 counts as one).
	Pos int
	// Msg says what is wrong and what was expected.
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("filter: at column %d: %s", e.Pos, e.Msg) }

// errAt makes an Error at byte offset off of src.
func errAt(src string, off int, format string, args ...any) *Error {
	return &Error{Pos: utf8.RuneCountInString(src[:off]) + 1, Msg: fmt.Sprintf(format, args...)}
}

// Value is one field value of a row, as the evaluator reads it. Which member
// holds the value depends on the field's catalog kind:
//
//	Int, IntString   Int
//	Float, DecString Float
//	Text             Str
//	Bool             Bool
//	Timestamp, Date  Time (seconds since 1970-01-01T00:00:00 UTC; a date is
//	                 its midnight UTC)
//	IntList          Int for the element asked for, or the whole list in Ints
//
// Null marks a missing value; a NULL field satisfies no condition.
type Value struct {
	Null  bool
	Bool  bool
	Int   int64
	Float float64
	Str   string
	Time  int64
	Ints  []int64
}

// Row gives the value of a field of the row being filtered. field is always
// one of Expr.Fields, spelled as in the catalog; index is 0 except for
// backlinks_counts[n] on matrix, where it is n (1 for the first target).
// Match calls it once per condition it evaluates, in the order written.
// For an indexed field the Row answers either the n-th element in Int (Null
// when the row has fewer than n targets) or the whole list in Ints, from
// which Match takes element n itself (a list shorter than n makes the
// condition false). Match reads Ints whenever it is not nil.
type Row func(field string, index int) Value

// Expr is a parsed filter expression: the tree of conditions with every field
// name resolved against the endpoint and every literal converted to the
// field's type, ready to be matched against rows. It is immutable and safe
// for concurrent use. A nil *Expr is the absent filter: it matches every
// row and prints as "".
type Expr struct {
	ep    *catalog.Endpoint
	src   string // the text parsed, for the columns of later messages
	root  node
	match matcher
}

// Parse parses expr as a filter of the rows of ep and checks every field
// and literal against the catalog. Any error is an *Error. Parse does not
// check whether ep takes a filter parameter at all (competitors and keyword
// metrics do not): that belongs to whoever builds the request. It panics if
// ep is nil.
func Parse(expr string, ep *catalog.Endpoint) (*Expr, error) {
	if ep == nil {
		panic("filter: Parse with a nil endpoint")
	}
	root, err := parse(expr, ep)
	if err != nil {
		return nil, err
	}
	return &Expr{ep: ep, src: expr, root: root, match: compile(root)}, nil
}

// Endpoint is the endpoint whose rows the expression filters.
func (e *Expr) Endpoint() *catalog.Endpoint {
	if e == nil {
		return nil
	}
	return e.ep
}

// Match reports whether the row satisfies the expression. It allocates
// nothing and makes one call of row per condition it evaluates (AND and OR
// stop early). A condition on a NULL value is false, whatever its operator.
func (e *Expr) Match(row Row) bool {
	if e == nil {
		return true
	}
	return e.match(row)
}

// Fields returns the fields the expression names, each once, in order of
// first appearance; backlinks_counts[n] counts as backlinks_counts.
func (e *Expr) Fields() []string {
	if e == nil {
		return nil
	}
	var names []string
	walk(e.root, func(c *cond) {
		for _, n := range names {
			if n == c.field {
				return
			}
		}
		names = append(names, c.field)
	})
	return names
}

// MaxTarget returns the largest n of the backlinks_counts[n] the expression
// names, or 0 when it names none.
func (e *Expr) MaxTarget() int {
	n := 0
	if e != nil {
		walk(e.root, func(c *cond) { n = max(n, c.index) })
	}
	return n
}

// CheckTargets checks the expression against a request with targets targets
// (the number of urls of a matrix request): an error, an *Error at the
// offending index, when it names backlinks_counts[n] with n > targets. Parse
// already rejects n below 1 and above the most targets the endpoint takes.
func (e *Expr) CheckTargets(targets int) error {
	var bad *cond
	if e != nil {
		walk(e.root, func(c *cond) {
			if bad == nil && c.index > targets {
				bad = c
			}
		})
	}
	if bad == nil {
		return nil
	}
	return errAt(e.src, bad.indexOff, "%s[%d] addresses target %d but the request has %d; expected an index from 1 to %d",
		bad.field, bad.index, bad.index, targets, targets)
}

// String returns the canonical form of the expression: keywords in upper
// case, != for <>, one space around operators and keywords, parentheses only
// where AND binds tighter than OR would have it otherwise, numbers and dates
// in their shortest form, strings in whichever quote needs fewer escapes
// (single on a tie). Parse(e.String()) gives an equal expression with the
// same String. Should the canonical form be longer than MaxLen (an input
// near the bound written without spaces), String drops every space that is
// not needed between two words; that form is never longer than the text it
// was parsed from, so it always parses again.
func (e *Expr) String() string {
	if e == nil {
		return ""
	}
	if s := format(e.root, false); len(s) <= MaxLen {
		return s
	}
	return format(e.root, true)
}

// walk calls f on every condition of the tree, left to right.
func walk(n node, f func(*cond)) {
	switch n := n.(type) {
	case *cond:
		f(n)
	case *andNode:
		for _, k := range n.kids {
			walk(k, f)
		}
	case *orNode:
		for _, k := range n.kids {
			walk(k, f)
		}
	}
}
