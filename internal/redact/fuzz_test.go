package redact_test

import (
	"strings"
	"testing"

	"github.com/seoetl/etl/internal/redact"
)

// window is how many consecutive characters of a key count as revealing
// it.
const window = 8

// revealed returns the first window-long piece of a form of key that text
// holds, or "".
func revealed(text, key string) string {
	for _, f := range keyForms(key) {
		for i := 0; i+window <= len(f); i++ {
			if strings.Contains(text, f[i:i+window]) {
				return f[i : i+window]
			}
		}
	}
	return ""
}

// FuzzString checks that no form of a key survives String, whatever text
// surrounds it, and that no cut of the masked text (Cut), and no text cut
// inside the key before masking (Truncated), shows 8 or more consecutive
// characters of it.
func FuzzString(f *testing.F) {
	f.Add("Invalid API key ", hostileKey, "", uint8(0), uint16(20))
	f.Add(`{"error":{"message":"bad key `, hostileKey, `"}}`, uint8(1), uint16(40))
	f.Add("<p>", hostileKey, "</p>", uint8(2), uint16(3))
	f.Add("next=http://x/?a=", hostileKey, "&b=1", uint8(4), uint16(100))
	f.Add("/v1/", hostileKey, "/x", uint8(5), uint16(7))
	f.Add(`"a";"`, hostileKey, `";"b"`, uint8(6), uint16(64))
	f.Add("", "abcdefgh-abcdefgh", "-abcdefgh", uint8(0), uint16(5))
	f.Add("é", "ééééé", "é", uint8(3), uint16(1))
	f.Fuzz(func(t *testing.T, prefix, key, suffix string, which uint8, cut uint16) {
		if len(key) < redact.MinSecretLen || strings.ContainsAny(key, "[]") || strings.Contains(redact.Mask, key) {
			// A key made of the mask's letters would be found in the
			// masked text by construction.
			t.Skip()
		}
		if revealed(prefix, key) != "" || revealed(suffix, key) != "" {
			t.Skip() // the surroundings already show part of the key
		}
		r := redact.New(key)
		forms := keyForms(key)
		form := forms[int(which)%len(forms)]
		text := prefix + form + suffix

		got := r.String(text)
		for _, f := range forms {
			if strings.Contains(got, f) {
				t.Fatalf("String(%q) = %q holds %q", text, got, f)
			}
		}
		n := int(cut) % (len(got) + 1)
		if w := revealed(redact.Cut(got, n), key); w != "" {
			t.Fatalf("Cut(String(%q), %d) shows %q", text, n, w)
		}
		// The text cut before masking, inside or after the key.
		m := len(prefix) + int(cut)%(len(form)+len(suffix)+1)
		if w := revealed(r.Truncated(text[:m]), key); w != "" {
			t.Fatalf("Truncated(%q) shows %q", text[:m], w)
		}
	})
}
