package jobspec_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
)

var specNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestExampleSpecIsValid(t *testing.T) {
	t.Parallel()
	spec, err := jobspec.LoadSpec("../jobs.yaml", specNow)
	require.NoError(t, err)
	job, err := spec.Job("example")
	require.NoError(t, err)
	require.NotEmpty(t, job.Targets)
	require.NotNil(t, job.Keywords)
	tasks := job.Tasks(specNow)
	want := 0
	for _, es := range job.Endpoints {
		if _, ok := es.Endpoint.Param("urls"); ok {
			want += len(job.TargetSets)
		} else {
			want += len(job.Targets)
		}
	}
	require.NotZero(t, len(job.TargetSets), "the example shows target sets")
	want +=
		len(job.Keywords.Keywords) * len(job.Keywords.Countries) * max(1, len(job.Keywords.Months))
	require.NotNil(t, job.Listings, "the example pulls listings")
	want++
	require.Len(t, tasks, want)
	require.Equal(t, "listings of account demo", tasks[len(tasks)-1].String())
}

const goodSpec = `jobs:
  - name: nightly
    schedule: "0 3 * * *"
    timezone: Europe/Berlin
    targets:
      - url: example.com
        scope: ROOT_DOMAIN
      - {url: example.org/page, scope: PAGE}
    endpoints:
      overview:
      summary:
        limit: 6
        fields: [score, month_date, backlinks_count]
        date_from: 2026-01
        date_to: 2026-06
    keywords:
      keywords: [seo, "café"]
      countries: [US, DE]
      months: [2012-01, 2026-11]
`

func TestParseSpec(t *testing.T) {
	t.Parallel()
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(goodSpec), specNow)
	require.NoError(t, err)
	job, err := spec.Job("nightly")
	require.NoError(t, err)
	require.Equal(t, "Europe/Berlin", job.Timezone)
	require.Equal(t, []jobspec.Target{
		{URL: "example.com", Scope: catalog.RootDomain, Line: 6},
		{URL: "example.org/page", Scope: catalog.Page, Line: 8},
	}, job.Targets)
	require.Len(t, job.Endpoints, 2)
	sum := job.Endpoints[1]
	require.Equal(t, "summary", sum.Endpoint.Name)
	require.Equal(t, 6, sum.Limit)
	require.Equal(t, []string{"score", "month_date", "backlinks_count"}, sum.Fields)
	require.Equal(t, "2026-01", sum.DateFrom)
	require.Equal(t, []string{"2012-01", "2026-11"}, job.Keywords.Months)

	tasks := job.Tasks(specNow)
	require.Len(t, tasks, 2*2+2*2*2)
	require.Equal(t, `keyword-metrics "café" DE 2026-11`, tasks[len(tasks)-1].String())

	require.Nil(t, spec.Retention, "no retention unless the file asks")
	withRetention, err := jobspec.ParseSpec("jobs.yaml", []byte("retention:\n  keep_months: 2\n  detach: true\n"+goodSpec), specNow)
	require.NoError(t, err)
	require.Equal(t, &jobspec.RetentionSpec{Line: 2, KeepMonths: 2, Detach: true}, withRetention.Retention)
	runDetail, err := jobspec.ParseSpec("jobs.yaml", []byte("retention: {keep_run_detail: 90d}\n"+goodSpec), specNow)
	require.NoError(t, err)
	require.Equal(t, &jobspec.RetentionSpec{Line: 1, KeepRunDetail: 90 * 24 * time.Hour}, runDetail.Retention, "keep_run_detail alone: the data is kept")

	_, err = spec.Job("missing")
	require.ErrorContains(t, err, `no job named "missing" (jobs: "nightly")`)
	_, err = spec.Job("nigthly")
	require.ErrorContains(t, err, `no job named "nigthly"; did you mean "nightly"? (jobs: "nightly")`)
}

func TestParseSpecErrors(t *testing.T) {
	t.Parallel()
	job := func(body string) string {
		return "jobs:\n  - name: j\n" + body
	}
	for _, tc := range []struct {
		name string
		spec string
		want []string // each a problem, "file:line: message" (message may be a prefix)
	}{
		{"not yaml", "jobs: [", []string{"jobs.yaml:1: not valid YAML"}},
		{"empty", "", []string{"jobs.yaml:1: the file is empty"}},
		{"only comments", "# jobs: later\n", []string{"jobs.yaml:1: the file is empty"}},
		{"no jobs", "other: 1\n", []string{`jobs.yaml:1: unknown top-level key "other"`, "jobs.yaml:1: missing top-level `jobs:` list"}},
		{"unknown endpoint", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      linkz: {}\n"),
			[]string{`jobs.yaml:5: unknown endpoint "linkz"`}},
		{"keyword metrics under endpoints", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      keyword-metrics: {}\n"),
			[]string{`jobs.yaml:5: unknown endpoint "keyword-metrics"`}},
		{"scope not allowed", job("    targets:\n      - url: a.com/blog\n        scope: SUBFOLDER\n    endpoints:\n      summary: {}\n"),
			[]string{`jobs.yaml:4: target "a.com/blog" has scope SUBFOLDER, which summary does not allow (allowed: ROOT_DOMAIN, SUBDOMAIN, PAGE; summary is at line 7)`}},
		{"unknown scope", job("    targets:\n      - url: a.com\n        scope: DOMAIN\n    endpoints: {overview: {}}\n"),
			[]string{`jobs.yaml:5: unknown scope "DOMAIN" (expected one of`}},
		{"no scope", job("    targets:\n      - url: a.com\n    endpoints: {overview: {}}\n"),
			[]string{`jobs.yaml:4: target "a.com" has no scope (one of ROOT_DOMAIN, SUBDOMAIN, SUBFOLDER, PAGE)`}},
		{"unknown field", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      summary:\n        fields: [score, scor]\n"),
			[]string{`jobs.yaml:6: summary has no field "scor"`}},
		{"option the endpoint lacks", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      overview:\n        limit: 5\n"),
			[]string{"jobs.yaml:6: overview takes no limit"}},
		{"bad limit", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      summary:\n        limit: 0\n"),
			[]string{"jobs.yaml:6: limit must be between 1 and 2147483647, got 0"}},
		{"limit not a number", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      summary:\n        limit: many\n"),
			[]string{`jobs.yaml:6: limit must be an integer, got "many"`}},
		{"date range reversed", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      summary:\n        date_from: 2026-05\n        date_to: 2026-01\n"),
			[]string{"jobs.yaml:6: date_from 2026-05 is after date_to 2026-01"}},
		{"unknown country", job("    keywords:\n      keywords: [seo]\n      countries: [US, GB]\n"),
			[]string{`jobs.yaml:5: unknown country "GB"`}},
		{"month too old", job("    keywords:\n      keywords: [seo]\n      countries: [US]\n      months: [2011-12]\n"),
			[]string{"jobs.yaml:6: month 2011-12 is before 2012-01"}},
		{"month in the future", job("    keywords:\n      keywords: [seo]\n      countries: [US]\n      months: [2026-12]\n"),
			[]string{"jobs.yaml:6: month 2026-12 is after the current month 2026-11"}},
		{"month malformed", job("    keywords:\n      keywords: [seo]\n      countries: [US]\n      months: [2026-13]\n"),
			[]string{`jobs.yaml:6: month "2026-13" is not a month`}},
		{"keyword too long", job("    keywords:\n      keywords: [" + strings.Repeat("k", 256) + "]\n      countries: [US]\n"),
			[]string{"jobs.yaml:4: keyword", "is 256 characters; the API accepts 1 to 255"}},
		{"url too long", job("    targets: [{url: " + strings.Repeat("u", 2001) + ", scope: PAGE}]\n    endpoints: {overview: {}}\n"),
			[]string{"jobs.yaml:3: target url is 2001 characters; the API accepts at most 2000"}},
		{"bad schedule", "jobs:\n  - name: j\n    schedule: every night\n    keywords: {keywords: [a], countries: [US]}\n",
			[]string{`jobs.yaml:3: schedule "every night" is not a cron expression`}},
		{"@every", "jobs:\n  - name: j\n    schedule: \"@every 1h\"\n    keywords: {keywords: [a], countries: [US]}\n",
			[]string{`jobs.yaml:3: schedule "@every 1h" is not a cron expression`, "@every is not supported"}},
		{"catch_up", "jobs:\n  - name: j\n    catch_up: always\n    keywords: {keywords: [a], countries: [US]}\n",
			[]string{`jobs.yaml:3: catch_up "always": want once`}},
		{"duplicate job", "jobs:\n  - name: j\n    keywords: {keywords: [a], countries: [US]}\n  - name: j\n    keywords: {keywords: [a], countries: [US]}\n",
			[]string{`jobs.yaml:4: job "j" is defined twice (first at line 2)`}},
		{"nothing to collect", "jobs:\n  - name: j\n", []string{`jobs.yaml:2: job "j" collects nothing`}},
		{"unknown job key", job("    target: []\n    keywords: {keywords: [a], countries: [US]}\n"),
			[]string{`jobs.yaml:3: unknown job key "target"`}},
		{"max_rows without limit", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      overview:\n        max_rows: 5\n"),
			[]string{"jobs.yaml:6: overview takes no limit, so max_rows cannot cap it"}},
		{"fields without the key", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      summary:\n        fields: [score]\n"),
			[]string{"jobs.yaml:6: summary's fields must include month_date"}},
		{"duplicate keyword", job("    keywords:\n      keywords: [seo, seo]\n      countries: [US, DE, US]\n      months: [2026-01, 2026-01]\n"),
			[]string{`jobs.yaml:4: keyword "seo" is listed twice`, `jobs.yaml:5: country "US" is listed twice`, `jobs.yaml:6: month "2026-01" is listed twice`}},
		{"bad filter", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      links:\n        filter: domain_score >> 5\n"),
			[]string{`jobs.yaml:6: filter of links: filter: at column`}},
		{"filter on another endpoint's field", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      anchors:\n        filter: \"page_score > 5\"\n"),
			[]string{`jobs.yaml:6: filter of anchors: filter: at column 1:`, `page_score`}},
		{"retention problems", "retention: {keep_months: 0, detach: maybe, drop: true}\njobs:\n  - name: j\n    keywords: {keywords: [a], countries: [US]}\n",
			[]string{"jobs.yaml:1: keep_months must be between 1 and 1200, got 0", `jobs.yaml:1: detach must be true or false, got "maybe"`, `jobs.yaml:1: unknown retention key "drop"`}},
		{"retention without keep_months", "retention: {detach: true}\njobs:\n  - name: j\n    keywords: {keywords: [a], countries: [US]}\n",
			[]string{"jobs.yaml:1: retention needs keep_months (at least 1: the months of fetched data to keep, the current one included) or keep_run_detail"}},
		{"export_to without keep_months", "retention: {keep_run_detail: 30d, export_to: /srv/lake}\njobs:\n  - name: j\n    keywords: {keywords: [a], countries: [US]}\n",
			[]string{"jobs.yaml:1: export_to exports what keep_months drops, and this retention sets no keep_months: nothing would ever be exported"}},
		{"keep_run_detail too short", "retention: {keep_run_detail: 12h}\njobs:\n  - name: j\n    keywords: {keywords: [a], countries: [US]}\n",
			[]string{`jobs.yaml:1: keep_run_detail "12h" is less than 1d: runs keep their whole detail at least a day`}},
		{"keep_run_detail not an age", "retention:\n  keep_run_detail: 90 days\njobs:\n  - name: j\n    keywords: {keywords: [a], countries: [US]}\n",
			[]string{`jobs.yaml:2: keep_run_detail "90 days" is not an age: write a number with a unit, such as 20h, 7d, 1d12h or 90m (w, d, h, m, s)`}},
		{"keep_run_detail 0", "retention: {keep_months: 1, keep_run_detail: 0}\njobs:\n  - name: j\n    keywords: {keywords: [a], countries: [US]}\n",
			[]string{`jobs.yaml:1: keep_run_detail "0" is not an age`}},
		{"keep_run_detail past a century", "retention: {keep_run_detail: 99999d}\njobs:\n  - name: j\n    keywords: {keywords: [a], countries: [US]}\n",
			[]string{`jobs.yaml:1: keep_run_detail "99999d" is more than 36600d, the most it may be`}},
		{"incremental problems", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      overview: {incremental: first_seen_at}\n      links: {incremental: domain_score, order_by: page_score, direction: DESC}\n      anchors: {incremental: first_seen}\n"),
			[]string{"jobs.yaml:5: overview cannot be pulled incrementally", "jobs.yaml:6: incremental needs a timestamp field of links; domain_score is not one",
				"jobs.yaml:6: incremental pulls are ordered by domain_score; order_by page_score cannot apply",
				"jobs.yaml:6: incremental pulls are ordered by domain_score ascending; direction DESC cannot apply",
				`jobs.yaml:7: anchors has no field "first_seen" to pull incrementally by`}},
		{"matrix without target sets", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      matrix: {}\n"),
			[]string{`jobs.yaml:2: job "j" collects matrix but has no target_sets to ask about`}},
		{"target sets without a set endpoint", job("    targets: [{url: a.com, scope: PAGE}]\n    target_sets:\n      - {name: s, scope: PAGE, urls: [a.com]}\n    endpoints: {overview: {}}\n"),
			[]string{`jobs.yaml:5: target_sets are asked about by comparison and matrix only, and job "j" collects neither`}},
		{"too many urls for matrix", job("    target_sets:\n      - name: rivals\n        scope: ROOT_DOMAIN\n        urls: [a.com, b.com, c.com, d.com, e.com, f.com, g.com]\n    endpoints:\n      comparison: {}\n      matrix: {}\n"),
			[]string{`jobs.yaml:4: target set "rivals" has 7 urls; matrix takes at most 6 (matrix is at line 9)`}},
		{"too many urls for comparison", job("    target_sets:\n      - {name: s, scope: PAGE, urls: [a, b, c, d, e, f, g, h, i, j, k]}\n    endpoints: {comparison: {}}\n"),
			[]string{`jobs.yaml:4: target set "s" has 11 urls; comparison takes at most 10`}},
		{"set scope not allowed", job("    target_sets:\n      - {name: s, scope: SUBFOLDER, urls: [a.com/blog]}\n    endpoints: {matrix: {}}\n"),
			[]string{`jobs.yaml:4: target set "s" has scope SUBFOLDER, which matrix does not allow`}},
		{"set problems", job("    target_sets:\n      - {scope: PAGE, urls: [\"a.com/x,y\", a.com, a.com]}\n      - {name: t, scope: PAGE, urls: []}\n      - {name: t, scope: PAGE, urls: [b.com], size: 3}\n    endpoints: {comparison: {}}\n"),
			[]string{"jobs.yaml:4: target set has no name", `jobs.yaml:4: url "a.com/x,y" of target set holds a comma`, `jobs.yaml:4: url "a.com" is listed twice`,
				`jobs.yaml:5: target set "t" has no urls`, `jobs.yaml:6: unknown target set key "size"`, `jobs.yaml:6: target set "t" is defined twice (first at line 5)`}},
		{"comparison fields without url", job("    target_sets: [{name: s, scope: PAGE, urls: [a.com]}]\n    endpoints:\n      comparison: {fields: [score, month_date]}\n"),
			[]string{"jobs.yaml:5: comparison's fields must include url"}},
		{"matrix filter on an unknown field", job("    target_sets: [{name: s, scope: PAGE, urls: [a.com]}]\n    endpoints:\n      matrix: {filter: \"score > 5\"}\n"),
			[]string{"jobs.yaml:5: filter of matrix: filter: at column 1:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := jobspec.ParseSpec("jobs.yaml", []byte(tc.spec), specNow)
			var specErr *jobspec.SpecError
			require.True(t, errors.As(err, &specErr), "want a *SpecError, got %v", err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestParseSpecBounds: every number of a job spec has an upper bound, and
// a number past it, or past what an int64 holds, is refused at its line
// with both bounds in the message, before anything runs.
func TestParseSpecBounds(t *testing.T) {
	t.Parallel()
	links := func(opts string) string {
		return "jobs:\n  - name: j\n    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      links: {" + opts + "}\n"
	}
	keywords := "    keywords: {keywords: [a], countries: [US]}\n"
	for _, tc := range []struct {
		name string
		spec string
		want string // the one problem, whole
	}{
		{"limit past int32", links("limit: 409927646082434481"),
			"jobs.yaml:5: limit must be between 1 and 2147483647, got 409927646082434481"},
		{"limit just past int32", links("limit: 2147483648"),
			"jobs.yaml:5: limit must be between 1 and 2147483647, got 2147483648"},
		{"limit past int64", links("limit: 99999999999999999999"),
			"jobs.yaml:5: limit must be between 1 and 2147483647, got 99999999999999999999"},
		{"limit below int64", links("limit: -99999999999999999999"),
			"jobs.yaml:5: limit must be between 1 and 2147483647, got -99999999999999999999"},
		{"max_rows past int32", links("max_rows: 409927646082434481"),
			"jobs.yaml:5: max_rows must be between 1 and 2147483647, got 409927646082434481"},
		{"max_rows past int64", links("max_rows: 18446744073709551616"),
			"jobs.yaml:5: max_rows must be between 1 and 2147483647, got 18446744073709551616"},
		{"summary limit", "jobs:\n  - name: j\n    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      summary:\n        limit: 3000000000\n",
			"jobs.yaml:6: limit must be between 1 and 2147483647, got 3000000000"},
		{"per_run", "jobs:\n  - name: j\n    budget: {per_run: 1000000000000001}\n" + keywords,
			"jobs.yaml:3: per_run must be between 1 and 1000000000000000 API units, got 1000000000000001"},
		{"job monthly past int64", "jobs:\n  - name: j\n    budget:\n      monthly: 9_223_372_036_854_775_808\n" + keywords,
			"jobs.yaml:4: monthly must be between 1 and 1000000000000000 API units, got 9_223_372_036_854_775_808"},
		{"daily", "budget:\n  daily: 9223372036854775807\njobs:\n  - name: j\n" + keywords,
			"jobs.yaml:2: daily must be between 1 and 1000000000000000 API units, got 9223372036854775807"},
		{"installation monthly", "budget: {monthly: 2_000_000_000_000_000}\njobs:\n  - name: j\n" + keywords,
			"jobs.yaml:1: monthly must be between 1 and 1000000000000000 API units, got 2_000_000_000_000_000"},
		{"cap of 0", "jobs:\n  - name: j\n    budget: {per_run: 0}\n" + keywords,
			"jobs.yaml:3: per_run must be between 1 and 1000000000000000 API units, got 0 (leave it out for no cap)"},
		{"keep_months", "retention:\n  keep_months: 1201\njobs:\n  - name: j\n" + keywords,
			"jobs.yaml:2: keep_months must be between 1 and 1200, got 1201"},
		{"keep_months past int64", "retention:\n  keep_months: 99999999999999999999\njobs:\n  - name: j\n" + keywords,
			"jobs.yaml:2: keep_months must be between 1 and 1200, got 99999999999999999999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := jobspec.ParseSpec("jobs.yaml", []byte(tc.spec), specNow)
			var specErr *jobspec.SpecError
			require.True(t, errors.As(err, &specErr), "want a *SpecError, got %v", err)
			require.EqualError(t, err, tc.want)
		})
	}

	// The bounds themselves are accepted.
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(`budget: {daily: 1000000000000000, monthly: 1_000_000_000_000_000}
retention: {keep_months: 1200}
jobs:
  - name: j
    budget: {per_run: 1000000000000000, monthly: 1000000000000000}
    targets: [{url: a.com, scope: PAGE}]
    endpoints:
      links: {limit: 2147483647, max_rows: 2147483647}
`), specNow)
	require.NoError(t, err)
	job := spec.Jobs[0]
	require.Equal(t, catalog.MaxLimit, job.Endpoints[0].Limit)
	require.Equal(t, catalog.MaxTaskRows, job.Endpoints[0].MaxRows)
	require.Equal(t, budget.Caps{PerRun: catalog.MaxUnits, JobMonthly: catalog.MaxUnits, Daily: catalog.MaxUnits, Monthly: catalog.MaxUnits}, job.Caps)
	require.Equal(t, load.MaxKeepMonths, spec.Retention.KeepMonths)
}

// TestParseSpecHostile: a spec mistyped, or written to mislead, is refused
// with one problem per mistake, each at the line it is on, quoting what it
// echoes (one line per problem, however long or strange the value), and
// saying what to write instead.
func TestParseSpecHostile(t *testing.T) {
	t.Parallel()
	for _, tc := range hostileSpecs() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := jobspec.ParseSpec("jobs.yaml", []byte(tc.spec), specNow)
			var specErr *jobspec.SpecError
			require.True(t, errors.As(err, &specErr), "want a *SpecError, got %v", err)
			if strings.HasSuffix(tc.want, "(fields: ") {
				require.True(t, strings.HasPrefix(err.Error(), tc.want), "got %s", err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}

type hostileSpec struct {
	name string
	spec string
	want string // every problem, whole (or its start, when it ends in "(fields: ")
}

// hostileSpecs are the cases of TestParseSpecHostile, which also seed
// FuzzParseSpec.
func hostileSpecs() []hostileSpec {
	kw := "    keywords: {keywords: [a], countries: [US]}\n"
	job := func(body string) string { return "jobs:\n  - name: j\n" + body }
	mib := strings.Repeat("x", 1<<20)
	const iana = "; write an IANA name such as UTC or Europe/Berlin"
	return []hostileSpec{
		// Syntax errors at their own line, never line 0.
		{"endpoints indented as a list item", job("    targets: [{url: a.com, scope: PAGE}]\n" + kw + "\n  endpoints:\n      overview:\n"),
			"jobs.yaml:6: not valid YAML: did not find expected '-' indicator; " + indentFix},
		{"endpoints indented by three", job("    targets: [{url: a.com, scope: PAGE}]\n" + kw + "   endpoints:\n      overview:\n"),
			"jobs.yaml:5: not valid YAML: did not find expected '-' indicator; " + indentFix},
		{"key indented past its siblings", job("    targets: [{url: a.com, scope: PAGE}]\n      endpoints: {overview: {}}\n"),
			"jobs.yaml:4: not valid YAML: did not find expected key; " + indentFix},
		{"colon in a value", job(kw + "    catch_up: once: daily\n"),
			"jobs.yaml:4: not valid YAML: mapping values are not allowed in this context; " + colonFix},
		{"key past 1024 characters", job(kw + "    " + strings.Repeat("k", 1025) + ": 1\n"),
			"jobs.yaml:4: not valid YAML: could not find expected ':'"},
		{"unclosed list", "jobs:\n  - name: j\n    keywords: {keywords: [a, countries: [US]}\n    schedule: \"@daily\"\n",
			"jobs.yaml:3: not valid YAML: did not find expected ',' or ']'"},
		{"unclosed quote", "jobs:\n  - name: \"j\n    keywords: {keywords: [a], countries: [US]}\n",
			"jobs.yaml:2: not valid YAML: found unexpected end of stream; close the quoted value that starts on this line"},
		{"unquoted cron", job("    schedule: * * * * *\n" + kw),
			"jobs.yaml:3: not valid YAML: did not find expected alphabetic or numeric character; " + starFix},
		{"tab", job("\tkeywords: {keywords: [a], countries: [US]}\n"),
			"jobs.yaml:3: not valid YAML: found a tab character that violates indentation; indent with spaces: YAML does not allow tabs there"},
		{"unknown anchor", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      overview: *opts\n"),
			"jobs.yaml:5: not valid YAML: alias *opts refers to no anchor; define it first (&opts), or quote the value if the * is meant literally"},
		{"latin-1", job("    keywords: {keywords: [caf\xe9], countries: [US]}\n"),
			"jobs.yaml:3: byte 0xe9 at column 30 is not UTF-8; save the file as UTF-8"},
		{"invalid UTF-8 in a comment", "# \xff\n" + job(kw),
			"jobs.yaml:1: byte 0xff at column 3 is not UTF-8; save the file as UTF-8"},
		{"control character", job("    keywords: {keywords: [a\x01b], countries: [US]}\n"),
			"jobs.yaml:3: control character U+0001 at column 28: YAML does not allow it; remove it"},
		{"NUL byte", job("    keywords: {keywords: [a], countries: [US]}\x00\n"),
			"jobs.yaml:3: NUL byte (U+0000) at column 47: YAML does not allow it; remove it"},
		{"escape character", job("    name: \x1b[2J\n" + kw),
			"jobs.yaml:3: control character U+001B at column 11: YAML does not allow it; remove it"},

		// A key given twice, a second document.
		{"endpoints twice", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      overview:\n    endpoints:\n      summary:\n"),
			`jobs.yaml:6: key "endpoints" is given twice in one mapping (first at line 4); YAML would silently keep only the second: merge the two or delete one`},
		{"name twice", job(kw + "    name: k\n"),
			`jobs.yaml:4: key "name" is given twice in one mapping (first at line 2); YAML would silently keep only the second: merge the two or delete one`},
		{"jobs twice", "jobs:\n  - name: j\n" + kw + "jobs:\n  - name: k\n" + kw,
			`jobs.yaml:4: key "jobs" is given twice in one mapping (first at line 1); YAML would silently keep only the second: merge the two or delete one`},
		{"option twice", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      links:\n        limit: 10\n        limit: 1000\n"),
			`jobs.yaml:7: key "limit" is given twice in one mapping (first at line 6); YAML would silently keep only the second: merge the two or delete one`},
		{"budget key twice", job("    budget: {per_run: 10, per_run: 100000}\n" + kw),
			`jobs.yaml:3: key "per_run" is given twice in one mapping (first at line 3); YAML would silently keep only the second: merge the two or delete one`},
		{"keywords key twice", job("    keywords: {keywords: [a], countries: [US], keywords: [b]}\n"),
			`jobs.yaml:3: key "keywords" is given twice in one mapping (first at line 3); YAML would silently keep only the second: merge the two or delete one`},
		{"target key twice", job("    targets:\n      - url: a.com\n        scope: PAGE\n        url: b.com\n    endpoints: {overview: {}}\n"),
			`jobs.yaml:6: key "url" is given twice in one mapping (first at line 4); YAML would silently keep only the second: merge the two or delete one`},
		{"second document", job(kw) + "---\n" + job(kw),
			`jobs.yaml:4: "---" starts a second YAML document, which would be ignored; a job spec is one document: put every job under its one jobs: list`},
		{"document end then more", job(kw) + "...\n" + job(kw),
			`jobs.yaml:4: "..." ends the YAML document, but the file goes on and the rest would be ignored; a job spec is one document: remove the "..."`},
		{"document end then a second document", job(kw) + "...\n---\n" + job(kw),
			`jobs.yaml:4: "..." ends the YAML document, but the file goes on and the rest would be ignored; a job spec is one document: remove the "..."`},

		// NUL, however written, is refused with its line and field.
		{"escaped NUL in a keyword", job("    keywords: {keywords: [\"a\\0b\"], countries: [US]}\n"),
			`jobs.yaml:3: an item of keywords holds a NUL character ("a\x00b"); remove it: PostgreSQL cannot store NUL in text`},
		{"NUL as \\x00 in a url", job("    targets: [{url: \"a.com/\\x00\", scope: PAGE}]\n    endpoints: {overview: {}}\n"),
			`jobs.yaml:3: url holds a NUL character ("a.com/\x00"); remove it: PostgreSQL cannot store NUL in text`},
		{"NUL as \\u0000 in a name", "jobs:\n  - name: \"j\\u0000\"\n" + kw,
			`jobs.yaml:2: name holds a NUL character ("j\x00"); remove it: PostgreSQL cannot store NUL in text`},
		{"NUL in a filter", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      links: {filter: \"anchor = 'a\\0'\"}\n"),
			`jobs.yaml:5: filter holds a NUL character ("anchor = 'a\x00'"); remove it: PostgreSQL cannot store NUL in text`},
		{"NUL in a key", job("    \"na\\0me\": k\n" + kw),
			`jobs.yaml:3: the key "na\x00me" holds a NUL character; remove it: PostgreSQL cannot store NUL in text`},

		// Echoed values are quoted and cut.
		{"forged line", job("    timezone: \"X\\njobs.yaml:1: everything is fine\"\n" + kw),
			`jobs.yaml:3: timezone "X\njobs.yaml:1: everything is fine" is not a time zone this machine knows` + iana},
		{"1 MiB schedule", job("    schedule: \"" + mib + "\"\n" + kw),
			`jobs.yaml:3: schedule "` + strings.Repeat("x", 80) + `"... (1048576 bytes) is not a cron expression (minute hour day-of-month month day-of-week, optionally seconds first, or @daily, @hourly...): expected 5 to 6 fields, found 1`},
		{"1 MiB catch_up", job("    catch_up: " + mib + "\n" + kw),
			`jobs.yaml:3: catch_up "` + strings.Repeat("x", 80) + `"... (1048576 bytes): want once (run once for the ticks missed while the scheduler was down) or skip`},
		{"1 MiB limit", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints: {links: {limit: " + strings.Repeat("9", 1<<20) + "}}\n"),
			`jobs.yaml:4: limit must be between 1 and 2147483647, got "` + strings.Repeat("9", 80) + `"... (1048576 bytes)`},
		{"quotes and escapes", job("    catch_up: \"\\\"\\u00e9\\u202e\\t\"\n" + kw),
			`jobs.yaml:3: catch_up "\"é\u202e\t": want once (run once for the ticks missed while the scheduler was down) or skip`},
		{"newline in a url", job("    targets: [{url: \"a.com\\nb\", scope: SUBFOLDER}]\n    endpoints: {summary: {}}\n"),
			"jobs.yaml:3: url holds a control character (\"a.com\\nb\"); names, urls and keywords are one line of printable text\n" +
				`jobs.yaml:3: target "a.com\nb" has scope SUBFOLDER, which summary does not allow (allowed: ROOT_DOMAIN, SUBDOMAIN, PAGE; summary is at line 4)`},
		{"escape in a cron field", job("    schedule: \"0 3 * * MON\\x1b[2J\"\n" + kw),
			`jobs.yaml:3: schedule "0 3 * * MON\x1b[2J" is not a cron expression (minute hour day-of-month month day-of-week, optionally seconds first, or @daily, @hourly...): field "MON\x1b[2J" is not a number or a name (JAN-DEC, SUN-SAT)`},

		// A job does not depend on the machine's zone, and fires.
		{"timezone Local", job("    timezone: Local\n" + kw),
			`jobs.yaml:3: timezone "Local" is the zone of whatever machine runs the job` + iana},
		{"timezone empty", job("    timezone: \"\"\n" + kw),
			`jobs.yaml:3: timezone is empty` + iana + ", or leave it out for UTC"},
		{"timezone null", job("    timezone:\n" + kw),
			`jobs.yaml:3: timezone is empty` + iana + ", or leave it out for UTC"},
		{"30 February", job("    schedule: \"0 0 30 2 *\"\n" + kw),
			`jobs.yaml:3: schedule "0 0 30 2 *" never fires: no time in the next five years matches it; fix the day of month or the month (a day the month never has, such as 30 February?)`},
		{"31 April in Berlin", job("    schedule: \"0 0 31 4 *\"\n    timezone: Europe/Berlin\n" + kw),
			`jobs.yaml:3: schedule "0 0 31 4 *" never fires: no time in the next five years matches it; fix the day of month or the month (a day the month never has, such as 30 February?)`},

		// Did you mean, once.
		{"endpoint typo", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      overveiw:\n"),
			`jobs.yaml:5: unknown endpoint "overveiw"; did you mean "overview"? (backlink endpoints: ` + strings.Join(backlinkNames(), ", ") + ")"},
		{"job key typo", job("    schedul: \"@daily\"\n" + kw),
			`jobs.yaml:3: unknown job key "schedul"; did you mean "schedule"? (expected: name, schedule, timezone, catch_up, targets, target_sets, endpoints, keywords, listings, budget, account, max_age)`},
		{"scope typo", job("    targets:\n      - url: a.com\n        scope: ROOT_DOMIAN\n    endpoints: {overview: {}}\n"),
			`jobs.yaml:5: unknown scope "ROOT_DOMIAN"; did you mean "ROOT_DOMAIN"? (expected one of ROOT_DOMAIN, SUBDOMAIN, SUBFOLDER, PAGE)`},
		{"set scope typo", job("    target_sets: [{name: s, scope: page, urls: [a.com]}]\n    endpoints: {comparison: {}}\n"),
			`jobs.yaml:3: unknown scope "page"; did you mean "PAGE"? (expected one of ROOT_DOMAIN, SUBDOMAIN, SUBFOLDER, PAGE)`},
		{"top-level typo", "job:\n  - name: j\n" + kw,
			`jobs.yaml:1: unknown top-level key "job"; did you mean "jobs"? (expected: jobs, retention, budget, unit_price)`},
		{"option typo", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      links: {limt: 5}\n"),
			`jobs.yaml:5: unknown option "limt" of links; did you mean "limit"? (options: fields, filter, order_by, direction, limit, max_rows, date_from, date_to, incremental, max_age where the endpoint takes them)`},
		{"budget typo", job("    budget: {per_rum: 5}\n" + kw),
			`jobs.yaml:3: unknown key "per_rum" of a job's budget; did you mean "per_run"? (expected: monthly, per_run, each a number of API units)`},
		{"keywords typo", job("    keywords: {keywords: [a], countrys: [US]}\n"),
			`jobs.yaml:3: unknown keywords key "countrys"; did you mean "countries"? (expected: keywords, countries, months, max_age)`},
		{"target key typo", job("    targets: [{url: a.com, scpe: PAGE}]\n    endpoints: {overview: {}}\n"),
			`jobs.yaml:3: unknown target key "scpe"; did you mean "scope"? (expected: url, scope)`},
		{"retention typo", "retention: {keep_month: 2}\n" + job(kw),
			`jobs.yaml:1: unknown retention key "keep_month"; did you mean "keep_months"? (expected: keep_months, detach, keep_run_detail, export_to)`},
		{"retention export_to empty", "retention: {keep_months: 1, export_to: \"\"}\n" + job(kw),
			`jobs.yaml:1: export_to must be a folder, got an empty string`},
		{"endpoints typo", job("    targets: [{url: a.com, scope: PAGE}]\n    endpionts: {overview: {}}\n"),
			`jobs.yaml:4: unknown job key "endpionts"; did you mean "endpoints"? (expected: name, schedule, timezone, catch_up, targets, target_sets, endpoints, keywords, listings, budget, account, max_age)`},
		{"name typo", "jobs:\n  - nmae: j\n" + kw,
			`jobs.yaml:2: unknown job key "nmae"; did you mean "name"? (expected: name, schedule, timezone, catch_up, targets, target_sets, endpoints, keywords, listings, budget, account, max_age)`},
		{"no suggestion", job("    owner: me\n" + kw),
			`jobs.yaml:3: unknown job key "owner" (expected: name, schedule, timezone, catch_up, targets, target_sets, endpoints, keywords, listings, budget, account, max_age)`},
		{"field typo", job("    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      summary: {fields: [month_date, backlink_count]}\n"),
			`jobs.yaml:5: summary has no field "backlink_count"; did you mean "backlinks_count"? (fields: `},
	}
}

// The fixes that syntax errors of one kind end in.
const (
	indentFix = "check this line's indentation: the keys of one mapping line up, and so do the dashes of one list"
	colonFix  = `quote a value that holds ": ", or check this line's indentation`
	starFix   = `a value that starts with * or & must be quoted (schedule: "* * * * *")`
)

func backlinkNames() []string {
	var names []string
	for _, e := range catalog.All() {
		if e.PerTarget || e.PerSet {
			names = append(names, e.Name)
		}
	}
	return names
}

// TestParseSpecAccepts: what the checks of TestParseSpecHostile must not
// refuse.
func TestParseSpecAccepts(t *testing.T) {
	t.Parallel()
	kw := "    keywords: {keywords: [a], countries: [US]}\n"
	for _, tc := range []struct {
		name string
		spec string
	}{
		{"document start", "---\njobs:\n  - name: j\n" + kw},
		{"document start and end", "---\njobs:\n  - name: j\n" + kw + "...\n"},
		{"document end and a comment", "jobs:\n  - name: j\n" + kw + "...\n# the end\n"},
		{"an empty document after", "jobs:\n  - name: j\n" + kw + "---\n"},
		{"byte order mark", "\ufeffjobs:\n  - name: j\n" + kw},
		{"29 February", "jobs:\n  - name: j\n    schedule: \"0 0 29 2 *\"\n" + kw},
		{"the same key in two mappings", "jobs:\n  - name: j\n" + kw + "  - name: k\n" + kw},
		{"CRLF", "jobs:\r\n  - name: j\r\n    keywords: {keywords: [a], countries: [US]}\r\n"},
		{"UTF-16", "\xff\xfe" + utf16le("jobs:\n  - name: j\n"+kw)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, err := jobspec.ParseSpec("jobs.yaml", []byte(tc.spec), specNow)
			require.NoError(t, err)
			require.Equal(t, "j", spec.Jobs[0].Name)
		})
	}
}

func utf16le(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
		b.WriteByte(0)
	}
	return b.String()
}

// FuzzParseSpec: any input is either a spec or a *SpecError with file:line
// problems, each at a line of the file and on one line of its own (no
// control character of the input reaches a message); never a panic.
func FuzzParseSpec(f *testing.F) {
	for _, tc := range hostileSpecs() {
		if len(tc.spec) <= 64<<10 {
			f.Add([]byte(tc.spec))
		}
	}
	f.Add([]byte(goodSpec))
	f.Add([]byte("jobs:\n  - name: j\n    keywords: {keywords: [a], countries: [US]}\n"))
	f.Add([]byte("jobs: [1, [2], {a: b}]"))
	f.Add([]byte("jobs:\n  - targets: x\n    endpoints: [overview]\n"))
	f.Add([]byte("unit_price: {per: 1_000_000, amount: \"0.000050\", currency: USD}\njobs:\n  - name: j\n    keywords: {keywords: [a], countries: [US]}\n"))
	f.Add([]byte("budget: {daily: 99999999999999999999}\nretention: {keep_months: 1201}\njobs:\n  - name: j\n    targets: [{url: a.com, scope: PAGE}]\n    endpoints: {links: {limit: 409927646082434481, max_rows: 2147483648}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := jobspec.ParseSpec("f.yaml", data, specNow)
		if err != nil {
			var specErr *jobspec.SpecError
			if !errors.As(err, &specErr) || len(specErr.Problems) == 0 {
				t.Fatalf("error is not a *SpecError with problems: %v", err)
			}
			lines := 1
			for _, br := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
				lines += bytes.Count(data, []byte(br))
			}
			for _, p := range specErr.Problems {
				if !strings.HasPrefix(p.String(), "f.yaml:") {
					t.Fatalf("problem without file:line: %s", p)
				}
				if p.Line < 1 || p.Line > lines {
					t.Fatalf("problem at line %d of a file of %d lines: %s", p.Line, lines, p)
				}
				if i := strings.IndexFunc(p.Msg, unicode.IsControl); i >= 0 {
					t.Fatalf("problem with a control character at byte %d: %q", i, p.Msg)
				}
			}
			return
		}
		for _, j := range spec.Jobs {
			_ = j.Tasks(specNow)
		}
	})
}

func TestTargetSetTasks(t *testing.T) {
	t.Parallel()
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(`jobs:
  - name: gap
    target_sets:
      - name: rivals
        scope: ROOT_DOMAIN
        urls: [example.com, rival-a.example, rival-b.example]
      - {name: pages, scope: PAGE, urls: [example.com/a, example.com/b]}
    endpoints:
      comparison: {}
      matrix: {limit: 50, max_rows: 120, filter: "matches_count >= 2"}
`), specNow)
	require.NoError(t, err)
	job, err := spec.Job("gap")
	require.NoError(t, err)
	require.Equal(t, []jobspec.TargetSet{
		{Name: "rivals", Scope: catalog.RootDomain, URLs: []string{"example.com", "rival-a.example", "rival-b.example"}, Line: 4},
		{Name: "pages", Scope: catalog.Page, URLs: []string{"example.com/a", "example.com/b"}, Line: 7},
	}, job.TargetSets)
	tasks := job.Tasks(specNow)
	var names []string
	for _, task := range tasks {
		names = append(names, task.String())
	}
	require.Equal(t, []string{
		"comparison set rivals (ROOT_DOMAIN)", "comparison set pages (PAGE)",
		"matrix set rivals (ROOT_DOMAIN)", "matrix set pages (PAGE)",
	}, names)
}

// TestNamesAreOneLine: a job name, a target url or a keyword with a
// control character (a newline forges a log line, an escape moves the
// progress display's cursor) is refused at its line.
func TestNamesAreOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ spec, want string }{
		{"jobs:\n  - name: \"a\\nb\"\n    keywords: {keywords: [seo], countries: [US]}\n", `jobs.yaml:2: name holds a control character ("a\nb")`},
		{"jobs:\n  - name: a\n    targets: [{url: \"x.com\\e[2J\", scope: ROOT_DOMAIN}]\n    endpoints: {overview: {}}\n", `jobs.yaml:3: url holds a control character ("x.com\x1b[2J")`},
		{"jobs:\n  - name: a\n    keywords: {keywords: [\"seo\\rX\"], countries: [US]}\n", `jobs.yaml:3: an item of keywords holds a control character ("seo\rX")`},
	} {
		_, err := jobspec.ParseSpec("jobs.yaml", []byte(tc.spec), specNow)
		require.ErrorContains(t, err, tc.want)
	}
}

// TestLoadSpecRefusesAHugeFile: a job spec is read whole into memory, then
// into a YAML tree many times its size: a file past MaxSpecBytes, or one
// that never ends (--jobs /dev/zero, a pipe), is refused after reading
// that much rather than running the machine out of memory.
func TestLoadSpecRefusesAHugeFile(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/jobs.yaml"
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = f.WriteString("jobs: []\n")
	require.NoError(t, err)
	require.NoError(t, f.Truncate(jobspec.MaxSpecBytes+1)) // the rest: NUL bytes, sparse
	require.NoError(t, f.Close())
	for _, p := range []string{path, "/dev/zero"} {
		_, err := jobspec.LoadSpec(p, specNow)
		require.ErrorContains(t, err, "larger than 8 MiB", p)
	}
}

func TestParseSpecListings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, spec string
		want       []string // messages; none: valid
	}{
		{"account and size", "jobs:\n  - name: j\n    listings: {account: agency, size: 100, status: changed}\n", nil},
		{"the job's account", "jobs:\n  - name: j\n    account: agency\n    listings: {}\n", nil},
		{"bare key with the job's account", "jobs:\n  - name: j\n    account: agency\n    listings:\n", nil},
		{"no account", "jobs:\n  - name: j\n    listings: {size: 10}\n", []string{
			"jobs.yaml:3: listings needs an account: listings: {account: NAME} (sign it in with etl auth login --account NAME), or the job's account:"}},
		{"bare key without account", "jobs:\n  - name: j\n    listings:\n", []string{
			"jobs.yaml:3: listings needs an account"}},
		{"size zero", "jobs:\n  - name: j\n    listings: {account: a, size: 0}\n", []string{
			"jobs.yaml:3: size must be between 1 and 2147483647, got 0"}},
		{"size huge", "jobs:\n  - name: j\n    listings: {account: a, size: 99999999999999999999}\n", []string{
			"jobs.yaml:3: size must be between 1 and 2147483647, got 99999999999999999999"}},
		{"size not a number", "jobs:\n  - name: j\n    listings: {account: a, size: lots}\n", []string{
			`jobs.yaml:3: size must be an integer, got "lots"`}},
		{"bad status", "jobs:\n  - name: j\n    listings: {account: a, status: chanegd}\n", []string{
			`jobs.yaml:3: listings status "chanegd": want all (read every location's status, one request each) or changed (only new, changed or not COMPLETE locations); did you mean "changed"?`}},
		{"typo", "jobs:\n  - name: j\n    listings: {acount: a}\n", []string{
			`jobs.yaml:3: unknown listings key "acount"; did you mean "account"? (expected: account, size, status, push)`}},
		{"bad account name", "jobs:\n  - name: j\n    listings: {account: \"a b\"}\n", []string{
			`jobs.yaml:3: listings: account name "a b"`}},
		{"a list", "jobs:\n  - name: j\n    listings: [a, b]\n", []string{
			"jobs.yaml:3: listings must be a mapping (key: value)"}},
		{"twice", "jobs:\n  - name: j\n    listings: {account: a}\n    listings: {account: b}\n", []string{
			"jobs.yaml:4:"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := jobspec.ParseSpec("jobs.yaml", []byte(c.spec), specNow)
			if c.want == nil {
				require.NoError(t, err)
				require.NotNil(t, s.Jobs[0].Listings)
				require.Equal(t, "agency", s.Jobs[0].Listings.Account)
				tasks := s.Jobs[0].Tasks(specNow)
				require.Len(t, tasks, 1)
				require.Equal(t, "listings of account agency", tasks[0].String())
				return
			}
			require.Error(t, err)
			for _, w := range c.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}
