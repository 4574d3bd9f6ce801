package auth_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/sandbox/oauth"
)

// TestCodeLogin: the authorization code flow, the code pasted as the
// address the browser was sent to or as the bare code, and its renewal at
// its own token endpoint with the client's credentials.
func TestCodeLogin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sandbox.Config{})
	a := f.accounts(nil)
	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	approve := func(l *auth.CodeLogin) *url.URL {
		t.Helper()
		resp, err := browser.Get(l.URL)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusFound, resp.StatusCode)
		to, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		return to
	}

	l, err := a.LoginCode("code-acct", f.url+oauth.SuccessPath)
	require.NoError(t, err)
	require.Contains(t, l.URL, f.url+catalog.AuthorizePath+"?")
	to := approve(l)
	acc, err := l.Finish(t.Context(), to.String()+"\n")
	require.NoError(t, err)
	require.Equal(t, auth.CodeFlow, acc.Flow)
	require.Equal(t, catalog.AuthorizeScope, acc.Scopes)
	require.Equal(t, http.StatusOK, f.overview(&http.Client{Transport: a.Transport("code-acct", nil)}))
	require.Positive(t, f.sb.Usage("key-one").UnitsSpent)

	// Another sign-in's address is refused; a bare code is taken.
	l2, err := a.LoginCode("code-acct", f.url+oauth.SuccessPath)
	require.NoError(t, err)
	_, err = l2.Finish(t.Context(), to.String())
	require.ErrorContains(t, err, "belongs to another sign-in")
	_, err = l2.Finish(t.Context(), approve(l2).Query().Get("code"))
	require.NoError(t, err)

	// Renewal at the access token endpoint.
	f.clock.advance(catalog.AccessTokenLifetime - time.Hour)
	_, err = a.Token(t.Context(), "code-acct")
	require.NoError(t, err)
	require.Equal(t, int64(1), f.refreshes.Load())
	require.Equal(t, http.StatusOK, f.overview(&http.Client{Transport: a.Transport("code-acct", nil)}))

	// Without a client, neither the flow nor its renewal works.
	none := f.accounts(nil, func(c *auth.Config) { c.ClientID, c.ClientSecret = "", "" })
	_, err = none.LoginCode("x", f.url+oauth.SuccessPath)
	require.ErrorContains(t, err, "set ETL_CLIENT_ID and ETL_CLIENT_SECRET")
	f.noTokens(to.Query().Get("code"))
}
