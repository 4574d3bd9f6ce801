package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
)

func TestSandboxNoLocalProFlagErrors(t *testing.T) {
	t.Parallel()
	r := etl(t, nil, "sandbox", "--addr", "127.0.0.1:0", "--api-key", "a", "--no-local-pro", "secret-b")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--no-local-pro value 1 of 1 is not one of the --api-key values")
	require.NotContains(t, r.stderr, "secret-b", "a key is never repeated")
	require.NotContains(t, r.stderr, "sandbox listening")
}

// TestSandboxDocsDescribeTheListingEndpoints: the sandbox's section of
// the docs, where etl sandbox --help points, describes its listing
// endpoints.
func TestSandboxDocsDescribeTheListingEndpoints(t *testing.T) {
	t.Parallel()
	section := sandboxDocs(t)
	for _, want := range []string{catalog.LocationsPrefix, catalog.LocationsRawPrefix, "--no-local-pro",
		sandbox.CodeForbidden, sandbox.DetailLocalProRequired, "requested", "requestId", "{code: 401, message}",
		"{code: 429, message}", "IN_PROGRESS", "NOT_SYNCED", "5 a minute", "one at a time", "before an update is applied"} {
		require.Contains(t, section, want)
	}
}

// TestSandboxListing runs etl sandbox with an account without Local Pro
// and reads locations with tokens approved by the sandbox-only call.
func TestSandboxListing(t *testing.T) {
	t.Parallel()
	listening, _ := startSandboxLogs(t, "--api-key", "agency-n30", "--api-key", "basic", "--no-local-pro", "basic")
	base, _ := listening["url"].(string)
	token := func(account string) string {
		_, d := postFormURL(t, base+catalog.DeviceCodePath, nil)
		status, _ := postFormURL(t, base+"/sandbox/device/approve", url.Values{"user_code": {d["user_code"].(string)}, "account": {account}})
		require.Equal(t, http.StatusOK, status)
		status, tok := postFormURL(t, base+catalog.DeviceTokenPath, url.Values{"grant_type": {catalog.GrantDeviceCode}, "device_code": {d["device_code"].(string)}})
		require.Equal(t, http.StatusOK, status, tok)
		return tok["access_token"].(string)
	}
	get := func(tok string) (int, map[string]any) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+catalog.LocationsRawPrefix+"?size=5", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var body map[string]any
		require.NoError(t, json.Unmarshal(b, &body), "%s", b)
		return resp.StatusCode, body
	}
	status, body := get(token("agency-n30"))
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, float64(30), body["data"].(map[string]any)["totalElements"])
	status, body = get(token("basic"))
	require.Equal(t, http.StatusForbidden, status, body)
	require.Equal(t, sandbox.CodeForbidden, body["error"].(map[string]any)["code"])
	require.NotEmpty(t, body["requestId"])
	_, _, usage := getURL(t, base+"/sandbox/usage?key=agency-n30")
	require.JSONEq(t, `{"key":"agency-n30","units_spent":0,"requests":0,"failed_requests":0}`, usage)
}
