package sandbox_test

import (
	"net/http"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
)

// Internationalised domain names give valid UTF-8 everywhere: PostgreSQL
// refuses anything else.
func TestIDNTargetsGiveValidUTF8(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	for _, ep := range catalog.All() {
		if ep.JSONOnly || !ep.PerTarget {
			continue
		}
		p := params("format", "csv")
		switch {
		case ep.Name == "competitors":
			p.Set("domain", "пример.рф")
		case ep.Name == "comparison":
			p.Set("urls", "пример.рф,例子.中国")
		default:
			p.Set("url", "пример.рф")
		}
		if len(ep.Scopes) > 0 {
			p.Set("scope", "ROOT_DOMAIN")
		}
		r := get(t, srv, ep.Name, p)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", ep.Name, r.body)
		require.True(t, utf8.Valid(r.body), "%s: the body is not valid UTF-8", ep.Name)
	}
}
