package report_test

import (
	"bytes"
	"fmt"
	"html"
	"net/http/httptest"
	"regexp"
	"slices"
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
	"github.com/seoetl/etl/jobspec"
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
func loadWarehouse(t testing.TB, months int) (*pgxpool.Pool, *jobspec.Spec) {
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
	var spec *jobspec.Spec
	for i := months - 1; i >= 0; i-- {
		now := reportNow.AddDate(0, -i, 0)
		clock.Store(now.Unix())
		spec, err = jobspec.ParseSpec("jobs.yaml", []byte(reportSpec), now)
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
func caps(spec *jobspec.Spec) report.Caps {
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
		title := html.UnescapeString(stripTags(m[1]))
		var s shown
		if i := strings.Index(m[2], "<svg"); i >= 0 {
			s.svg = m[2][i : strings.Index(m[2], "</svg>")+6]
		}
		for _, r := range rowRe.FindAllStringSubmatch(m[2], -1) {
			var row []string
			for _, c := range cellRe.FindAllStringSubmatch(r[1], -1) {
				row = append(row, html.UnescapeString(stripTags(c[1])))
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
		// Every day the chart draws, its spikes marked.
		velocity := viewRows(t, pool, `SELECT day, new_links, new_30d, CASE WHEN spike THEN 'spike' ELSE '' END
			FROM link_velocity($1, $2) WHERE url = $3 ORDER BY day`, from, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), url)
		require.True(t, slices.ContainsFunc(velocity, func(r []string) bool { return r[3] == "" }), url)
		require.True(t, slices.ContainsFunc(velocity, func(r []string) bool { return r[3] == "spike" }), url)
		require.Equal(t, velocity, figs["Link velocity of "+url].rows[1:], url)
	}
	gap := viewRows(t, pool, `SELECT gap_rank, domain, domain_score, rivals_linking, rival_backlinks FROM competitor_gap WHERE month = '2026-11-01' AND gap_rank <= 10 ORDER BY gap_rank`)
	require.Len(t, gap, 10)
	require.Equal(t, gap, figs["Competitor gap of n240.example (set rivals), matrix of 2026-11"].rows[1:])
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
	require.Contains(t, doc, "<figcaption>Authority score of <bdi>"+escaped+"</bdi></figcaption>")
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

// seed is a warehouse filled by hand, a few rows at a time.
type seed struct {
	t    *testing.T
	pool *pgxpool.Pool
	l    *load.Loader
}

func newSeed(t *testing.T) *seed {
	t.Helper()
	pool := pgtest.NewPool(t)
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	return &seed{t: t, pool: pool, l: l}
}

// target stores url with an overview row of backlinks (score 40, a third
// as many referring domains) in each month given; none: no history.
func (s *seed) target(url string, backlinks int64, months ...time.Time) int64 {
	s.t.Helper()
	id, err := s.l.Target(s.t.Context(), url, catalog.RootDomain)
	require.NoError(s.t, err)
	overview, _ := catalog.Lookup("overview")
	require.NoError(s.t, s.l.EnsurePartitions(s.t.Context(), overview, months))
	for _, m := range months {
		_, err = s.pool.Exec(s.t.Context(), `INSERT INTO backlink_overview (target_id, month, observed_at, score, backlinks_count, domains_count)
			VALUES ($1, $2, $3, 40, $4::bigint, $4::bigint / 3)`, id, m, m.Add(time.Hour), backlinks)
		require.NoError(s.t, err)
	}
	return id
}

// gapSet stores a target set of urls with one matrix row in month: domain,
// linking to the set's second url and not to its first.
func (s *seed) gapSet(name string, urls []string, month time.Time, domain string) {
	s.t.Helper()
	id, _, err := s.l.TargetSet(s.t.Context(), name, catalog.RootDomain, urls)
	require.NoError(s.t, err)
	matrix, _ := catalog.Lookup("matrix")
	require.NoError(s.t, s.l.EnsurePartitions(s.t.Context(), matrix, []time.Time{month}))
	_, err = s.pool.Exec(s.t.Context(), `INSERT INTO matrix (set_id, month, observed_at, domain, domain_score, backlinks_counts)
		VALUES ($1, $2, $3, $4, 55, '{0,7}')`, id, month, month.Add(time.Hour), domain)
	require.NoError(s.t, err)
	// As the loader keeps it with every page.
	_, err = s.pool.Exec(s.t.Context(), `INSERT INTO latest_months (fact_table, owner_id, month) VALUES ('matrix', $1, $2)
		ON CONFLICT (fact_table, owner_id) DO UPDATE SET month = greatest(latest_months.month, excluded.month)`, id, month)
	require.NoError(s.t, err)
}

// report loads and renders the report of cfg at reportNow.
func (s *seed) report(cfg report.Config) (*report.Data, string) {
	s.t.Helper()
	cfg.Now = func() time.Time { return reportNow }
	d, err := report.Load(s.t.Context(), s.pool, cfg)
	require.NoError(s.t, err)
	var b bytes.Buffer
	require.NoError(s.t, report.Render(&b, d))
	return d, b.String()
}

var (
	nov = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	oct = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
)

// targetRows are the rows of the report's targets table, header first.
func targetRows(t *testing.T, doc string) [][]string {
	t.Helper()
	i := strings.Index(doc, `<h2 id="targets">`)
	require.Positive(t, i)
	table := doc[i : i+strings.Index(doc[i:], "</table>")]
	var rows [][]string
	for _, r := range rowRe.FindAllStringSubmatch(table, -1) {
		var row []string
		for _, c := range cellRe.FindAllStringSubmatch(r[1], -1) {
			row = append(row, html.UnescapeString(stripTags(c[1])))
		}
		rows = append(rows, row)
	}
	return rows
}

var tagRe = regexp.MustCompile(`<[^>]*>`)

func stripTags(s string) string { return tagRe.ReplaceAllString(s, "") }

// TestReportListsEveryTarget: every target has a row in the targets
// table, however many (it kept 120 of 200, and said "and 80 more rows").
func TestReportListsEveryTarget(t *testing.T) {
	t.Parallel()
	s := newSeed(t)
	for i := range 200 {
		s.target(fmt.Sprintf("t%03d.example", i), int64(1000+i), nov)
	}
	_, doc := s.report(report.Config{})
	rows := targetRows(t, doc)
	require.Len(t, rows, 1+200)
	require.Equal(t, []string{"t199.example", "ROOT_DOMAIN", "40", "1199", "399", "below"}, rows[1])
	require.Equal(t, []string{"t000.example", "ROOT_DOMAIN", "40", "1000", "333", ""}, rows[200])
	require.NotContains(t, doc, "more rows")
}

// TestReportChartsTheTopWithHistory: --top 10 charts every target with
// history when there are fewer, also when targets without history sort
// before one with (charting stopped at the first without).
func TestReportChartsTheTopWithHistory(t *testing.T) {
	t.Parallel()
	s := newSeed(t)
	for _, u := range []string{"a.example", "b.example", "c.example", "d.example"} {
		s.target(u, 500, nov)
	}
	s.target("z.example", 0, nov) // history, no backlinks
	s.target("m.example", 0)      // no history: sorts before z
	s.target("n.example", 0)
	d, doc := s.report(report.Config{Top: 10})
	var charted []string
	for _, tg := range d.Targets {
		if tg.Charted {
			charted = append(charted, tg.URL)
		}
	}
	require.Equal(t, []string{"a.example", "b.example", "c.example", "d.example", "z.example"}, charted)
	figs := figures(t, doc)
	require.Contains(t, figs, "Authority score of z.example")
	require.NotContains(t, figs, "Authority score of m.example")

	// The top counts targets with history only.
	d, _ = s.report(report.Config{Top: 2})
	charted = nil
	for _, tg := range d.Targets {
		if tg.Charted {
			charted = append(charted, tg.URL)
		}
	}
	require.Equal(t, []string{"a.example", "b.example"}, charted)
}

// TestReportDrawsOneMonth: a target with one month of history gets a
// point in each of its line charts (a line of one point drew nothing: the
// axes and no data).
func TestReportDrawsOneMonth(t *testing.T) {
	t.Parallel()
	s := newSeed(t)
	s.target("one.example", 900, nov)
	_, doc := s.report(report.Config{Months: 1})
	figs := figures(t, doc)
	for _, title := range []string{"Authority score of one.example", "Backlinks and referring domains of one.example"} {
		f := figs[title]
		require.NotEmpty(t, f.svg, title)
		require.Len(t, f.rows, 2, title)
		require.Contains(t, f.svg, "fill:#0072B2", "%s: its one month drawn as a dot", title)
	}
}

// TestReportGapOfEverySet: each target set has its competitor gap, of
// the newest month its matrix holds in the months covered: a set
// fetched in October beside one fetched in November showed November's
// only.
func TestReportGapOfEverySet(t *testing.T) {
	t.Parallel()
	s := newSeed(t)
	s.gapSet("alpha", []string{"a.example", "rival-a.example"}, oct, "old.example")
	s.gapSet("beta", []string{"b.example", "rival-b.example"}, oct, "older.example")
	s.gapSet("beta", []string{"b.example", "rival-b.example"}, nov, "new.example")
	d, doc := s.report(report.Config{})
	require.Len(t, d.Gap, 2)
	figs := figures(t, doc)
	alpha := figs["Competitor gap of a.example (set alpha), matrix of 2026-10"]
	require.Equal(t, [][]string{{"rank", "domain", "domain score", "rivals linking", "backlinks to rivals"}, {"1", "old.example", "55", "1", "7"}}, alpha.rows)
	require.NotEmpty(t, alpha.svg)
	beta := figs["Competitor gap of b.example (set beta), matrix of 2026-11"]
	require.Equal(t, []string{"1", "new.example", "55", "1", "7"}, beta.rows[1])
	require.Len(t, beta.rows, 2, "November's only")

	// A set whose matrix is older than the months covered has none.
	d, _ = s.report(report.Config{Months: 1})
	require.Len(t, d.Gap, 1)
	require.Equal(t, "beta", d.Gap[0].Name)
}

// TestReportRunUnitsFromTheLedger: a run killed mid-way (its runs row
// never got its units) shows the units its ledger holds, in the chart
// and the table, as spend_by_run does: it showed 0.
func TestReportRunUnitsFromTheLedger(t *testing.T) {
	t.Parallel()
	s := newSeed(t)
	var id int64
	require.NoError(t, s.pool.QueryRow(t.Context(), `INSERT INTO runs (job, status, started_at) VALUES ('weekly', 'running', $1) RETURNING run_id`,
		reportNow.Add(-time.Hour)).Scan(&id))
	_, err := s.pool.Exec(t.Context(), `INSERT INTO unit_ledger (run_id, job, endpoint, target, reserved, spent, reserved_at, settled_at)
		VALUES ($1, 'weekly', 'links', 'a.example', 100000, 90000, $2, $2), ($1, 'weekly', 'links', 'b.example', 45000, NULL, $2, NULL)`,
		id, reportNow.Add(-time.Hour))
	require.NoError(t, err)
	want := viewRows(t, s.pool, `SELECT run_id, units FROM spend_by_run`)
	require.Equal(t, [][]string{{fmt.Sprint(id), "135000"}}, want)
	d, doc := s.report(report.Config{})
	require.Len(t, d.Runs, 1)
	require.EqualValues(t, 135000, d.Runs[0].Units)
	f := figures(t, doc)["API units per run"]
	require.Equal(t, []string{fmt.Sprint(id), "weekly", "manual", "running"}, f.rows[1][:4])
	require.Equal(t, "135000", f.rows[1][7])
}

// bidiControls are the characters that reorder the text around them.
const bidiControls = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

// TestReportIsolatesBidiControls: a right-to-left override (U+202E) or
// another bidirectional control in a value from the warehouse (a target,
// a set, a job, a domain, an account) never reaches the page as it is,
// where it reversed every link after it in the navigation: it shows
// escaped (\u202e), and each value is isolated (<bdi>) from the text
// around it, so a right-to-left script reorders nothing beside it.
func TestReportIsolatesBidiControls(t *testing.T) {
	t.Parallel()
	s := newSeed(t)
	const evil = "evil\u202egro.example"
	id := s.target(evil, 900, nov)
	s.target("\u05e9\u05dc\u05d5\u05dd.example", 800, nov) // Hebrew
	s.target("after.example", 700, nov)
	s.gapSet("set\u2067x", []string{evil, "rival.example"}, nov, "dom\u200f.example")
	_, err := s.pool.Exec(t.Context(), `INSERT INTO runs (job, status, started_at) VALUES ($1, 'running', $2)`, "job\u202eboj", reportNow.Add(-time.Hour))
	require.NoError(t, err)
	_, doc := s.report(report.Config{})
	require.False(t, strings.ContainsAny(doc, bidiControls), "a bidirectional control reached the page raw")
	require.Contains(t, doc, fmt.Sprintf(`<a href="#target-%d"><bdi>evil\u202egro.example</bdi> (ROOT_DOMAIN)</a>`, id), "the navigation's link")
	require.Contains(t, doc, `<figcaption>Authority score of <bdi>evil\u202egro.example</bdi></figcaption>`)
	require.Contains(t, doc, "<td><bdi>\u05e9\u05dc\u05d5\u05dd.example</bdi></td>", "the Hebrew url isolated in the targets table")
	require.Contains(t, doc, `<td><bdi>job\u202eboj</bdi></td>`, "the job in the runs table")
	require.Contains(t, doc, `<td><bdi>dom\u200f.example</bdi></td>`, "the domain in the gap table")
	require.Contains(t, doc, `<figcaption>Competitor gap of <bdi>evil\u202egro.example</bdi> (set <bdi>set\u2067x</bdi>), matrix of 2026-11</figcaption>`)
	require.Contains(t, doc, `>Authority score of evil\u202egro.example</text>`, "the chart's title, escaped")
	require.Contains(t, doc, `<title>etl report</title>`)
}
