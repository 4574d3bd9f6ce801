package plain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/plain"
)

func TestText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain", "a plain text, Köln", 0, "a plain text, Köln"},
		{"escape and newline", "Evil\x1b[2J\nFORGED: UPDATED", 0, `Evil\x1b[2J\nFORGED: UPDATED`},
		{"tab and not UTF-8", "tab\there \xff", 0, `tab\there \xff`},
		{"right-to-left override, DEL, C1", "a\u202eb\x7f\u009b", 0, `a\u202eb\x7f\u009b`},
		{"cut", strings.Repeat("ab", 100), 10, "ababababab... (200 bytes)"},
		{"not cut without max", strings.Repeat("ab", 100), 0, strings.Repeat("ab", 100)},
		{"cut at a character", strings.Repeat("é", 10), 5, "éé... (20 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, plain.Text(tc.in, tc.max))
		})
	}
}
