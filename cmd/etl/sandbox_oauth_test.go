package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

func TestSandboxTokenFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"interval in milliseconds", []string{"--device-interval", "1500ms"}, "--device-interval must be a whole number of seconds, at least 1s, such as 5s or 5m (the token service answers it in seconds), got 1.5s"},
		{"zero expiry", []string{"--device-expires", "0s"}, "--device-expires must be a whole number of seconds, at least 1s"},
		{"negative auto-approve", []string{"--auto-approve", "-1"}, "--auto-approve must be 0 (off) or the poll of a device code that gets the tokens (1: the first), got -1"},
		{"empty client id", []string{"--client-id", ""}, "--client-id must be a non-empty value without spaces"},
		{"secret with a space", []string{"--client-secret", "a b"}, "--client-secret must be a non-empty value without spaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireSandboxRefuses(t, tc.args, tc.want)
		})
	}
}

// TestSandboxDocsDescribeTheTokenService: the sandbox's section of the
// docs, where etl sandbox --help points, describes its token service.
func TestSandboxDocsDescribeTheTokenService(t *testing.T) {
	t.Parallel()
	section := sandboxDocs(t)
	for _, want := range []string{"--device-expires", "--device-interval", "--auto-approve", "--client-id", "--client-secret",
		"ETL_AUTH_URL", catalog.DeviceCodePath, catalog.DeviceTokenPath, catalog.AuthorizePath, catalog.AccessTokenPath,
		"/sandbox/device/approve?user_code=CODE[&account=KEY]", "/sandbox/device/deny?user_code=CODE",
		"authorization_pending", "slow_down", "access_denied", "expired_token", "Authorization: Bearer TOKEN"} {
		require.Contains(t, section, want)
	}
}

// startSandboxLogs runs etl sandbox with args on a free port until the test
// ends and returns its first two log lines.
func startSandboxLogs(t *testing.T, args ...string) (listening, tokens map[string]any) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	logs, logw := io.Pipe()
	done := make(chan int)
	go func() {
		done <- run(ctx, append([]string{"--log-format", "json", "sandbox", "--addr", "127.0.0.1:0"}, args...),
			strings.NewReader(""), io.Discard, logw, func(string) string { return "" })
		logw.Close()
	}()
	dec := json.NewDecoder(logs)
	require.NoError(t, dec.Decode(&listening))
	require.NoError(t, dec.Decode(&tokens))
	go func() { _, _ = io.Copy(io.Discard, logs) }()
	t.Cleanup(func() {
		cancel()
		require.Equal(t, exitOK, <-done)
	})
	return listening, tokens
}

// postFormURL posts a form and decodes the JSON answer.
func postFormURL(t *testing.T, u string, form url.Values) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

func TestSandboxTokenService(t *testing.T) {
	t.Parallel()
	const secret = "flag-secret-0123"
	listening, tokens := startSandboxLogs(t, "--api-key", "k", "--auto-approve", "2", "--device-expires", "90s",
		"--device-interval", "3s", "--client-id", "flag-client", "--client-secret", secret)
	base, _ := listening["url"].(string)
	require.NotEmpty(t, base)
	require.Equal(t, base, listening["auth_url"])
	require.Equal(t, "token service listening", tokens["msg"])
	require.Equal(t, base, tokens["ETL_API_URL"])
	require.Equal(t, base, tokens["ETL_AUTH_URL"], "the token service's address, in the words of etl's environment")
	require.Equal(t, "flag-client", tokens["client_id"])
	require.NotContains(t, tokens, "client_secret")

	// The device flow, approved unattended at the second poll.
	status, d := postFormURL(t, base+catalog.DeviceCodePath, url.Values{"scope": {"user.id"}})
	require.Equal(t, http.StatusOK, status, d)
	require.Equal(t, float64(90), d["expires_in"])
	require.Equal(t, float64(3), d["interval"])
	poll := url.Values{"grant_type": {catalog.GrantDeviceCode}, "device_code": {d["device_code"].(string)}}
	status, e := postFormURL(t, base+catalog.DeviceTokenPath, poll)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, catalog.ErrAuthorizationPending, e["error"])
	// The second poll comes at once: it is too fast, but the code is
	// approved as it is polled for the second time, and an approved code
	// answers its tokens however fast it is polled.
	status, tok := postFormURL(t, base+catalog.DeviceTokenPath, poll)
	require.Equal(t, http.StatusOK, status, tok)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/apis/v4/backlinks/v1/overview?url=n7.example&scope=ROOT_DOMAIN", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok["access_token"].(string))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, _, usage := getURL(t, base+"/sandbox/usage?key=k")
	require.JSONEq(t, `{"key":"k","units_spent":45,"requests":1,"failed_requests":0}`, usage)

	// The client of the code flow is the flags'.
	status, e = postFormURL(t, base+catalog.AccessTokenPath, url.Values{"grant_type": {catalog.GrantRefreshToken},
		"refresh_token": {"x"}, "client_id": {"flag-client"}, "client_secret": {"sandbox-secret"}})
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, catalog.ErrInvalidClient, e["error"])
	status, e = postFormURL(t, base+catalog.AccessTokenPath, url.Values{"grant_type": {catalog.GrantRefreshToken},
		"refresh_token": {"x"}, "client_id": {"flag-client"}, "client_secret": {secret}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, catalog.ErrInvalidGrant, e["error"])
}
