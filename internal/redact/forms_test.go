package redact_test

import (
	"encoding/json"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/redact"
)

// hostileKey is 58 characters long and holds every character that some
// encoding changes: '"' and '\' (JSON, CSV), '/' and '+' (URLs), '<', '>'
// and '&' (encoding/json's HTML escapes) and a space.
const hostileKey = `sk_live_"quoted"\back/slash+plus<lt>gt&amp space 012345678`

// keyForms are the spellings of key that a text may hold it in.
func keyForms(key string) []string {
	plain := func(html bool) string {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(key)
		s := strings.TrimSpace(b.String())
		return s[1 : len(s)-1]
	}
	return []string{
		key,
		plain(true),
		plain(false),
		strings.ReplaceAll(plain(false), "/", `\/`),
		url.QueryEscape(key),
		url.PathEscape(key),
		strings.ReplaceAll(key, `"`, `""`),
	}
}

func TestHostileKeyForms(t *testing.T) {
	t.Parallel()
	require.Len(t, hostileKey, 58)
	r := redact.New(hostileKey)
	forms := keyForms(hostileKey)
	for i, form := range forms {
		for _, tc := range []struct{ name, text string }{
			{"alone", form},
			{"in a sentence", "Invalid API key " + form + " (check it)"},
			{"in a JSON message", `{"error":{"message":"bad key ` + form + `"}}`},
			{"twice, touching", form + form},
			{"in an HTML page", "<html><body><p>Invalid API key " + form + "</p></body></html>"},
		} {
			t.Run(tc.name+" form "+string(rune('0'+i)), func(t *testing.T) {
				t.Parallel()
				got := r.String(tc.text)
				for _, f := range forms {
					require.NotContains(t, got, f)
				}
				require.Contains(t, got, redact.Mask)
			})
		}
	}
}

func TestJSONEscapedForms(t *testing.T) {
	t.Parallel()
	r := redact.New(hostileKey)
	raw, err := json.Marshal(map[string]string{"echo": hostileKey})
	require.NoError(t, err)
	require.Contains(t, string(raw), `\u003c`, "json.Marshal escapes < as \\u003c")
	require.Equal(t, `{"echo":"[REDACTED]"}`, r.String(string(raw)))
}

func TestOverlappingOccurrences(t *testing.T) {
	t.Parallel()
	// A secret whose end is its start: two copies overlap. Masking one
	// copy must not leave the rest of the other.
	r := redact.New("abcdefgh-abcdefgh")
	require.Equal(t, "x [REDACTED] y", r.String("x abcdefgh-abcdefgh-abcdefgh y"))
	// Two secrets sharing letters.
	r = redact.New("0123456789", "56789abcdef")
	require.Equal(t, "<[REDACTED]>", r.String("<0123456789abcdef>"))
}

func TestTruncated(t *testing.T) {
	t.Parallel()
	r := redact.New(hostileKey)
	for _, tc := range []struct{ name, in, want string }{
		{"cut in the key", "Invalid key " + hostileKey[:30], "Invalid key [REDACTED]"},
		{"cut in an escape", "x " + url.QueryEscape(hostileKey)[:12], "x [REDACTED]"},
		{"whole key then cut", hostileKey + " and " + hostileKey[:9], "[REDACTED] and [REDACTED]"},
		{"too short a start", "ends with sk_", "ends with sk_"},
		{"no key", "nothing here", "nothing here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, r.Truncated(tc.in))
		})
	}
	// String does not guess.
	require.Equal(t, "x "+hostileKey[:30], r.String("x "+hostileKey[:30]))
}

func TestCut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short enough", "abc", 3, "abc"},
		{"plain", "abcdef", 3, "abc"},
		{"inside a mask", "ab[REDACTED]cd", 5, "ab"},
		{"after a mask", "ab[REDACTED]cd", 12, "ab[REDACTED]"},
		{"inside a rune", "aé", 2, "a"},
		{"rune then mask", "é[REDACTED]", 4, "é"},
		{"zero", "abc", 0, ""},
		{"negative", "abc", -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := redact.Cut(tc.in, tc.n)
			require.Equal(t, tc.want, got)
			require.True(t, utf8.ValidString(got))
		})
	}
}

func TestValue(t *testing.T) {
	t.Parallel()
	r := redact.New(hostileKey)
	in := []byte("anchor " + hostileKey + " text")
	require.Equal(t, "anchor [REDACTED] text", string(r.Value(in)))
	clean := []byte("https://x.example/?key=abc")
	got := r.Value(clean)
	require.Equal(t, string(clean), string(got), "Value leaves the patterns alone")
	require.Same(t, &clean[0], &got[0], "no copy without a secret")
	require.Equal(t, "a", string((*redact.Redactor)(nil).Value([]byte("a"))))
}

func TestWith(t *testing.T) {
	t.Parallel()
	base := redact.New("longenough-key")
	r := base.With("pw", "", "Sup3r")
	require.Equal(t, "[REDACTED] [REDACTED] [REDACTED] Sup", r.String("longenough-key pw Sup3r Sup"))
	require.Equal(t, "pw Sup3r", base.String("pw Sup3r"), "base is unchanged")
	require.Equal(t, "[REDACTED]", (*redact.Redactor)(nil).With("pw").String("pw"))
}

// TestHTMLAndLowerHexForms: an error page of a proxy or a web server
// writes the key HTML-escaped (html.EscapeString's &#34; or the &quot; of
// other escapers), and some URL encoders write percent escapes in lower
// case hex: each is masked. Before, they printed the key with only its
// special characters spelled otherwise.
func TestHTMLAndLowerHexForms(t *testing.T) {
	t.Parallel()
	r := redact.New(hostileKey)
	lower := func(s string) string {
		return regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(s, strings.ToLower)
	}
	for _, form := range []string{
		html.EscapeString(hostileKey),
		strings.NewReplacer(`"`, "&quot;", "'", "&#x27;", "&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(hostileKey),
		lower(url.QueryEscape(hostileKey)),
		lower(url.PathEscape(hostileKey)),
	} {
		require.NotEqual(t, hostileKey, form)
		got := r.String("<p>Invalid API key " + form + "</p>")
		require.Equal(t, "<p>Invalid API key "+redact.Mask+"</p>", got, form)
	}
}
