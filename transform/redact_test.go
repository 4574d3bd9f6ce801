package transform_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/redact"
	"github.com/seoetl/etl/transform"
)

// secretKey is an API key of 58 characters with '"', '\', '/', '+' and
// '<', which JSON, CSV and URLs each write differently.
const secretKey = `sk_live_4f"9a\c0/d2+e7<b1>61a8&53c-0f9e7d6c5b4a39281706f5e`

// keyForms are the spellings of secretKey a server may echo it in.
func keyForms() []string {
	j, _ := json.Marshal(secretKey)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(secretKey)
	plain := strings.TrimSpace(b.String())
	return []string{
		secretKey,
		string(j[1 : len(j)-1]),
		plain[1 : len(plain)-1],
		url.QueryEscape(secretKey),
		url.PathEscape(secretKey),
		strings.ReplaceAll(secretKey, `"`, `""`),
	}
}

// requireNoKey fails when text holds 8 or more consecutive characters of
// any form of secretKey.
func requireNoKey(t *testing.T, text string) {
	t.Helper()
	for _, f := range keyForms() {
		for i := 0; i+8 <= len(f); i++ {
			require.NotContains(t, text, f[i:i+8], "part of the key (form %q)", f)
		}
	}
}

func redacting() transform.Options {
	return transform.Options{BatchRows: 10, Redactor: redact.New(secretKey)}
}

// TestHeaderErrorsMaskTheKey: an answer that is not CSV (an HTML error
// page with status 200) fails on its header, which the error quotes.
func TestHeaderErrorsMaskTheKey(t *testing.T) {
	t.Parallel()
	for i, form := range keyForms() {
		for name, body := range map[string]string{
			"html page":     "<html><body><h1>Invalid API key " + form + "</h1></body></html>\n",
			"text":          "Invalid API key " + form + "\n",
			"key first":     form + " is not a valid key\n",
			"repeated name": `anchor;"` + strings.ReplaceAll(form, `"`, `""`) + `";"` + strings.ReplaceAll(form, `"`, `""`) + "\"\n",
		} {
			t.Run(name+" form "+string(rune('0'+i)), func(t *testing.T) {
				t.Parallel()
				opts := redacting()
				opts.Allocator = newAllocator(t)
				_, err := transform.NewCSVDecoder(strings.NewReader(body), endpoint(t, "anchors"), opts)
				require.Error(t, err)
				requireNoKey(t, err.Error())
				if !strings.Contains(err.Error(), "inside an unquoted value") { // the error does not quote the header
					require.Contains(t, err.Error(), redact.Mask)
				}
			})
		}
	}
}

// TestCSVRejectsMaskTheKey: rows that echo the key and are quarantined
// keep neither the key in their reason nor in their raw text.
func TestCSVRejectsMaskTheKey(t *testing.T) {
	t.Parallel()
	quoted := `"` + strings.ReplaceAll(secretKey, `"`, `""`) + `"`
	for _, tc := range []struct{ name, row string }{
		{"key in an integer cell", "a;" + quoted},
		{"url-escaped key in an integer cell", "a;" + url.QueryEscape(secretKey)},
		{"bare key with its quote", "a;" + secretKey},
		{"too many cells", quoted + ";1;2"},
		{"key in text, integer bad", quoted + ";x"},
		{"long row cut inside the key", strings.Repeat("x", 40) + " " + secretKey + ";1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := redacting()
			opts.Allocator = newAllocator(t)
			opts.MaxRowBytes = 64
			got := decodeAll(t, []byte("anchor;domains_count\n"+tc.row+"\nok;1\n"), endpoint(t, "anchors"), opts)
			require.Len(t, got.Rejects, 1)
			require.Len(t, got.Rows, 1)
			rj := got.Rejects[0]
			requireNoKey(t, rj.Raw)
			requireNoKey(t, rj.Reason)
			require.Contains(t, rj.Raw+rj.Reason, redact.Mask)
			require.LessOrEqual(t, len(rj.Raw), 64)
		})
	}
}

// TestJSONRejectsMaskTheKey: the same for JSON rows, where the key is
// JSON-escaped.
func TestJSONRejectsMaskTheKey(t *testing.T) {
	t.Parallel()
	k, _ := json.Marshal(secretKey)
	for _, tc := range []struct{ name, row string }{
		{"key as an integer", `{"anchor":"a","domains_count":` + string(k) + `}`},
		{"key in a list of integers", `{"domain":"a","backlinks_counts":[1,` + string(k) + `]}`},
		{"long row", `{"anchor":` + string(k) + `,"domains_count":"` + strings.Repeat("x", 100) + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ep := endpoint(t, "anchors")
			if strings.Contains(tc.row, "backlinks_counts") {
				ep = endpoint(t, "matrix")
			}
			opts := redacting()
			opts.Allocator = newAllocator(t)
			opts.MaxRowBytes = 80
			got := decodeJSON(t, jsonBody(tc.row), ep, opts)
			require.Len(t, got.Rejects, 1)
			requireNoKey(t, got.Rejects[0].Raw)
			requireNoKey(t, got.Rejects[0].Reason)
			require.LessOrEqual(t, len(got.Rejects[0].Raw), 80)
		})
	}
}

// TestJSONEnvelopeMasksTheKey: an error envelope with status 200 becomes
// an *EnvelopeError without the key.
func TestJSONEnvelopeMasksTheKey(t *testing.T) {
	t.Parallel()
	k, _ := json.Marshal("Invalid API key " + secretKey)
	for name, body := range map[string]string{
		"object":      `{"meta":{"success":false,"request_id":` + string(k) + `},"error":{"type":` + string(k) + `,"message":` + string(k) + `}}`,
		"string":      `{"meta":{"success":false},"error":` + string(k) + `}`,
		"other value": `{"error":[` + string(k) + `]}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := redacting()
			opts.Allocator = newAllocator(t)
			_, err := transform.NewJSONDecoder(strings.NewReader(body), endpoint(t, "matrix"), opts)
			var env *transform.EnvelopeError
			require.ErrorAs(t, err, &env)
			requireNoKey(t, err.Error())
			requireNoKey(t, env.Type+env.Message+env.RequestID)
			require.Contains(t, err.Error(), redact.Mask)
		})
	}
}

// TestDataAndDriftMaskTheKey: a key echoed into a text value of a good row
// or into a column name is masked too.
func TestDataAndDriftMaskTheKey(t *testing.T) {
	t.Parallel()
	quoted := `"` + strings.ReplaceAll(secretKey, `"`, `""`) + `"`
	t.Run("csv", func(t *testing.T) {
		t.Parallel()
		opts := redacting()
		opts.Allocator = newAllocator(t)
		got := decodeAll(t, []byte("anchor;domains_count;"+quoted+"\n"+quoted+";1;x\nplain;2;y\n"), endpoint(t, "anchors"), opts)
		require.Empty(t, got.Rejects)
		require.Equal(t, "[REDACTED]", got.Rows[0]["anchor"])
		require.Equal(t, "plain", got.Rows[1]["anchor"])
		require.Equal(t, []string{"[REDACTED]"}, got.Drift.Unknown)
	})
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		k, _ := json.Marshal("see " + secretKey)
		opts := redacting()
		opts.Allocator = newAllocator(t)
		got := decodeJSON(t, jsonBody(`{"domain":`+string(k)+`,`+string(k)+`:1,"backlinks_counts":[]}`), endpoint(t, "matrix"), opts)
		require.Empty(t, got.Rejects)
		require.Equal(t, "see [REDACTED]", got.Rows[0]["domain"])
		require.Equal(t, []string{"see [REDACTED]"}, got.Drift.Unknown)
	})
}
