package filter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// endpoint returns the catalog endpoint called name.
func endpoint(t testing.TB, name string) *catalog.Endpoint {
	t.Helper()
	ep, ok := catalog.Lookup(name)
	require.True(t, ok, "no endpoint %q in the catalog", name)
	return ep
}

// row is a test row: a field it does not hold is NULL.
type row map[string]Value

func (r row) get(field string, _ int) Value {
	if v, ok := r[field]; ok {
		return v
	}
	return Value{Null: true}
}

// sameTree compares two parsed expressions, ignoring the columns they were
// read from.
func sameTree(t testing.TB, want, got *Expr) {
	t.Helper()
	diff := cmp.Diff(want.root, got.root,
		cmp.AllowUnexported(cond{}, andNode{}, orNode{}, pattern{}),
		cmpopts.IgnoreFields(cond{}, "indexOff"))
	require.Empty(t, diff, "trees differ (-want +got)")
	require.Same(t, want.ep, got.ep)
}

// requireRoundTrip checks the canonical forms of e, parsed from src: String
// re-parses to an equal tree with the same String, and so does the compact
// form, which is never longer than src.
func requireRoundTrip(t testing.TB, e *Expr, src string) {
	t.Helper()
	s := e.String()
	again, err := Parse(s, e.ep)
	require.NoError(t, err, "canonical form %q of %q", s, src)
	require.Equal(t, s, again.String(), "canonical form of %q", src)
	sameTree(t, e, again)

	c := format(e.root, true)
	require.LessOrEqual(t, len(c), len(src), "compact form %q of %q", c, src)
	again, err = Parse(c, e.ep)
	require.NoError(t, err, "compact form %q of %q", c, src)
	require.Equal(t, s, again.String(), "compact form %q of %q", c, src)
	sameTree(t, e, again)
}
