package filter

import (
	"strconv"
	"strings"
	"time"
)

// format renders the tree. The readable form puts one space between tokens
// except inside parentheses and brackets; the compact form puts a space only
// between two words (names, keywords, numbers, dates), where the lexer needs
// one, and so is never longer than any text that parses to the same tree.
func format(n node, compact bool) string {
	w := writer{compact: compact}
	w.node(n, false)
	return w.b.String()
}

type writer struct {
	b        strings.Builder
	compact  bool
	prev     string // the previous token
	prevWord bool
}

// tok writes one token; word says whether it is a name, keyword, number or
// unquoted date.
func (w *writer) tok(s string, word bool) {
	if w.b.Len() > 0 {
		space := word && w.prevWord
		if !w.compact {
			space = w.prev != "(" && w.prev != "[" && s != ")" && s != "[" && s != "]"
		}
		if space {
			w.b.WriteByte(' ')
		}
	}
	w.b.WriteString(s)
	w.prev, w.prevWord = s, word
}

func (w *writer) node(n node, inAnd bool) {
	switch n := n.(type) {
	case *orNode:
		if inAnd {
			w.tok("(", false)
		}
		for i, k := range n.kids {
			if i > 0 {
				w.tok("OR", true)
			}
			w.node(k, false)
		}
		if inAnd {
			w.tok(")", false)
		}
	case *andNode:
		for i, k := range n.kids {
			if i > 0 {
				w.tok("AND", true)
			}
			w.node(k, true)
		}
	case *cond:
		w.cond(n)
	}
}

func (w *writer) cond(c *cond) {
	w.tok(c.field, true)
	if c.index > 0 {
		w.tok("[", false)
		w.tok(strconv.Itoa(c.index), true)
		w.tok("]", false)
	}
	switch c.op {
	case opLike:
		w.tok("LIKE", true)
	case opNotLike:
		w.tok("NOT", true)
		w.tok("LIKE", true)
	default:
		w.tok(c.op.String(), false)
	}
	switch c.cat {
	case catInt:
		w.tok(strconv.FormatInt(c.i, 10), true)
	case catNum:
		w.tok(strconv.FormatFloat(c.f, 'f', -1, 64), true)
	case catText:
		w.tok(quote(c.s), false)
	case catBool:
		w.tok(strconv.FormatBool(c.b), true)
	case catTime, catDate:
		layout := dateTimeLayout
		if c.date || c.cat == catDate {
			layout = dateLayout
		}
		w.tok(time.Unix(c.i, 0).UTC().Format(layout), true)
	}
}

// quote writes s as a string literal in the quote that needs fewer escapes,
// single quotes on a tie.
func quote(s string) string {
	q := byte('\'')
	if strings.Count(s, "'") > strings.Count(s, `"`) {
		q = '"'
	}
	b := make([]byte, 0, len(s)+2)
	b = append(b, q)
	for i := 0; i < len(s); i++ {
		if s[i] == q || s[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(append(b, q))
}
