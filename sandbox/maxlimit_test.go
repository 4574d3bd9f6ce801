package sandbox_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
)

// TestMaxLimit: every paged endpoint serves at most Config.MaxLimit lines
// a request. Past it, given or by default, the answer is a 400 of the
// error envelope, not retryable, that names the parameter and the bound
// (or, with UnnamedLimit, not the bound) and costs nothing; at it, the
// lines there are. Summary's limit, which counts months, has no bound.
func TestMaxLimit(t *testing.T) {
	t.Parallel()
	const bound = 50
	_, namedSrv := newServer(t, sandbox.Config{MaxLimit: bound})
	_, unnamedSrv := newServer(t, sandbox.Config{MaxLimit: bound, UnnamedLimit: true})
	_, defaultSrv := newServer(t, sandbox.Config{})
	_, unboundSrv := newServer(t, sandbox.Config{MaxLimit: -1})
	target := params("url", "n1000.example", "scope", "ROOT_DOMAIN")
	paged := 0
	for _, ep := range catalog.All() {
		if !hasParam(ep, "limit") || !hasParam(ep, "offset") {
			continue
		}
		paged++
		p := target
		switch {
		case hasParam(ep, "urls"):
			p = params("urls", "n1000.example,n300.example", "scope", "ROOT_DOMAIN")
		case hasParam(ep, "domain"):
			p = params("domain", "n1000.example")
		}
		t.Run(ep.Name, func(t *testing.T) {
			t.Parallel()
			e := failed(t, get(t, namedSrv, ep.Name, withParams(p, "limit", fmt.Sprint(bound+1))), http.StatusBadRequest)
			require.False(t, *e.Error.Retryable)
			require.Equal(t, fmt.Sprintf("limit must be from 1 to %d for %s, got %d", bound, ep.Name, bound+1), e.Error.Message)
			require.Len(t, e.Error.Details, 1)
			require.Equal(t, "limit", e.Error.Details[0].Parameter)

			e = failed(t, get(t, namedSrv, ep.Name, p), http.StatusBadRequest)
			require.Contains(t, e.Error.Message, "got 100 (its default)", "the default 100 is past a bound of 50")

			e = failed(t, get(t, unnamedSrv, ep.Name, withParams(p, "limit", fmt.Sprint(bound+1))), http.StatusBadRequest)
			require.Equal(t, "limit", e.Error.Details[0].Parameter)
			require.NotContains(t, e.Error.Message, fmt.Sprint(bound), "the bound is not named")

			ok(t, get(t, namedSrv, ep.Name, withParams(p, "limit", fmt.Sprint(bound))))
			ok(t, get(t, defaultSrv, ep.Name, withParams(p, "limit", fmt.Sprint(sandbox.DefaultMaxLimit))))
			failed(t, get(t, defaultSrv, ep.Name, withParams(p, "limit", fmt.Sprint(sandbox.DefaultMaxLimit+1))), http.StatusBadRequest)
			ok(t, get(t, unboundSrv, ep.Name, withParams(p, "limit", "2147483647")))
		})
	}
	require.Equal(t, 7, paged, "links, ref-domains, ref-ips, pages, anchors, competitors, matrix")
	t.Run("summary", func(t *testing.T) {
		t.Parallel()
		ok(t, get(t, namedSrv, "summary", withParams(target, "limit", "100000")))
	})
	t.Run("not charged", func(t *testing.T) {
		t.Parallel()
		sb, srv := newServer(t, sandbox.Config{MaxLimit: bound, Units: 1_000_000})
		for range 3 {
			failed(t, get(t, srv, "links", withParams(target, "limit", "1000000")), http.StatusBadRequest)
		}
		require.Equal(t, sandbox.Usage{Key: testKey, FailedRequests: 3}, sb.Usage(testKey))
		left, limited := sb.UnitsRemaining(testKey)
		require.True(t, limited)
		require.Equal(t, int64(1_000_000), left)
	})
}
