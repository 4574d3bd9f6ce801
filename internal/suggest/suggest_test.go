package suggest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/suggest"
)

func TestClosest(t *testing.T) {
	t.Parallel()
	keys := []string{"name", "schedule", "timezone", "catch_up", "targets", "target_sets", "endpoints", "keywords", "budget"}
	scopes := []string{"ROOT_DOMAIN", "SUBDOMAIN", "SUBFOLDER", "PAGE"}
	for _, tc := range []struct {
		name       string
		candidates []string
		want       string
	}{
		{"schedul", keys, "schedule"},
		{"endpionts", keys, "endpoints"},
		{"target", keys, "targets"},
		{"Name", keys, "name"},
		{"ROOT_DOMIAN", scopes, "ROOT_DOMAIN"},
		{"root_domain", scopes, "ROOT_DOMAIN"},
		{"DOMAIN", scopes, ""},
		{"retention", keys, ""},
		{"", keys, ""},
		{"x", []string{"url", "scope"}, ""},
	} {
		require.Equal(t, tc.want, suggest.Closest(tc.name, tc.candidates), "Closest(%q)", tc.name)
	}
}
