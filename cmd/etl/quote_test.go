package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/redact"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
	"github.com/seoetl/etl/push"
)

func TestLocationLabel(t *testing.T) {
	t.Parallel()
	const id = "3f2a9d0c8b7e6f5a4d3c2b1a0f9e8dc9"
	for _, tc := range []struct {
		name            string
		id, lname, city string
		want            string
	}{
		{"name and city", id, "Café Nord", "Köln", id + ` "Café Nord" (Köln)`},
		{"city with spaces", id, "Bar", "New York", id + ` "Bar" (New York)`},
		{"no city", id, "Bar", "", id + ` "Bar"`},
		{"nothing known", id, "", "", id},
		{"quotes in the name", id, `The "Best" Bar`, "Köln", id + ` "The \"Best\" Bar" (Köln)`},
		{"escape in the name", id, "Evil\x1b[2J\nName", "Köln", id + ` "Evil\x1b[2J\nName" (Köln)`},
		{"bell and parenthesis in the city", id, "Bar", "Köln\a)", id + ` "Bar" ("Köln\a)")`},
		{"not UTF-8", id, "Bar\x9b", "\x9b2J", id + ` "Bar\x9b" ("\x9b2J")`},
		{"empty id", "", "Bar", "Köln", `"" "Bar" (Köln)`},
		{"id with a space", "a b", "", "", `"a b"`},
		{"long name", id, strings.Repeat("n", 200), "", id + ` "` + strings.Repeat("n", 80) + `"... (200 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := locationLabel(tc.id, tc.lname, tc.city)
			require.Equal(t, tc.want, got)
			require.False(t, strings.ContainsFunc(got, func(r rune) bool { return r < ' ' || r == 0x7f || r == 0x9b }), "%q", got)
		})
	}
}

func TestQuoteEmpty(t *testing.T) {
	t.Parallel()
	require.Equal(t, `""`, quoteEmpty(""))
	require.Equal(t, "Main Street 5", quoteEmpty("Main Street 5"))
	require.Equal(t, `{"monday":[]}`, quoteEmpty(`{"monday":[]}`))
	require.Equal(t, `"a\x1b[2Jb"`, quoteEmpty("a\x1b[2Jb"))
	require.Equal(t, `"x\x9b"`, quoteEmpty("x\x9b"))
}

func TestPlainText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a plain text, Köln", plainText("a plain text, Köln"))
	require.Equal(t, `Evil\x1b[2J\nFORGED: UPDATED`, plainText("Evil\x1b[2J\nFORGED: UPDATED"))
	require.Equal(t, `tab\there \xff`, plainText("tab\there \xff"))
	require.Equal(t, "line one\n"+`two \a`, plainLines("line one\ntwo \a"))
}

// TestListingValuesFitALine: a diff's value and a free text (a provider's
// message, a reason quoting a value) of any length show within a line's
// bounds, cut with their length said; they were shown whole, so a
// holidayHours of a thousand entries or a provider message of 100 kB made
// one line of as many characters. A right-to-left override (U+202E),
// which would show the rest of the line reversed, shows escaped.
func TestListingValuesFitALine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Ab ", 4000)
	for _, got := range []string{quoteEmpty(long), plainText(long), plainText("x\n" + long)} {
		require.LessOrEqual(t, len(got), maxShown+20, "%.100s...", got)
		require.Regexp(t, `\.\.\. \(1200[02] bytes\)$`, got)
	}
	require.Equal(t, long[:maxShown]+"... (12000 bytes)", quoteEmpty(long))
	require.Equal(t, `"a\u202eb"`, quoteEmpty("a\u202eb"))
	require.Equal(t, `a\u202eb`, plainText("a\u202eb"))
	// Cut at a character's boundary.
	require.True(t, utf8.ValidString(plainText(strings.Repeat("é", 1000))))
}

// TestJSONLogsAreTerminalSafe: a log record whose value holds a
// right-to-left override, DEL or a C1 control (a provider's message in
// an error) is written with them escaped, as the same JSON: slog's JSON
// handler wrote them as they are, and `cat` of the log obeyed them.
func TestJSONLogsAreTerminalSafe(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	log, err := newLogger(&out, &out, "json", "info", redact.New())
	require.NoError(t, err)
	const value = "Evil \u202egnirts\x7f\u009b2J \U000e0041 Köln"
	log.Info("listings push: a request failed", "error", value)
	require.NotContains(t, out.String(), "\u202e")
	require.Contains(t, out.String(), `Evil \u202egnirts\u007f\u009b2J \udb40\udc41 Köln`)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &rec))
	require.Equal(t, value, rec["error"])
}

// TestMatchLocation: --location PATTERN of etl listings status. * and ?
// are the only wildcards, as the help says: * spans a / ("A/B Store"
// matched no "*store"), brackets are themselves ("Café [Nord]" was read
// as a character class and matched nothing), and no pattern is malformed
// ("[" matched nothing, without a word).
func TestMatchLocation(t *testing.T) {
	t.Parallel()
	p := push.Pending{LocationID: "3f2a9d0c", Name: "Café [Nord] A/B Store", City: "Köln"}
	for _, tc := range []struct {
		pattern string
		want    bool
	}{
		{"*store", true},
		{"café [nord]*", true},
		{"[nord]", true},
		{"[", true},
		{"3f2a*", true},
		{"k?ln", true},
		{"KÖLN", true},
		{"*paris*", false},
		{"nord]x", false},
		{"3f2a", true},
		{"?f2a9d0c", true},
		{"f2a9d0c?", false},
	} {
		require.Equal(t, tc.want, matchLocation(p, tc.pattern), "%q", tc.pattern)
	}
}

// bidiControls are the characters that reorder the text around them on a
// terminal (and in a browser).
const bidiControls = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

// TestNamesFromDataAreEscaped: a job or target name holding a
// right-to-left override (U+202E, which the YAML of a job spec lets
// through) shows escaped in etl run's summary (its header, FAILED and
// SKIPPED lines, the step it suggests), in etl plan's header and task
// table, and in the live progress display's task lines: they printed it
// raw, and the terminal showed the rest of the line reversed.
func TestNamesFromDataAreEscaped(t *testing.T) {
	t.Parallel()
	overview, _ := catalog.Lookup("overview")
	evil := jobspec.Task{Endpoint: overview, Target: &jobspec.Target{URL: "evil\u202egro.example", Scope: catalog.RootDomain}}
	s := &pipeline.Summary{Job: "job\u202eboj", RunID: 7, Attempt: 1, Interrupted: true, Tasks: []pipeline.TaskResult{
		{Task: evil, Err: errors.New("the API answered 500")},
		{Task: evil, Skipped: "the daily cap is reached"},
	}}
	var b bytes.Buffer
	writeSummary(&b, s, nil)
	out := b.String()
	require.False(t, strings.ContainsAny(out, bidiControls), "%q", out)
	require.Contains(t, out, `job "job\u202eboj": 2 tasks`)
	require.Contains(t, out, `FAILED overview evil\u202egro.example (ROOT_DOMAIN): the API answered 500`)
	require.Contains(t, out, `SKIPPED overview evil\u202egro.example (ROOT_DOMAIN): the daily cap is reached`)
	require.Contains(t, out, "`etl run` of job \"job\\u202eboj\" resumes it")

	p := &planning.Plan{Job: "job\u202eboj", At: cliNow, Tasks: []planning.TaskPlan{{Task: evil, Endpoint: "overview", Name: evil.String()}}}
	b.Reset()
	writePricedPlan(&b, p, true, nil)
	out = b.String()
	require.False(t, strings.ContainsAny(out, bidiControls), "%q", out)
	require.True(t, strings.HasPrefix(out, `plan of job "job\u202eboj" at 2026-11-21T03:00:00Z: `), "%q", out)
	require.Contains(t, out, `overview evil\u202egro.example (ROOT_DOMAIN)`)

	// A plain name shows as it is.
	require.Equal(t, "weekly", shownName("weekly"))
	require.Equal(t, `"a\u2066b"`, shownName("a\u2066b"))
}
