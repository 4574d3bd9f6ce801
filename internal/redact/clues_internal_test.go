package redact

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCluesNeverSkipAMatch: a pattern is skipped only where it cannot
// match: on texts each pattern matches, in every case and escape its (?i)
// allows, masking with the clues equals masking with every pattern.
func TestCluesNeverSkipAMatch(t *testing.T) {
	t.Parallel()
	all := func(s string) string {
		for _, p := range patterns {
			s = p.ReplaceAllString(s, "${1}"+Mask)
		}
		return s
	}
	for _, text := range []string{
		"GET /v1?KEY=abc123", "?\u212Aey=abc123", "x;%6Bey=abc", "&k%65y%3Dabc", "&KE%79=abc", "%3Fkey%3Dabc",
		"Authorization: BEARER abc.def", "ApiKey\tsk_123", "Bearer\nabc",
		"code=xyz&state=1", "?client_\u017Fecret=s3cr3t", "&REFRESH_TOKEN%3Dabc", "device_code=abc",
		`{"access_token": "abc"}`, `{"CLIENT_SECRET":"x\"y"}`, `{"id_token" : "abc"}`,
		"nothing secret here: keyword=seo tools", "",
	} {
		var r *Redactor
		require.Equal(t, all(text), r.String(text), "%q", text)
	}
	require.NotEqual(t, "?\u212Aey=abc123", all("?\u212Aey=abc123"), "the Kelvin sign matches k")
	require.NotEqual(t, "?client_\u017Fecret=s3cr3t", all("?client_\u017Fecret=s3cr3t"), "the long s matches s")
}
