package sandbox

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

func TestCSVWriterEveryKind(t *testing.T) {
	t.Parallel()
	ts := time.Date(2024, 2, 29, 23, 59, 58, 0, time.UTC).Unix()
	row := []value{
		intV(-42), digitsV(9000), decimalV("1.27"), textV("plain"), textV("a;b"), textV(`say "hi"`),
		textV("two\nlines"), textV("cr\rhere"), textV(""), boolV(true), boolV(false), timestampV(ts),
		dateV(ts), textListV([]string{"COMMERCIAL", "INFORMATIONAL"}), textListV([]string{}), intListV([]int64{1, -2, 3}),
	}
	var buf bytes.Buffer
	w := csvWriter{w: &buf}
	require.NoError(t, w.header([]string{"h;1", "h2"}))
	require.NoError(t, w.row(row))
	want := `"h;1";h2` + "\n" +
		`-42;9000;1.27;plain;"a;b";"say ""hi""";"two` + "\n" + `lines";"cr` + "\r" + `here";;true;false;` +
		`2024-02-29T23:59:58;2024-02-29;COMMERCIAL,INFORMATIONAL;;1,-2,3` + "\n"
	require.Equal(t, want, buf.String())

	var js []byte
	for _, v := range row {
		js = v.appendJSON(js)
		js = append(js, ' ')
	}
	require.Equal(t, `-42 "9000" "1.27" "plain" "a;b" "say \"hi\"" "two\nlines" "cr\rhere" "" true false `+
		`"2024-02-29T23:59:58" "2024-02-29" ["COMMERCIAL","INFORMATIONAL"] [] [1,-2,3] `, string(js))
}

func TestJSONStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "quote\" back\\slash", "\x00\x01\x1f\t\n\r", "é ü 日本", "\u2028\u2029", "bad \xff utf8", "<&>"} {
		got := appendJSONString(nil, s)
		var back string
		require.NoError(t, json.Unmarshal(got, &back), "%q", got)
		want := strings.ToValidUTF8(s, "\uFFFD")
		require.Equal(t, want, back)
	}
}

// FuzzCSVRoundTrip checks the encoder against encoding/csv: any text cell
// comes back as it went in.
func FuzzCSVRoundTrip(f *testing.F) {
	for _, s := range []string{"", "a;b", `"`, `""x""`, "a\nb", "a;\"b\"\nc", " lead", "trail ", ",", "é;ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// encoding/csv turns \r\n inside quotes into \n and needs valid text;
		// the transform package's decoder is the one that must take the rest.
		if strings.Contains(s, "\r") || !utf8.ValidString(s) {
			t.Skip()
		}
		var buf bytes.Buffer
		w := csvWriter{w: &buf}
		require.NoError(t, w.row([]value{textV(s), intV(1), textV(s)}))
		r := csv.NewReader(&buf)
		r.Comma = ';'
		rec, err := r.Read()
		require.NoError(t, err, "%q", buf.String())
		require.Equal(t, []string{s, "1", s}, rec)
	})
}

// FuzzParseTarget checks that any url either fails cleanly or yields a chain
// whose first level is the root domain and whose effective url is on the
// host.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"example.com", "https://www.example.co.uk/a/b?c=d#e", "n5.example", "//x.y/", "a@b:1/c", "1.2.3.4", "é.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := parseTarget(s)
		if err != nil {
			return
		}
		require.NotEmpty(t, tg.host)
		require.True(t, strings.HasSuffix(tg.host, tg.root), "%q: root %q of host %q", s, tg.root, tg.host)
		for _, scope := range []string{"ROOT_DOMAIN", "SUBDOMAIN", "SUBFOLDER", "PAGE"} {
			chain, effective := tg.levels(catalog.Scope(scope))
			require.Equal(t, levelRoot, chain[0].kind)
			require.True(t, strings.HasPrefix(effective, tg.root) || strings.HasPrefix(effective, tg.host), "%q", effective)
			s, _ := newScoped(3, newClock(modelNow), tg, catalog.Scope(scope))
			require.GreaterOrEqual(t, s.c.backlinks, int64(0))
		}
	})
}
