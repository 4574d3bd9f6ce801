package redact

import (
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// maskedByEveryPattern masks s as String did before the clues: every
// pattern searches the whole text.
func maskedByEveryPattern(s string) string {
	for _, p := range patterns {
		s = p.ReplaceAllString(s, "${1}"+Mask)
	}
	return s
}

// FuzzCluesNeverSkipAMatch: whatever the text (any bytes, invalid UTF-8,
// any case or escape), masking with the clues equals masking with every
// pattern.
func FuzzCluesNeverSkipAMatch(f *testing.F) {
	for _, s := range []string{
		"GET /v1?KEY=abc123", "?\u212Aey=abc123", "x;%6Bey=abc", "&k%65y%3Dabc", "&KE%79=abc", "%3Fkey%3Dabc",
		"Authorization: BEARER abc.def", "ApiKey\tsk_123", "Bearer\nabc", "api\u212Aey x",
		"code=xyz&state=1", "?client_\u017Fecret=s3cr3t", "&REFRESH_TOKEN%3Dabc", "device_code=abc", "&\u212A\u212A=1",
		`{"access_token": "abc"}`, `{"CLIENT_SECRET":"x\"y"}`, `{"id_token" : "abc"}`, `{"client_\u017Fecret":"a"}`,
		"nothing secret here: keyword=seo tools", "", "\xff?key=\xe2\x84", "?\xe2\u212Aey=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var r *Redactor
		if want, got := maskedByEveryPattern(s), r.String(s); want != got {
			t.Fatalf("String(%q) = %q, every pattern masks it as %q", s, got, want)
		}
	})
}

// TestFoldFoldsAsRegexpDoes: fold maps every character that Go's (?i)
// takes for an ASCII letter (unicode.SimpleFold's orbits: the Kelvin
// sign, the long s, whatever a later Unicode adds) to that letter in
// lower case, so no clue is missed for want of a fold.
func TestFoldFoldsAsRegexpDoes(t *testing.T) {
	t.Parallel()
	for c := 'a'; c <= 'z'; c++ {
		for r := unicode.SimpleFold(c); r != c; r = unicode.SimpleFold(r) {
			require.Equal(t, string(c), fold(string(r)), "%U folds to %c", r, c)
		}
	}
	// And no other character folds to an ASCII letter.
	for r := rune(128); r <= unicode.MaxRune; r++ {
		if f := fold(string(r)); len(f) == 1 && strings.ContainsAny(f, "abcdefghijklmnopqrstuvwxyz") {
			require.Contains(t, []rune{'\u212A', '\u017F'}, r, "%U", r)
		}
	}
}
