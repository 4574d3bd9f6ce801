package filter

import (
	"cmp"
	"strings"
)

// op is a comparison operator.
type op uint8

const (
	opEq op = iota + 1
	opNe
	opLt
	opLe
	opGt
	opGe
	opLike
	opNotLike
)

var opText = [...]string{opEq: "=", opNe: "!=", opLt: "<", opLe: "<=", opGt: ">", opGe: ">=", opLike: "LIKE", opNotLike: "NOT LIKE"}

func (o op) String() string { return opText[o] }

// category is how a field's values compare; several catalog kinds share one.
type category uint8

const (
	catInt  category = iota + 1 // Int, IntString, an element of IntList: Value.Int
	catNum                      // Float, DecString: Value.Float
	catText                     // Text: Value.Str
	catBool                     // Bool: Value.Bool
	catTime                     // Timestamp: Value.Time
	catDate                     // Date: Value.Time
)

// node is a node of the parsed expression: *andNode, *orNode or *cond. The
// tree is what String and Fields read; Match runs the closures compile makes
// of it.
type node interface{ isNode() }

// andNode holds two or more nodes, none of them an andNode.
type andNode struct{ kids []node }

// orNode holds two or more nodes, none of them an orNode.
type orNode struct{ kids []node }

// cond is one condition, field op literal, with the literal converted to the
// field's category once at parse time.
type cond struct {
	field string
	index int // n of backlinks_counts[n]; 0 for a scalar field
	cat   category
	op    op
	i     int64   // catInt; seconds since the epoch for catTime and catDate
	f     float64 // catNum
	s     string  // catText: the string, or the LIKE pattern
	b     bool    // catBool
	date  bool    // catTime: the literal was a date (printed as one)
	like  pattern // opLike, opNotLike

	// indexOff is the byte offset of n in backlinks_counts[n], for
	// CheckTargets' message; not part of the expression's value.
	indexOff int
}

func (*andNode) isNode() {}
func (*orNode) isNode()  {}
func (*cond) isNode()    {}

// matcher is a compiled node.
type matcher func(Row) bool

// compile turns the tree into closures that hold the field name and the
// converted literal of each condition, so matching a row is a few direct
// calls: no interface dispatch, no lookup, no allocation.
func compile(n node) matcher {
	switch n := n.(type) {
	case *andNode:
		ks := compileAll(n.kids)
		if len(ks) == 2 {
			a, b := ks[0], ks[1]
			return func(r Row) bool { return a(r) && b(r) }
		}
		return func(r Row) bool {
			for _, k := range ks {
				if !k(r) {
					return false
				}
			}
			return true
		}
	case *orNode:
		ks := compileAll(n.kids)
		if len(ks) == 2 {
			a, b := ks[0], ks[1]
			return func(r Row) bool { return a(r) || b(r) }
		}
		return func(r Row) bool {
			for _, k := range ks {
				if k(r) {
					return true
				}
			}
			return false
		}
	case *cond:
		return n.compile()
	}
	panic("filter: unknown node")
}

func compileAll(nodes []node) []matcher {
	ms := make([]matcher, len(nodes))
	for i, n := range nodes {
		ms[i] = compile(n)
	}
	return ms
}

// compile makes the closure of one condition; each reads one value and
// is false on NULL.
func (c *cond) compile() matcher {
	field, o := c.field, c.op
	switch c.cat {
	case catInt:
		lit := c.i
		if n := c.index; n > 0 {
			return func(r Row) bool {
				v := r(field, n)
				if v.Null {
					return false
				}
				x := v.Int
				if v.Ints != nil {
					if n > len(v.Ints) {
						return false
					}
					x = v.Ints[n-1]
				}
				return compare(o, x, lit)
			}
		}
		return func(r Row) bool { v := r(field, 0); return !v.Null && compare(o, v.Int, lit) }
	case catNum:
		lit := c.f
		return func(r Row) bool { v := r(field, 0); return !v.Null && compare(o, v.Float, lit) }
	case catText:
		switch p := c.like; o {
		case opLike:
			return func(r Row) bool { v := r(field, 0); return !v.Null && p.match(v.Str) }
		case opNotLike:
			return func(r Row) bool { v := r(field, 0); return !v.Null && !p.match(v.Str) }
		}
		lit := c.s
		return func(r Row) bool { v := r(field, 0); return !v.Null && compare(o, v.Str, lit) }
	case catBool:
		want := c.b == (o == opEq) // = true and != false both want true
		return func(r Row) bool { v := r(field, 0); return !v.Null && v.Bool == want }
	case catTime, catDate:
		lit := c.i
		return func(r Row) bool { v := r(field, 0); return !v.Null && compare(o, v.Time, lit) }
	}
	panic("filter: condition of no category")
}

func compare[T cmp.Ordered](o op, a, b T) bool {
	switch o {
	case opEq:
		return a == b
	case opNe:
		return a != b
	case opLt:
		return a < b
	case opLe:
		return a <= b
	case opGt:
		return a > b
	case opGe:
		return a >= b
	}
	return false
}

// pattern is a compiled LIKE pattern: '%' matches any run of bytes, every
// other byte matches itself.
type pattern struct {
	exact  bool     // no '%': the pattern is the whole string (prefix)
	prefix string   // before the first '%'
	suffix string   // after the last '%'
	middle []string // the non-empty pieces between, in order
}

func compileLike(p string) pattern {
	parts := strings.Split(p, "%")
	if len(parts) == 1 {
		return pattern{exact: true, prefix: p}
	}
	c := pattern{prefix: parts[0], suffix: parts[len(parts)-1]}
	for _, m := range parts[1 : len(parts)-1] {
		if m != "" {
			c.middle = append(c.middle, m)
		}
	}
	return c
}

// match anchors the prefix and the suffix and finds each middle piece at its
// leftmost place after the previous one; with '%' as the only wildcard the
// leftmost place is never worse than a later one, so no backtracking is
// needed.
func (p *pattern) match(s string) bool {
	if p.exact {
		return s == p.prefix
	}
	if len(s) < len(p.prefix)+len(p.suffix) || !strings.HasPrefix(s, p.prefix) || !strings.HasSuffix(s, p.suffix) {
		return false
	}
	s = s[len(p.prefix) : len(s)-len(p.suffix)]
	for _, m := range p.middle {
		i := strings.Index(s, m)
		if i < 0 {
			return false
		}
		s = s[i+len(m):]
	}
	return true
}
