package report_test

import (
	"bytes"
	"fmt"
	"html"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/report"
	"github.com/seoetl/etl/sandbox"
)

func TestMain(m *testing.M) {
	pgtest.Layout = load.DistributeDatabase // with TEST_CITUS_URL: make test-citus
	pgtest.Main(m)
}

// reportSpec is the job whose warehouse the tests report on.
const reportSpec = `budget: {daily: 400000, monthly: 5000000}
jobs:
  - name: weekly
    budget: {monthly: 200000, per_run: 150000}
    targets: [{url: n240.example, scope: ROOT_DOMAIN}, {url: n300.example, scope: ROOT_DOMAIN}, {url: n1200.example, scope: ROOT_DOMAIN}]
    target_sets:
      - {name: rivals, scope: ROOT_DOMAIN, urls: [n240.example, n300.example, example.com]}
    endpoints:
      overview: {}
      summary: {limit: 3}
      links: {limit: 500}
      ref-domains: {limit: 500}
      matrix: {limit: 300}
`

// reportNow is the clock of the last run and of the report.
var reportNow = time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)

// loadWarehouse runs reportSpec once a month for months months up to
// reportNow's, the sandbox's clock moved with the runs, and records a few
// listing problems; it returns the pool and the spec.
func loadWarehouse(t testing.TB, months int) (*pgxpool.Pool, *pipeline.Spec) {
	t.Helper()
	var clock atomic.Int64
	sb, err := sandbox.New(sandbox.Config{Seed: 7, APIKeys: []string{"test-key"}, RatePerSecond: -1, MaxConcurrent: -1,
		Now: func() time.Time { return time.Unix(clock.Load(), 0).UTC() }})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	pool := pgtest.NewPool(t)
	client, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: "test-key", RatePerSecond: -1, MaxConcurrent: -1})
	require.NoError(t, err)
	var spec *pipeline.Spec
	for i := months - 1; i >= 0; i-- {
		now := reportNow.AddDate(0, -i, 0)
		clock.Store(now.Unix())
		spec, err = pipeline.ParseSpec("jobs.yaml", []byte(reportSpec), now)
		require.NoError(t, err)
		r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: pool, Allocator: memory.NewGoAllocator(),
			Now: func() time.Time { return now }, Concurrency: 4})
		require.NoError(t, err)
		sum, err := r.Run(t.Context(), spec.Jobs[0])
		require.NoError(t, err)
		require.Zero(t, sum.Failed())
	}
	_, err = pool.Exec(t.Context(), `
		INSERT INTO listing_problems (account, location_id, code, message, first_seen_at, last_seen_at, resolved_at)
		SELECT 'agency', 'loc-' || g, CASE WHEN g % 3 = 0 THEN 'G_020' ELSE 'AP_012' END, 'missing hours',
		       $1::timestamptz - (g || ' days')::interval, $1::timestamptz - (g || ' days')::interval + interval '1 hour',
		       CASE WHEN g % 2 = 0 THEN $1::timestamptz - (g || ' days')::interval + interval '2 days' END
		FROM generate_series(1, 40) g`, reportNow)
	require.NoError(t, err)
	return pool, spec
}

// caps are the report's caps from spec.
func caps(spec *pipeline.Spec) report.Caps {
	c := report.Caps{Daily: spec.Budget.Daily, Monthly: spec.Budget.Monthly, JobMonthly: map[string]int64{}, PerRun: map[string]int64{}}
	for _, j := range spec.Jobs {
		c.JobMonthly[j.Name], c.PerRun[j.Name] = j.Caps.JobMonthly, j.Caps.PerRun
	}
	return c
}

var (
	figureRe = regexp.MustCompile(`(?s)<figure>\s*<figcaption>(.*?)</figcaption>(.*?)</figure>`)
	rowRe    = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	cellRe   = regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`)
)

// figures are the report's figures by title: whether each has an SVG
// chart, and the rows of its table (header first), unescaped.
type shown struct {
	svg  string
	rows [][]string
}

func figures(t *testing.T, doc string) map[string]shown {
	t.Helper()
	out := map[string]shown{}
	for _, m := range figureRe.FindAllStringSubmatch(doc, -1) {
		title := html.UnescapeString(m[1])
		var s shown
		if i := strings.Index(m[2], "<svg"); i >= 0 {
			s.svg = m[2][i : strings.Index(m[2], "</svg>")+6]
		}
		for _, r := range rowRe.FindAllStringSubmatch(m[2], -1) {
			var row []string
			for _, c := range cellRe.FindAllStringSubmatch(r[1], -1) {
				row = append(row, html.UnescapeString(c[1]))
			}
			s.rows = append(s.rows, row)
		}
		_, dup := out[title]
		require.False(t, dup, "two figures titled %q", title)
		out[title] = s
	}
	return out
}

// viewRows runs query as etl_analyst and returns its rows as text.
func viewRows(t *testing.T, pool *pgxpool.Pool, query string, args ...any) [][]string {
	t.Helper()
	var out [][]string
	require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE etl_analyst"); err != nil {
			return err
		}
		rows, err := tx.Query(t.Context(), query, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return err
			}
			var row []string
			for _, v := range vals {
				switch v := v.(type) {
				case time.Time:
					row = append(row, v.Format(time.DateOnly))
				default:
					row = append(row, fmt.Sprint(v))
				}
			}
			out = append(out, row)
		}
		return rows.Err()
	}), query)
	return out
}

// TestReportShowsTheViews: the report of 24 months of three targets has
// every chart as an SVG with data drawn (paths and bars), and the numbers
// of its tables are the analytic views'.
func TestReportShowsTheViews(t *testing.T) {
	t.Parallel()
	pool, spec := loadWarehouse(t, 24)
	d, err := report.Load(t.Context(), pool, report.Config{Months: 24, Caps: caps(spec), Now: func() time.Time { return reportNow }})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, report.Render(&b, d))
	doc := b.String()
	require.NotContains(t, doc, "<script", "no JavaScript")
	require.NotRegexp(t, `(src|href)="https?:`, doc, "nothing fetched")
	figs := figures(t, doc)

	from := time.Date(2024, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, url := range []string{"n240.example", "n300.example", "n1200.example"} {
		authority := viewRows(t, pool, `SELECT to_char(month, 'YYYY-MM'), score FROM target_authority WHERE url = $1 AND month >= $2 ORDER BY month`, url, from)
		require.Len(t, authority, 24, url)
		require.Equal(t, authority, figs["Authority score of "+url].rows[1:], url)
		history := viewRows(t, pool, `SELECT to_char(month, 'YYYY-MM'), backlinks, ref_domains FROM target_authority WHERE url = $1 AND month >= $2 ORDER BY month`, url, from)
		require.Equal(t, history, figs["Backlinks and referring domains of "+url].rows[1:], url)
		changes := viewRows(t, pool, `SELECT to_char(month, 'YYYY-MM'), links, new_links, lost_links FROM link_changes WHERE url = $1 AND month >= $2 ORDER BY month`, url, from)
		require.Len(t, changes, 24)
		require.Equal(t, changes, figs["New and lost links per month, "+url].rows[1:], url)
		spikes := viewRows(t, pool, `SELECT day, new_links, new_30d FROM link_velocity($1, $2) WHERE url = $3 AND spike ORDER BY day`, from, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), url)
		require.NotEmpty(t, spikes, url)
		require.Equal(t, spikes, figs["Link velocity of "+url].rows[1:], url)
	}
	gap := viewRows(t, pool, `SELECT gap_rank, domain, domain_score, rivals_linking, rival_backlinks FROM competitor_gap WHERE month = '2026-11-01' AND gap_rank <= 10 ORDER BY gap_rank`)
	require.Len(t, gap, 10)
	require.Equal(t, gap, figs["Competitor gap of n240.example (set rivals)"].rows[1:])
	months := viewRows(t, pool, `SELECT to_char(month, 'YYYY-MM'), job, runs, requests, units, '200000' FROM spend_by_month WHERE month >= $1 ORDER BY month`, from)
	require.Len(t, months, 24)
	require.Equal(t, months, figs["API units per month"].rows[1:])
	days := viewRows(t, pool, `SELECT day, requests, units FROM spend_by_day WHERE day >= $1 ORDER BY day`, from)
	require.Equal(t, days, figs["API units per day"].rows[1:])
	runs := viewRows(t, pool, `SELECT run_id, job, trigger, status, rows, units FROM runs ORDER BY started_at`)
	require.Len(t, runs, 24)
	var shownRuns [][]string
	for _, r := range figs["API units per run"].rows[1:] {
		shownRuns = append(shownRuns, []string{r[0], r[1], r[2], r[3], r[6], r[7]})
	}
	require.Equal(t, runs, shownRuns)
	open := viewRows(t, pool, `SELECT account, code, problems, locations, over_7_days, over_30_days FROM listing_open_problems ORDER BY account, problems DESC, code`)
	require.NotEmpty(t, open)
	require.Equal(t, open, figs["Listing problems open now"].rows[1:])

	// Problems open at each week's end, counted from the problems
	// themselves.
	openWeeks := viewRows(t, pool, `
		SELECT w::date, count(p.*)
		FROM generate_series(date_trunc('week', $1::timestamptz AT TIME ZONE 'UTC'), $2::timestamp, interval '7 days') w
		LEFT JOIN listing_problems p ON p.first_seen_at < (w + interval '7 days') AT TIME ZONE 'UTC'
		     AND (p.resolved_at IS NULL OR p.resolved_at >= (w + interval '7 days') AT TIME ZONE 'UTC')
		GROUP BY w ORDER BY w`, from, reportNow)
	require.Equal(t, openWeeks, figs["Listing problems open at the end of each week"].rows[1:])
	require.Contains(t, openWeeks[len(openWeeks)-1], "20", "the 20 open problems of the last week")

	// Every figure is a chart with data drawn.
	var titles []string
	for title := range figs {
		titles = append(titles, title)
	}
	require.Len(t, titles, 3*4+1+2+1+3, "%q", titles)
	for title, f := range figs {
		require.NotEmpty(t, f.svg, "%s: no chart", title)
		require.Contains(t, f.svg, `aria-label="`+html.EscapeString(title)+`"`)
		require.Greater(t, strings.Count(f.svg, "<path"), 10, "%s: data drawn", title)
		require.Greater(t, len(f.rows), 1, "%s: a table of its numbers", title)
	}
	// The caps are drawn.
	require.Contains(t, figs["API units per day"].svg, "daily cap 400,000")
	require.Contains(t, figs["API units per month"].svg, "monthly cap (every job) 5,000,000")
	require.Contains(t, figs["API units per run"].svg, "per-run cap of job weekly 150,000")
}

// TestReportEscapesData: a url holding markup shows as text, in tables,
// captions and charts alike.
func TestReportEscapesData(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>.example`
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	id, err := l.Target(t.Context(), hostile, catalog.RootDomain)
	require.NoError(t, err)
	overview, _ := catalog.Lookup("overview")
	nov := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, l.EnsurePartitions(t.Context(), overview, []time.Time{nov}))
	_, err = pool.Exec(t.Context(), `INSERT INTO backlink_overview (target_id, month, observed_at, score, backlinks_count, domains_count)
		VALUES ($1, $2, $3, 40, 1000, 300)`, id, nov, reportNow)
	require.NoError(t, err)
	d, err := report.Load(t.Context(), pool, report.Config{Now: func() time.Time { return reportNow }})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, report.Render(&b, d))
	doc := b.String()
	require.False(t, strings.Contains(doc, "<script"), "markup of the url shows as text")
	require.False(t, strings.Contains(doc, "<img"), "markup of the url shows as text")
	i := strings.Index(doc, "alert(")
	require.Positive(t, i, "the url is shown")
	const escaped = "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;.example"
	require.Contains(t, doc, "<figcaption>Authority score of "+escaped+"</figcaption>")
	require.Contains(t, doc, `aria-label="Authority score of `+escaped+`"`)
	require.Contains(t, doc, ">Authority score of "+escaped+"</text>", "the chart's title")
}

// TestReportRefusesBadConfig: a bad number of months is refused, saying
// which; an unknown target is named.
func TestReportRefusesBadConfig(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	_, err := report.Load(t.Context(), pool, report.Config{Months: -3})
	require.EqualError(t, err, "months must be between 1 and 240, got -3")
	_, err = report.Load(t.Context(), pool, report.Config{Targets: []string{"nowhere.example"}})
	require.EqualError(t, err, `report: no target "nowhere.example" in the warehouse`)
}
