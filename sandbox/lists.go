package sandbox

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/filter"
)

// rowSet is the rows of a list endpoint before filtering, ordering and
// paging, in their generation order: descending by the field order, ties in
// increasing id. Streamed lists (links, ref-domains, ref-ips, matrix)
// generate rows in that order on demand, so their default order costs no
// sort and no memory; bounded tables (pages, anchors, score profile,
// competitors, comparison) are built whole, already in that order.
type rowSet struct {
	n int64
	// order is the field the rows come in, descending; "" when the rows
	// come in no field's order (comparison: the order of the urls).
	order string
	// open returns a cursor whose first row is the k-th (0-based) in
	// generation order (dir 1) or counted from the end (dir -1).
	open func(k int64, dir int64) cursor
	// load makes row id current (random access).
	load func(id int64)
	// cols gives, for every row field, its value in the current row.
	cols map[string]func() value
}

// cursor walks a rowSet.
type cursor interface {
	// next makes the next row current and returns its id; ids grow in
	// generation order. ok is false past the last row.
	next() (id int64, ok bool)
}

// Bounds of sorting in memory, for an order_by other than the rows' own
// order: the sandbox keeps a (key, id) pair per row that passes the filter,
// 16 bytes for a number, date or boolean, a string for text.
const (
	maxSortRows     = 2_000_000
	maxSortTextRows = 250_000
)

// rowPage is a page of a rowSet as the request asks for it.
type rowPage struct {
	total int64 // rows that pass the filter
	rows  int64 // rows of the page
	// load makes the i-th row of the page current; it is called for i = 0,
	// 1, 2 ... in order.
	load func(i int64)
}

// page applies the request's filter, order and paging to rs.
func (q *request) page(rs *rowSet) (*rowPage, *apiError) {
	offset, limit := q.offset(), q.limitOr(rs.n)
	field, desc := q.order(rs.order)
	match := q.matcher(rs)

	if field == rs.order {
		dir := int64(1)
		if !desc {
			dir = -1
		}
		if match == nil {
			total := rs.n
			l := &rowPage{total: total, rows: pageRows(total, offset, limit)}
			if l.rows > 0 {
				cur := rs.open(offset, dir)
				l.load = func(int64) { cur.next() }
			}
			return l, nil
		}
		// Count every match; remember where the page starts.
		var total, start int64
		cur := rs.open(0, dir)
		for k := int64(0); ; k++ {
			if _, ok := cur.next(); !ok {
				break
			}
			if match() {
				if total == offset {
					start = k
				}
				total++
			}
		}
		l := &rowPage{total: total, rows: pageRows(total, offset, limit)}
		if l.rows > 0 {
			cur := rs.open(start, dir)
			l.load = func(int64) {
				for {
					if _, ok := cur.next(); !ok || match() {
						return
					}
				}
			}
		}
		return l, nil
	}

	ids, aerr := q.sorted(rs, field, desc, match)
	if aerr != nil {
		return nil, aerr
	}
	total := int64(len(ids))
	l := &rowPage{total: total, rows: pageRows(total, offset, limit)}
	l.load = func(i int64) { rs.load(ids[offset+i]) }
	return l, nil
}

// pageRows is the number of rows of a page at offset of at most limit rows.
func pageRows(total, offset, limit int64) int64 {
	if offset >= total {
		return 0
	}
	return min(total-offset, limit)
}

// matcher returns a function reporting whether the current row passes the
// filter, or nil when there is none.
func (q *request) matcher(rs *rowSet) func() bool {
	if q.filter == nil {
		return nil
	}
	row := filter.Row(func(field string, _ int) filter.Value {
		f, ok := rs.cols[field]
		if !ok {
			return filter.Value{Null: true}
		}
		return f().filterValue()
	})
	return func() bool { return q.filter.Match(row) }
}

// sorted returns the ids of the rows that pass match, ordered by field
// (ties: ids ascending when desc, descending otherwise, so that ASC is
// exactly the reverse of DESC).
func (q *request) sorted(rs *rowSet, field string, desc bool, match func() bool) ([]int64, *apiError) {
	col := rs.cols[field]
	f, _ := q.ep.Field(field)
	text := f.Kind == catalog.Text
	bound := int64(maxSortRows)
	if text {
		bound = maxSortTextRows
	}
	tooMany := func() *apiError {
		return invalidf("order_by", "the sandbox sorts at most %d rows in memory for order_by=%s (a %s field) "+
			"and this request has more after the filter; order by %s (the rows' own order, streamed without sorting) "+
			"or narrow the rows with a filter", bound, field, f.Kind, rs.order)
	}
	type numKey struct{ key, id int64 }
	type textKey struct {
		key string
		id  int64
	}
	var nums []numKey
	var texts []textKey
	cur := rs.open(0, 1)
	var n int64
	for {
		id, ok := cur.next()
		if !ok {
			break
		}
		if match != nil && !match() {
			continue
		}
		if n++; n > bound {
			return nil, tooMany()
		}
		v := col()
		switch {
		case text:
			texts = append(texts, textKey{v.s, id})
		case v.kind == catalog.Bool:
			k := int64(0)
			if v.b {
				k = 1
			}
			nums = append(nums, numKey{k, id})
		default:
			nums = append(nums, numKey{v.i, id})
		}
	}
	sign := 1
	if desc {
		sign = -1
	}
	ids := make([]int64, 0, n)
	if text {
		slices.SortFunc(texts, func(a, b textKey) int {
			if c := cmp.Compare(a.key, b.key); c != 0 {
				return sign * c
			}
			return -sign * cmp.Compare(a.id, b.id)
		})
		for _, t := range texts {
			ids = append(ids, t.id)
		}
		return ids, nil
	}
	slices.SortFunc(nums, func(a, b numKey) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return sign * c
		}
		return -sign * cmp.Compare(a.id, b.id)
	})
	for _, k := range nums {
		ids = append(ids, k.id)
	}
	return ids, nil
}

// tableCursor walks rows 0..n-1 of a table.
type tableCursor struct {
	i, n, dir int64
	load      func(id int64)
}

func (c *tableCursor) next() (int64, bool) {
	if c.i < 0 || c.i >= c.n {
		return 0, false
	}
	id := c.i
	c.load(id)
	c.i += c.dir
	return id, true
}

// tableRows is a rowSet over a table of n rows already in generation order,
// where load makes row id current.
func tableRows(n int64, order string, load func(id int64), cols map[string]func() value) *rowSet {
	return &rowSet{
		n: n, order: order, load: load, cols: cols,
		open: func(k, dir int64) cursor {
			start := k
			if dir < 0 {
				start = n - 1 - k
			}
			return &tableCursor{i: start, n: n, dir: dir, load: load}
		},
	}
}

// listAnswer turns a page of rs into an answer with the endpoint's echoes.
func (q *request) listAnswer(rs *rowSet, echoes func(total int64) []echo) (*answer, *apiError) {
	l, aerr := q.page(rs)
	if aerr != nil {
		return nil, aerr
	}
	return &answer{echoes: echoes(l.total), rows: l.rows, load: l.load, cols: rs.cols}, nil
}

// listEchoes are the meta echoes of a list endpoint (catalog Echoes): each
// name the endpoint echoes, from the request.
func (q *request) listEchoes(total int64, values map[string]any) []echo {
	names := q.ep.Echoes
	if names == nil {
		names = defaultListEchoes
	}
	if _, ok := q.ep.Param("filter"); ok && !slices.Contains(names, "filter") {
		// Matrix lists no filter among its echoes (spec 2.12), but a
		// filtered total is only readable knowing the filter.
		names = append(slices.Clone(names), "filter")
	}
	out := make([]echo, 0, len(names))
	for _, name := range names {
		switch name {
		case "total":
			out = append(out, echo{name, total})
		case "direction":
			out = append(out, echo{name, q.get("direction")})
		case "order_by":
			field, _ := q.order(q.ep.DefaultOrder)
			out = append(out, echo{name, field})
		case "limit":
			out = append(out, echo{name, q.limitOr(0)})
		case "offset":
			out = append(out, echo{name, q.offset()})
		case "filter":
			if q.has("filter") {
				out = append(out, echo{name, q.get("filter")})
			} else {
				out = append(out, echo{name, nil})
			}
		default:
			v, ok := values[name]
			if !ok {
				panic(fmt.Sprintf("sandbox: no value for the echo %s of %s", name, q.ep.Name))
			}
			out = append(out, echo{name, v})
		}
	}
	return out
}

// defaultListEchoes are the echoes of the list endpoints whose echoes the
// spec does not list (ref-ips, pages, anchors): those of links (spec 2.4),
// which take the same parameters. Without total a client could not page.
var defaultListEchoes = []string{"direction", "effective_url", "filter", "limit", "offset", "order_by", "scope", "total", "url"}
