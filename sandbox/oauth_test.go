package sandbox_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox/oauth"
)

// movingClock is a clock the test moves; never the wall clock.
type movingClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *movingClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *movingClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *movingClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// sendBody sends a request with a body and reads the reply; it never
// follows a redirect.
func sendBody(t *testing.T, srv *httptest.Server, method, pathAndQuery string, header http.Header, body string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+pathAndQuery, strings.NewReader(body))
	require.NoError(t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	client := *srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// postForm posts a form to the sandbox.
func postForm(t *testing.T, srv *httptest.Server, path string, form url.Values) reply {
	t.Helper()
	return sendBody(t, srv, http.MethodPost, path, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, form.Encode())
}

// decide approves (for account, "" for the default) or denies a user code
// with the sandbox-only call.
func decide(t *testing.T, srv *httptest.Server, userCode string, approve bool, account string) {
	t.Helper()
	q := url.Values{"user_code": {userCode}}
	path := oauth.DenyPath
	if approve {
		path = oauth.ApprovePath
		if account != "" {
			q.Set("account", account)
		}
	}
	r := sendBody(t, srv, http.MethodPost, path+"?"+q.Encode(), nil, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
}

// deviceCode asks the sandbox for a device code.
func deviceCode(t *testing.T, srv *httptest.Server) (deviceCode, userCode string) {
	t.Helper()
	r := postForm(t, srv, catalog.DeviceCodePath, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var d struct {
		DeviceCode string `json:"device_code"`
		UserCode   string `json:"user_code"`
	}
	require.NoError(t, json.Unmarshal(r.body, &d))
	return d.DeviceCode, d.UserCode
}

func pollDevice(t *testing.T, srv *httptest.Server, code string) reply {
	t.Helper()
	return postForm(t, srv, catalog.DeviceTokenPath, url.Values{"grant_type": {catalog.GrantDeviceCode}, "device_code": {code}})
}

// tokenPair is a token answer.
type tokenPair struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
	TokenType    string `json:"token_type"`
}

func tokensOf(t *testing.T, r reply) tokenPair {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var p tokenPair
	require.NoError(t, json.Unmarshal(r.body, &p))
	require.NotEmpty(t, p.AccessToken)
	return p
}

// bearerToken runs the device flow over HTTP, approved for account (""
// for the sandbox's first key), and returns the tokens: how a test of the
// data API gets a bearer token over HTTP, unattended.
func bearerToken(t *testing.T, srv *httptest.Server, account string) tokenPair {
	t.Helper()
	dc, uc := deviceCode(t, srv)
	decide(t, srv, uc, true, account)
	return tokensOf(t, pollDevice(t, srv, dc))
}

// oauthError decodes an RFC 6749 error object, requiring status and code.
func oauthError(t *testing.T, r reply, status int, code string) string {
	t.Helper()
	require.Equal(t, status, r.status, "%s", r.body)
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	require.NoError(t, json.Unmarshal(r.body, &e), "%s", r.body)
	require.Equal(t, code, e.Error, "%s", r.body)
	return e.Description
}
