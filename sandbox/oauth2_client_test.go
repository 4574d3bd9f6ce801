package sandbox_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/sandbox/oauth"
)

// TestOAuth2Library drives the token service with golang.org/x/oauth2, as
// the client will: the device flow (DeviceAuth, DeviceAccessToken), the
// authorization code flow (AuthCodeURL, Exchange) with the client's
// credentials in the form and in HTTP Basic, and renewal through a
// TokenSource, for both flows, with the rotated refresh token refused. The
// one wait is DeviceAccessToken's: it polls on a wall-clock ticker, once a
// second at the shortest interval.
func TestOAuth2Library(t *testing.T) {
	t.Parallel()
	// The wall clock paces polls here: the library's ticker is real.
	clock := &movingClock{}
	clock.set(testNow)
	sb, srv := newServer(t, sandbox.Config{Now: clock.now, APIKeys: []string{"key-one", "key-two"},
		DeviceInterval: time.Second, DeviceAutoApprove: 1})
	ctx := context.WithValue(t.Context(), oauth2.HTTPClient, srv.Client())
	price := mustEndpoint(t, "overview").Price.Cost(1)
	overview := func(client *http.Client) *http.Response {
		t.Helper()
		ep, _ := catalog.Lookup("overview")
		resp, err := client.Get(srv.URL + ep.Path + "?url=example.com&scope=ROOT_DOMAIN")
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp
	}

	// The device flow. AuthStyle is set: with auto-detection the library
	// sends every unsuccessful poll twice (HTTP Basic, then the form), and
	// the second is too fast.
	device := &oauth2.Config{Endpoint: oauth2.Endpoint{
		DeviceAuthURL: srv.URL + catalog.DeviceCodePath,
		TokenURL:      srv.URL + catalog.DeviceTokenPath,
		AuthStyle:     oauth2.AuthStyleInParams,
	}, Scopes: []string{catalog.AuthorizeScope}}
	da, err := device.DeviceAuth(ctx)
	require.NoError(t, err)
	require.Equal(t, srv.URL+oauth.VerificationPath, da.VerificationURI)
	require.Equal(t, int64(1), da.Interval)
	require.WithinDuration(t, time.Now().Add(300*time.Second), da.Expiry, time.Minute)
	tok, err := device.DeviceAccessToken(ctx, da)
	require.NoError(t, err)
	require.Equal(t, "Bearer", tok.TokenType)
	require.Equal(t, int64(604800), tok.ExpiresIn)
	require.NotEmpty(t, tok.RefreshToken)
	require.Equal(t, http.StatusOK, overview(device.Client(ctx, tok)).StatusCode)
	require.Equal(t, price, sb.Usage("key-one").UnitsSpent, "auto-approved for the first key")

	// A week later the access token is refused, and the TokenSource renews
	// it at the device flow's token endpoint.
	clock.advance(catalog.AccessTokenLifetime)
	require.Equal(t, http.StatusUnauthorized, overview(device.Client(ctx, tok)).StatusCode)
	stale := *tok
	stale.Expiry = time.Now().Add(-time.Second) // what the library sees a week later
	renewed, err := device.TokenSource(ctx, &stale).Token()
	require.NoError(t, err)
	require.NotEqual(t, tok.RefreshToken, renewed.RefreshToken, "the refresh token rotates")
	require.Equal(t, http.StatusOK, overview(device.Client(ctx, renewed)).StatusCode)
	_, err = device.TokenSource(ctx, &stale).Token()
	var re *oauth2.RetrieveError
	require.True(t, errors.As(err, &re), "%v", err)
	require.Equal(t, catalog.ErrInvalidGrant, re.ErrorCode, "the old refresh token is refused")

	// The authorization code flow, for key-two, every AuthStyle.
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInParams, oauth2.AuthStyleInHeader, oauth2.AuthStyleAutoDetect} {
		code := &oauth2.Config{
			ClientID: sandbox.DefaultClientID, ClientSecret: sandbox.DefaultClientSecret,
			Endpoint: oauth2.Endpoint{
				AuthURL:   srv.URL + catalog.AuthorizePath,
				TokenURL:  srv.URL + catalog.AccessTokenPath,
				AuthStyle: style,
			},
			RedirectURL: srv.URL + oauth.SuccessPath,
			Scopes:      []string{catalog.AuthorizeScope},
		}
		// The person's browser: the sandbox approves at once and redirects.
		loc := code.AuthCodeURL("state-1", oauth2.SetAuthURLParam("account", "key-two"))
		resp, err := noRedirects(srv.Client()).Get(loc)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusFound, resp.StatusCode)
		to, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		require.Equal(t, "state-1", to.Query().Get("state"))

		before := sb.Usage("key-two").UnitsSpent
		tok, err := code.Exchange(ctx, to.Query().Get("code"))
		require.NoError(t, err, "AuthStyle %v", style)
		require.Equal(t, http.StatusOK, overview(code.Client(ctx, tok)).StatusCode)
		require.Equal(t, before+price, sb.Usage("key-two").UnitsSpent)

		stale := *tok
		stale.Expiry = time.Now().Add(-time.Second)
		renewed, err := code.TokenSource(ctx, &stale).Token()
		require.NoError(t, err, "AuthStyle %v", style)
		require.NotEqual(t, tok.RefreshToken, renewed.RefreshToken)
		require.Equal(t, http.StatusOK, overview(code.Client(ctx, renewed)).StatusCode)
		_, err = code.TokenSource(ctx, &stale).Token()
		require.True(t, errors.As(err, &re), "%v", err)
		require.Equal(t, catalog.ErrInvalidGrant, re.ErrorCode)
	}
}

// noRedirects returns a copy of client that does not follow redirects.
func noRedirects(client *http.Client) *http.Client {
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}
