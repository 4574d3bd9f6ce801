package main

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

func TestSandboxFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown fault", []string{"--faults", "foo=1"},
			`--faults: unknown fault "foo"; the faults are 429, 500, 503, slow, cut, malformed`},
		{"fault rate", []string{"--faults", "cut=2"}, "--faults: fault cut: the rate must be between 0 and 1, got 2"},
		{"fault syntax", []string{"--faults", "cut"}, `--faults: fault "cut": write NAME=RATE`},
		{"status rates", []string{"--faults", "429=0.5,503=0.75"}, "must add up to at most 1"},
		{"negative units", []string{"--units", "-5"}, "--units must be 0 (no balance) or a positive number of API units, got -5"},
		{"units not a number", []string{"--units", "lots"}, `invalid argument "lots" for "--units" flag`},
		{"negative rate", []string{"--rate", "-1"}, "--rate must be 0 (no limit) or positive, got -1"},
		{"negative concurrency", []string{"--concurrency", "-3"}, "--concurrency must be 0 (no limit) or positive, got -3"},
		{"zero slow", []string{"--slow", "0s"}, "--slow must be a positive duration such as 2s or 500ms, got 0s"},
		{"slow not a duration", []string{"--slow", "ages"}, `invalid argument "ages" for "--slow" flag`},
		{"bad clock", []string{"--now", "yesterday"}, "--now:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireSandboxRefuses(t, tc.args, tc.want)
		})
	}
}

// TestSandboxHelpFitsAScreen: etl sandbox --help fits a screen (at most
// 50 lines) and names every flag of the command, one line each, and the
// page of the docs that holds the detail; that page documents every flag
// and what the help used to hold (the faults, the token service's and the
// sandbox-only calls, the listing endpoints' answers).
func TestSandboxHelpFitsAScreen(t *testing.T) {
	t.Parallel()
	r := etl(t, nil, "sandbox", "--help")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.LessOrEqual(t, strings.Count(r.stdout, "\n"), 50, r.stdout)
	require.Contains(t, r.stdout, "docs/local-and-sandbox.md")
	section := sandboxDocs(t)

	cmd, _, err := testRoot().Find([]string{"sandbox"})
	require.NoError(t, err)
	n := 0
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		n++
		require.Regexp(t, `(?m)^\s+--`+f.Name+` \S+\s+\S.*$`, r.stdout, "--%s with its help on one line", f.Name)
		require.Contains(t, section, "`--"+f.Name, "the docs document --%s", f.Name)
	})
	require.Equal(t, 16, n, "every flag of etl sandbox")
	for _, detail := range []string{"`429`, `500`, `503`", "`slow`", "`cut`", "`malformed`", "X-Sandbox-Faults",
		"POST /dag/device/code", "POST /dag/device/token", "GET /dag/device", "GET /oauth2/authorize", "POST /oauth2/access_token",
		"GET /oauth2/success", "POST /sandbox/device/approve", "POST /sandbox/device/deny", "GET /sandbox/usage",
		"GET PREFIX/ID", "GET PREFIX?page=P&size=S", "PUT PREFIX/ID", "PUT PREFIX`", "LOCAL_PRO_PLAN_REQUIRED", "RESOURCE_NOT_FOUND"} {
		require.Contains(t, section, detail)
	}
}

// sandboxDocs is the section of docs/local-and-sandbox.md that etl sandbox
// --help points at: "etl sandbox: what it serves", to the next section.
func sandboxDocs(t *testing.T) string {
	t.Helper()
	page, err := os.ReadFile("../../docs/local-and-sandbox.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(page), "\n## `etl sandbox`: what it serves\n")
	require.True(t, ok, "the page has the section etl sandbox --help points at")
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// startSandboxCmd runs etl sandbox with args on a free port until the test
// ends (startSandboxLogs) and returns its URL.
func startSandboxCmd(t *testing.T, args ...string) string {
	t.Helper()
	listening, _ := startSandboxLogs(t, args...)
	require.Equal(t, "sandbox listening", listening["msg"])
	u, _ := listening["url"].(string)
	return u
}

// requireSandboxRefuses runs etl sandbox with args and requires a usage
// error that says want, with nothing served.
func requireSandboxRefuses(t *testing.T, args []string, want string) {
	t.Helper()
	r := etl(t, nil, append([]string{"sandbox", "--addr", "127.0.0.1:0"}, args...)...)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, want)
	require.NotContains(t, r.stderr, "sandbox listening", "nothing is served")
}

// get sends GET url and returns the status, the faults header and the body.
func getURL(t *testing.T, url string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("X-Sandbox-Faults"), string(body)
}

func TestSandboxFlagsReachTheServer(t *testing.T) {
	t.Parallel()
	const overview = "/apis/v4/backlinks/v1/overview?url=n7.example&scope=ROOT_DOMAIN&key=k"

	t.Run("units", func(t *testing.T) {
		t.Parallel()
		base := startSandboxCmd(t, "--api-key", "k", "--units", "100")
		for _, want := range []int{http.StatusOK, http.StatusOK, http.StatusForbidden} {
			status, _, body := getURL(t, base+overview)
			require.Equal(t, want, status, body)
		}
		_, _, body := getURL(t, base+"/sandbox/usage?key=k")
		require.JSONEq(t, `{"key":"k","units_spent":90,"requests":2,"failed_requests":1,"units_remaining":10}`, body)
	})
	t.Run("faults", func(t *testing.T) {
		t.Parallel()
		base := startSandboxCmd(t, "--api-key", "k", "--faults", "503=1", "--seed", "5")
		status, faults, body := getURL(t, base+overview)
		require.Equal(t, http.StatusServiceUnavailable, status, body)
		require.Equal(t, "503", faults)
		require.Contains(t, body, `"retryable":true`)
	})
	t.Run("rate", func(t *testing.T) {
		t.Parallel()
		// A bucket of one token a second: of a few requests sent at once,
		// some are past it.
		base := startSandboxCmd(t, "--api-key", "k", "--rate", "1")
		statuses := map[int]int{}
		for range 5 {
			status, _, body := getURL(t, base+overview)
			statuses[status]++
			if status == http.StatusTooManyRequests {
				require.Contains(t, body, "at most 1 a second")
			}
		}
		require.Positive(t, statuses[http.StatusOK])
		require.Positive(t, statuses[http.StatusTooManyRequests])
	})
	t.Run("no limits", func(t *testing.T) {
		t.Parallel()
		base := startSandboxCmd(t, "--api-key", "k", "--rate", "0", "--concurrency", "0")
		for range 30 {
			status, _, body := getURL(t, base+overview)
			require.Equal(t, http.StatusOK, status, body)
		}
	})
}
