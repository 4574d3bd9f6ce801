package catalog_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// TestTotalFieldIsAnOverviewCount: an endpoint's TotalField is an integer
// field of overview, and only lists of one target at a scope (what an
// overview is about) have one.
func TestTotalFieldIsAnOverviewCount(t *testing.T) {
	t.Parallel()
	overview, ok := catalog.Lookup("overview")
	require.True(t, ok)
	var with []string
	for _, ep := range catalog.All() {
		if ep.TotalField == "" {
			continue
		}
		with = append(with, ep.Name)
		f, ok := overview.Field(ep.TotalField)
		require.True(t, ok, "%s: TotalField %q is not a field of overview", ep.Name, ep.TotalField)
		require.Equal(t, catalog.Int, f.Kind, "%s: TotalField %q", ep.Name, ep.TotalField)
		require.Equal(t, catalog.List, ep.Shape, ep.Name)
		_, url := ep.Param("url")
		_, scope := ep.Param("scope")
		require.True(t, url && scope && ep.PerTarget, "%s takes no url and scope, unlike overview", ep.Name)
	}
	require.Equal(t, []string{"links", "ref-domains", "ref-ips"}, with)
}
