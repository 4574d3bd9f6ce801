package redact_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/redact"
)

func TestString(t *testing.T) {
	t.Parallel()
	r := redact.New("s3cr3t-KEY", "")
	for _, tc := range []struct {
		name, in, want string
	}{
		{"literal", "key is s3cr3t-KEY here", "key is [REDACTED] here"},
		{"query param", "GET http://api/x?url=a&key=abc123&scope=PAGE", "GET http://api/x?url=a&key=[REDACTED]&scope=PAGE"},
		{"escaped name", "url=x&k%65y=abc", "url=x&k%65y=[REDACTED]"},
		{"raw query", "key=abc123&url=x", "key=[REDACTED]&url=x"},
		{"first query param", "http://api/x?key=abc123", "http://api/x?key=[REDACTED]"},
		{"escaped chars in key", "http://api/x?key=ab%2Bc%2Fd&u=1", "http://api/x?key=[REDACTED]&u=1"},
		{"encoded in a url", "next=http%3A%2F%2Fapi%3Fkey%3Dabc", "next=http%3A%2F%2Fapi%3Fkey%3D[REDACTED]"},
		{"apikey header", "Authorization: Apikey zzz", "Authorization: Apikey [REDACTED]"},
		{"bearer header", "authorization: bearer tok.en", "authorization: bearer [REDACTED]"},
		{"not a key param", "http://api/x?monkey=1", "http://api/x?monkey=1"},
		{"access token param", "http://a/x?access_token=sbx-at-1&u=1", "http://a/x?access_token=[REDACTED]&u=1"},
		{"refresh token form", "grant_type=refresh_token&refresh_token=sbx-rt-2", "grant_type=refresh_token&refresh_token=[REDACTED]"},
		{"code in a redirect", "http://a/oauth2/success?code=abc&state=s", "http://a/oauth2/success?code=[REDACTED]&state=s"},
		{"client secret form", "client_id=c&client_secret=hush", "client_id=c&client_secret=[REDACTED]"},
		{"device code form", "device_code=sbx-dc-3&grant_type=x", "device_code=[REDACTED]&grant_type=x"},
		{"encoded code", "next=http%3A%2F%2Fa%3Fcode%3Dabc", "next=http%3A%2F%2Fa%3Fcode%3D[REDACTED]"},
		{"not a code param", "user_code=BCDF-GHJK&status_code=400", "user_code=BCDF-GHJK&status_code=400"},
		{"json token answer", `{"access_token":"sbx-at-1","token_type":"Bearer","refresh_token": "sbx-rt-\"2"}`,
			`{"access_token":"[REDACTED]","token_type":"Bearer","refresh_token": "[REDACTED]"}`},
		{"clean", "nothing to see", "nothing to see"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, r.String(tc.in))
		})
	}
}

var errSentinel = errors.New("sentinel")

func TestShortSecretsOnlyByPattern(t *testing.T) {
	t.Parallel()
	r := redact.New("k", "sandbox")
	require.Equal(t, "unknown key sandbox", r.String("unknown key sandbox"))
	require.Equal(t, "x?key=[REDACTED] Apikey [REDACTED]", r.String("x?key=k Apikey sandbox"))
}

func TestError(t *testing.T) {
	t.Parallel()
	r := redact.New("topsecret")
	err := r.Error(fmt.Errorf("calling http://x?key=topsecret: %w", errSentinel))
	require.NotContains(t, err.Error(), "topsecret")
	require.ErrorIs(t, err, errSentinel)
	require.Nil(t, r.Error(nil))
}

type stringer struct{}

func (stringer) String() string { return "url?key=topsecret" }

func TestHandler(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			var inner slog.Handler = slog.NewTextHandler(&buf, nil)
			if format == "json" {
				inner = slog.NewJSONHandler(&buf, nil)
			}
			log := slog.New(redact.New("topsecret").Handler(inner))
			log = log.With("base", "Apikey topsecret").WithGroup("g")
			log.Info("sent topsecret",
				"url", "http://x/?key=topsecret",
				"err", errors.New("bad key topsecret"),
				"obj", stringer{},
				slog.Group("inner", "v", "topsecret"),
				"n", 3)
			out := buf.String()
			require.NotContains(t, out, "topsecret")
			require.Contains(t, out, redact.Mask)
			require.Contains(t, out, "3")
		})
	}
}

// TestHandlerKeepsLists: a list of strings is masked item by item and
// stays a JSON array, as does a list of numbers (not one packed string).
func TestHandlerKeepsLists(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(redact.New("topsecret").Handler(slog.NewJSONHandler(&buf, nil)))
	log.Info("drift", "unknown", []string{"a", "key=topsecret"}, "pids", []int{12, 34})
	require.Contains(t, buf.String(), `"unknown":["a","key=`+redact.Mask+`"],"pids":[12,34]`)
}

func TestHandlerKeepsLevel(t *testing.T) {
	t.Parallel()
	h := redact.New("x").Handler(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	require.False(t, h.Enabled(t.Context(), slog.LevelInfo))
	require.True(t, h.Enabled(t.Context(), slog.LevelError))
}
