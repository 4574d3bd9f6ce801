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

// node is a node of the parsed and compiled expression.
type node interface {
	match(Row) bool
}

// andNode holds two or more nodes, none of them an andNode.
type andNode struct{ kids []node }

// orNode holds two or more nodes, none of them an orNode.
type orNode struct{ kids []node }

func (n *andNode) match(r Row) bool {
	for _, k := range n.kids {
		if !k.match(r) {
			return false
		}
	}
	return true
}

func (n *orNode) match(r Row) bool {
	for _, k := range n.kids {
		if k.match(r) {
			return true
		}
	}
	return false
}

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

	// Columns for messages after parsing; not part of the expression's value.
	pos      int // the field
	indexPos int // the index of backlinks_counts[n]
}

func (c *cond) match(r Row) bool {
	v := r(c.field, c.index)
	if v.Null {
		return false
	}
	switch c.cat {
	case catInt:
		x := v.Int
		if v.Ints != nil && c.index > 0 {
			if c.index > len(v.Ints) {
				return false
			}
			x = v.Ints[c.index-1]
		}
		return compare(c.op, x, c.i)
	case catNum:
		return compare(c.op, v.Float, c.f)
	case catText:
		switch c.op {
		case opLike:
			return c.like.match(v.Str)
		case opNotLike:
			return !c.like.match(v.Str)
		}
		return compare(c.op, v.Str, c.s)
	case catBool:
		return (v.Bool == c.b) == (c.op == opEq)
	case catTime, catDate:
		return compare(c.op, v.Time, c.i)
	}
	return false
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
