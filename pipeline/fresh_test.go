package pipeline_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
)

const nightlySpec = `jobs:
  - name: nightly
    schedule: "0 3 * * *"
    targets:
      - {url: example.com, scope: ROOT_DOMAIN}
      - {url: n2500.example, scope: ROOT_DOMAIN}
    endpoints:
      overview: {}
      summary: {limit: 12}
    keywords:
      keywords: [seo tools]
      countries: [US, FR]
      months: [2026-09, 2026-10, 2026-11]
`

// TestANightlyJobBuysClosedMonthsOnce: a nightly job with 12 months of
// summary history buys the 12 months on day 1 and only the current month
// on day 2, and the past months' keyword metrics not again; its tables
// equal those of a job that bought everything both days.
func TestANightlyJobBuysClosedMonthsOnce(t *testing.T) {
	t.Parallel()
	f, c := newClockFixture(t, runNow)
	all, allClock := newClockFixture(t, runNow)

	f.RunAt(t, nightlySpec, c, pipeline.RunOptions{})
	all.RunAt(t, nightlySpec, allClock, pipeline.RunOptions{Refetch: true})
	day1 := f.Spent()
	require.Equal(t, day1, all.Spent())
	const summaryLine, overview, keyword = 40, 45, 20
	months := f.Count(t, `SELECT count(*) FROM backlink_history`)
	require.GreaterOrEqual(t, months, int64(20), "day 1: up to 12 months of history per target")
	require.Equal(t, int64(2*overview+6*keyword)+months*summaryLine, day1)

	day2 := runNow.AddDate(0, 0, 1)
	c.Set(day2)
	allClock.Set(day2)
	plan := f.PlanAt(t, nightlySpec, c, planning.PlanOptions{})
	require.Equal(t, 4, plan.Held.Tasks, "the keyword metrics of September and October")
	require.Equal(t, 4, plan.Held.Closed)
	require.Equal(t, 22, plan.Held.Months, "11 closed months of each target's history")
	require.Equal(t, int64(2*overview+2*summaryLine+2*keyword), *plan.Total.Expected, "the plan prices exactly what is asked")

	sum := f.RunAt(t, nightlySpec, c, pipeline.RunOptions{})
	all.RunAt(t, nightlySpec, allClock, pipeline.RunOptions{Refetch: true})
	require.Equal(t, int64(2*overview+2*summaryLine+2*keyword), f.Spent()-day1, "day 2: the current month only")
	require.Equal(t, 2*day1, all.Spent(), "the job that buys everything pays day 1 again")
	h := sum.Held()
	require.Equal(t, 4, h.Tasks)
	require.Equal(t, 22, h.Months)
	require.Equal(t, int64(22*summaryLine), h.MonthUnits)
	for _, res := range sum.Tasks {
		if res.Task.Endpoint.Name == "summary" {
			require.Equal(t, 11, res.Task.HeldMonths)
			require.Equal(t, int64(1), res.Rows, res.Task.String())
		}
	}
	for _, table := range []string{"keyword_metrics", "backlink_overview"} {
		require.Equal(t, all.tableHash(t, table), f.tableHash(t, table), table)
	}
	// History: the same months of the same targets, the current month's
	// rows alike, and each closed month as day 1 bought it. (The sandbox
	// invents a closed month's counts anew each day, stretching a target's
	// backlinks over its history up to the sandbox day, so the job that
	// buys them again gets slightly other numbers; the API's closed months
	// do not change.)
	keys := `SELECT string_agg(target_id || ' ' || month, ',' ORDER BY target_id, month) FROM backlink_history`
	require.Equal(t, all.query(t, keys), f.query(t, keys))
	current := `SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM backlink_history r WHERE month = '2026-11-01'`
	require.Equal(t, all.query(t, current), f.query(t, current))
	require.Equal(t, months-2, f.Count(t, `SELECT count(*) FROM backlink_history WHERE month < '2026-11-01' AND observed_at = $1`, runNow), "the closed months are day 1's")

	// Day 3: the same again; a plan with --refetch prices all 12 months.
	day3 := day2.AddDate(0, 0, 1)
	c.Set(day3)
	require.Zero(t, f.PlanAt(t, nightlySpec, c, planning.PlanOptions{Refetch: true}).Held.Months)
	before := f.Spent()
	f.RunAt(t, nightlySpec, c, pipeline.RunOptions{})
	require.Equal(t, int64(2*overview+2*summaryLine+2*keyword), f.Spent()-before)
}

// TestAMonthFetchedBeforeItEndedIsBoughtOnceMore: across the turn of a
// month, the month that just ended is asked for once more (what was held
// of it was fetched before it ended), and the new month's data is bought
// whatever max_age says; the day after, only the current month.
func TestAMonthFetchedBeforeItEndedIsBoughtOnceMore(t *testing.T) {
	t.Parallel()
	spec := `jobs:
  - name: j
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints:
      overview: {}
      summary: {limit: 6}
`
	lastDay := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	f, c := newClockFixture(t, lastDay)
	f.RunAt(t, spec, c, pipeline.RunOptions{})
	paid := f.Spent()
	require.Equal(t, int64(45+6*40), paid)

	c.Set(lastDay.Add(2 * time.Hour)) // 1 December, 01:00
	sum := f.RunAt(t, spec, c, pipeline.RunOptions{})
	require.Zero(t, sum.Held().Tasks, "a new month's data: bought within max_age")
	require.Equal(t, int64(45+2*40), f.Spent()-paid, "November (fetched before it ended) and December")
	paid = f.Spent()

	c.Set(lastDay.Add(28 * time.Hour)) // 2 December, 03:00
	f.RunAt(t, spec, c, pipeline.RunOptions{})
	require.Equal(t, int64(45+40), f.Spent()-paid, "December only")
}

// TestMaxAgeOverridesAndWhatHoldsIt: a job's max_age and an endpoint's
// override the default; a task whose rows were removed from the warehouse,
// or that now wants more rows than it fetched, is bought again.
func TestMaxAgeOverridesAndWhatHoldsIt(t *testing.T) {
	t.Parallel()
	spec := func(maxRows int) string {
		return fmt.Sprintf(`jobs:
  - name: j
    max_age: 7d
    targets: [{url: example.com, scope: ROOT_DOMAIN}, {url: n2500.example, scope: ROOT_DOMAIN}]
    endpoints:
      overview: {}
      score-profile: {max_age: 0}
      links: {max_rows: %d}
`, maxRows)
	}
	f, c := newClockFixture(t, runNow)
	first := f.RunAt(t, spec(5), c, pipeline.RunOptions{})
	require.Zero(t, first.Failed())

	c.Set(runNow.AddDate(0, 0, 6)) // 6 days later: within 7d
	paid := f.Spent()
	sum := f.RunAt(t, spec(5), c, pipeline.RunOptions{})
	require.Equal(t, 4, sum.Held().Tasks, "overview and links of both targets")
	var profiles int64
	for _, res := range sum.Tasks {
		if res.Task.Endpoint.Name == "score-profile" {
			require.Nil(t, res.Held, "max_age 0: bought every run")
			profiles += res.Units
		}
	}
	require.Positive(t, profiles)
	require.Equal(t, profiles, f.Spent()-paid)

	// Rows removed from the warehouse are bought again; fewer rows wanted
	// stay held; more rows are bought.
	_, err := f.Pool.Exec(t.Context(), `DELETE FROM backlink_overview WHERE target_id = (SELECT target_id FROM targets WHERE url = 'example.com')`)
	require.NoError(t, err)
	sum = f.RunAt(t, spec(3), c, pipeline.RunOptions{})
	for _, res := range sum.Tasks {
		switch res.Task.String() {
		case "overview example.com (ROOT_DOMAIN)":
			require.Nil(t, res.Held, "its row was deleted")
			require.Equal(t, int64(1), res.Rows)
		case "overview n2500.example (ROOT_DOMAIN)", "links example.com (ROOT_DOMAIN)", "links n2500.example (ROOT_DOMAIN)":
			require.NotNil(t, res.Held, res.Task.String())
		}
	}
	sum = f.RunAt(t, spec(8), c, pipeline.RunOptions{})
	for _, res := range sum.Tasks {
		if res.Task.Endpoint.Name == "links" {
			require.Nil(t, res.Held, "max_rows 8 wants more than the 5 fetched")
			require.Equal(t, int64(8), res.Rows)
		}
	}

	c.Set(runNow.AddDate(0, 0, 14)) // past 7d: bought again
	sum = f.RunAt(t, spec(8), c, pipeline.RunOptions{})
	require.Zero(t, sum.Held().Tasks)
}

// TestARaisedSummaryLimitIsBought: summary's limit counts months; a run
// that asks for more months than the last fetch covered buys them, within
// max_age or not, and is held again after.
func TestARaisedSummaryLimitIsBought(t *testing.T) {
	t.Parallel()
	spec := func(limit int) string {
		return fmt.Sprintf("jobs:\n  - name: j\n    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {summary: {limit: %d}}\n", limit)
	}
	f, c := newClockFixture(t, runNow)
	f.RunAt(t, spec(3), c, pipeline.RunOptions{})
	require.Equal(t, int64(3*40), f.Spent())
	c.Set(runNow.Add(time.Hour))
	require.Equal(t, 1, f.RunAt(t, spec(3), c, pipeline.RunOptions{}).Held().Tasks)
	require.Equal(t, int64(3*40), f.Spent())

	sum := f.RunAt(t, spec(6), c, pipeline.RunOptions{})
	require.Zero(t, sum.Held().Tasks, "3 months more than the last fetch")
	require.Equal(t, int64(6), sum.Tasks[0].Rows)
	require.Equal(t, int64(9*40), f.Spent())
	require.Equal(t, 1, f.RunAt(t, spec(6), c, pipeline.RunOptions{}).Held().Tasks)
	require.Equal(t, 1, f.RunAt(t, spec(2), c, pipeline.RunOptions{}).Held().Tasks, "fewer months: held")
	require.Equal(t, int64(9*40), f.Spent())
}

// servedSummary is one summary request as the sandbox served it: the
// months it answered (newest first, at most limit of the range).
type servedSummary struct {
	at     time.Time
	months []string
}

// summaryLog records the months every summary request was answered with,
// computed as the sandbox answers: the range date_from..date_to (date_to
// default the sandbox's current month), newest first, at most limit.
type summaryLog struct {
	mu  sync.Mutex
	got []servedSummary
}

func (l *summaryLog) record(c *clock, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/summary") {
		return
	}
	q := r.URL.Query()
	now := c.Now().UTC()
	to := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	if v := q.Get("date_to"); v != "" {
		to, _ = time.Parse("2006-01", v)
	}
	from := to.AddDate(-10, 0, 0)
	if v := q.Get("date_from"); v != "" {
		from, _ = time.Parse("2006-01", v)
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	var months []string
	for m := to; !m.Before(from) && len(months) < limit; m = m.AddDate(0, -1, 0) {
		months = append(months, m.Format("2006-01"))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, servedSummary{at: now, months: months})
}

// servedAfter reports whether a request served at or after at answered
// month.
func (l *summaryLog) servedAfter(at time.Time, month string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.got {
		if !s.at.Before(at) && strings.Contains(strings.Join(s.months, " "), month) {
			return true
		}
	}
	return false
}

// requireNovemberAfterItEnded logs the summaries served, and requires that
// one served after November ended answered November.
func (l *summaryLog) requireNovemberAfterItEnded(t *testing.T) {
	t.Helper()
	for _, s := range l.got {
		t.Logf("summary served %s: %v", s.at.Format(time.RFC3339), s.months)
	}
	require.True(t, l.servedAfter(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), "2026-11"),
		"November's history was never asked for after November ended")
}

// TestAMonthEndRunHoldsNoMonthItDidNotSee: a run that starts
// before a month ends and sends its summary request after it ended (a run
// over midnight, the summary queued behind other tasks) narrows the
// request to the month that is ending (date_from, limit 1, no date_to);
// the API answers with its current month, the new one, but the checkpoint
// says the ending month was asked for after it ended: it is held for
// good as a closed month, and its final numbers are never bought.
func TestAMonthEndRunHoldsNoMonthItDidNotSee(t *testing.T) {
	t.Parallel()
	spec := `jobs:
  - name: j
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints:
      summary: {limit: 3}
`
	var log summaryLog
	f, c := newClockFixtureMW(t, runNow, func(c *clock, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			log.record(c, r)
			next.ServeHTTP(w, r)
		})
	})
	f.RunAt(t, spec, c, pipeline.RunOptions{}) // 21 November: September to November

	// 30 November, 23:50: the run starts; its summary request goes at 00:05.
	c.Set(time.Date(2026, 11, 30, 23, 50, 0, 0, time.UTC))
	_, err := f.TryRunAt(t, spec, c, pipeline.Config{
		Observer: &onRunStarted{fn: func() { c.Set(time.Date(2026, 12, 1, 0, 5, 0, 0, time.UTC)) }}}, pipeline.RunOptions{})
	require.NoError(t, err)

	c.Set(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC))
	f.RunAt(t, spec, c, pipeline.RunOptions{})
	c.Set(time.Date(2026, 12, 3, 3, 0, 0, 0, time.UTC))
	f.RunAt(t, spec, c, pipeline.RunOptions{})
	log.requireNovemberAfterItEnded(t)
}

// TestACutSummaryOverMidnightHoldsNoMonthItGotBefore: a summary
// answer cut off at 23:59 on the last day of a month brings the newest
// months (the one ending among them); the rest is asked for after
// midnight. The task's checkpoint is stamped with the last page's time, so
// the month that just ended counts as fetched after it ended, held for
// good, although its row came from the page before midnight.
func TestACutSummaryOverMidnightHoldsNoMonthItGotBefore(t *testing.T) {
	t.Parallel()
	spec := `jobs:
  - name: j
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints:
      summary: {limit: 6}
`
	var log summaryLog
	var cuts atomic.Int32
	f, c := newClockFixtureMW(t, time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC), func(c *clock, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			log.record(c, r)
			if !strings.HasSuffix(r.URL.Path, "/summary") || cuts.Add(1) > 1 {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			c.Set(time.Date(2026, 12, 1, 0, 1, 0, 0, time.UTC)) // the rest is asked after midnight
			body := rec.Body.Bytes()
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		})
	})
	sum := f.RunAt(t, spec, c, pipeline.RunOptions{})
	require.Equal(t, "succeeded", sum.Status())
	require.Equal(t, int64(2), f.Count(t, `SELECT count(*) FROM unit_ledger`), "the cut page and the rest")

	c.Set(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC))
	f.RunAt(t, spec, c, pipeline.RunOptions{})
	log.requireNovemberAfterItEnded(t)
}

// TestAQuarantinedClosedMonthIsBoughtAgain: a closed month of
// summary history whose row was quarantined (the API sent it malformed)
// is held for good: every later run asks only for the current month, and
// the warehouse never gets that month, although the tables say nothing of
// it. A keyword month whose row was quarantined is bought again.
func TestAQuarantinedClosedMonthIsBoughtAgain(t *testing.T) {
	t.Parallel()
	spec := `jobs:
  - name: j
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints:
      summary: {limit: 12}
`
	var corrupt atomic.Bool
	f, c := newClockFixtureMW(t, runNow, func(c *clock, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !corrupt.Load() || !strings.HasSuffix(r.URL.Path, "/summary") {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			var out bytes.Buffer
			for line := range strings.SplitAfterSeq(rec.Body.String(), "\n") {
				if strings.Contains(line, "2026-06-01") {
					line = "oops;" + line // one cell too many: quarantined
				}
				out.WriteString(line)
			}
			for k, v := range rec.Header() {
				if k != "Content-Length" {
					w.Header()[k] = v
				}
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(out.Bytes())
		})
	})
	corrupt.Store(true)
	day1 := f.RunAt(t, spec, c, pipeline.RunOptions{})
	corrupt.Store(false)
	require.Equal(t, int64(1), day1.Tasks[0].Rejected, "June's row is quarantined")
	require.Zero(t, f.Count(t, `SELECT count(*) FROM backlink_history WHERE month_date = '2026-06-01'`))

	for day := 1; day <= 2; day++ {
		c.Set(runNow.AddDate(0, 0, day))
		f.RunAt(t, spec, c, pipeline.RunOptions{})
	}
	require.Equal(t, int64(1), f.Count(t, `SELECT count(*) FROM backlink_history WHERE month_date = '2026-06-01'`),
		"June, quarantined on day 1, is never bought again")
}

// TestAFetchStampedInTheFutureIsNotFresh: a machine whose clock
// ran two days ahead (then set right) stamped a run in the future; the
// next nightly run held everything it bought (its now was "before" it, so
// less than max_age after it), although the data was a day old. A stamp
// more than max_age ahead of now is no longer fresh. (The night after,
// now equals the stamp: no run can tell that from a fresh fetch.)
func TestAFetchStampedInTheFutureIsNotFresh(t *testing.T) {
	t.Parallel()
	spec := "jobs:\n  - name: j\n    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {overview: {}}\n"
	ahead := runNow.AddDate(0, 0, 2) // the clock two days ahead; truly runNow
	f, c := newClockFixture(t, ahead)
	f.RunAt(t, spec, c, pipeline.RunOptions{})
	c.Set(runNow.AddDate(0, 0, 1)) // set right; the next night
	sum := f.RunAt(t, spec, c, pipeline.RunOptions{})
	require.Nil(t, sum.Tasks[0].Held, "a fetch stamped a day after now is not fresh: %v", sum.Tasks[0].Held)
}

// TestAnIncrementalFetchDoesNotHoldAFullOne: Task.Key leaves out an
// incremental task's watermark, so a job that pulls links incrementally
// (ordered by first_seen_at ascending) and a job that asks for them all
// in the same order have the same key: the full job is held by the
// incremental job's fetch of the same month, which bought only the links
// first seen past its watermark. The month's partition then holds 300
// links of 900, and the full job buys none of the rest.
func TestAnIncrementalFetchDoesNotHoldAFullOne(t *testing.T) {
	t.Parallel()
	delta := `jobs:
  - name: delta
    max_age: 0
    targets: [{url: n900.example, scope: ROOT_DOMAIN}]
    endpoints:
      links: {limit: 50, incremental: first_seen_at, filter: "domain_score >= 0"}
`
	full := `jobs:
  - name: full
    targets: [{url: n900.example, scope: ROOT_DOMAIN}]
    endpoints:
      links: {limit: 50, order_by: first_seen_at, direction: ASC, filter: "domain_score >= 0"}
`
	var api asOfSwitch
	f, c := newClockFixtureMW(t, time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC), func(_ *clock, next http.Handler) http.Handler {
		return api.wrap(next)
	})
	_, t1 := linksOfN900(t, f)
	api.then.Store(&t1)
	f.RunAt(t, delta, c, pipeline.RunOptions{}) // 31 October: the links first seen by T1
	api.then.Store(nil)

	c.Set(time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC))
	d := f.RunAt(t, delta, c, pipeline.RunOptions{}) // 1 November: those past the watermark
	require.Less(t, d.Tasks[0].Rows, int64(900))
	c.Set(time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC))
	sum := f.RunAt(t, full, c, pipeline.RunOptions{})
	require.Equal(t, d.Tasks[0].Task.Key(), sum.Tasks[0].Task.Key(), "one key")
	require.Nil(t, sum.Tasks[0].Held, "held by a fetch of the links past a watermark: %v", sum.Tasks[0].Held)
	require.Equal(t, int64(900), f.Count(t, `SELECT count(*) FROM backlinks WHERE month = '2026-11-01'`))
}

// TestHoldingsAtScale measures what holding costs a job of 2,000
// targets x 6 endpoints (12,000 tasks) after a run of each of the 30 days
// before (372,000 checkpoints): the plan with and without --refetch (the
// difference is holdings), and a run that holds every task.
func TestHoldingsAtScale(t *testing.T) {
	t.Parallel()
	const targets = 2000
	days := 30 // HOLDINGS_DAYS: nightly runs before the one held
	if v, err := strconv.Atoi(os.Getenv("HOLDINGS_DAYS")); err == nil {
		days = v
	}
	endpoints := `    endpoints:
      overview: {}
      summary: {limit: 12}
      links: {max_rows: 5}
      ref-domains: {max_rows: 5}
      anchors: {max_rows: 5}
      pages: {max_rows: 5}
`
	var b strings.Builder
	b.WriteString("jobs:\n  - name: big\n    targets:\n")
	for i := range targets {
		fmt.Fprintf(&b, "      - {url: t%04d.example, scope: ROOT_DOMAIN}\n", i)
	}
	big := b.String() + endpoints
	one := "jobs:\n  - name: big\n    targets:\n      - {url: t0000.example, scope: ROOT_DOMAIN}\n" + endpoints

	f, c := newClockFixture(t, runNow)
	sum := f.RunAt(t, one, c, pipeline.RunOptions{})
	require.Zero(t, sum.Failed())
	ctx := t.Context()
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := f.Pool.Exec(ctx, q, args...)
		require.NoError(t, err)
	}
	// The other targets, their rows (copies of t0000's), and the run's
	// checkpoints of their tasks.
	exec(`INSERT INTO targets (url, scope) SELECT format('t%s.example', lpad(i::text, 4, '0')), 'ROOT_DOMAIN'
		FROM generate_series(1, $1 - 1) i`, targets)
	for _, table := range []string{"backlink_overview", "backlink_history", "backlinks", "ref_domains", "anchors", "indexed_pages"} {
		var names, cols string
		require.NoError(t, f.Pool.QueryRow(ctx, `SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum),
				string_agg(CASE WHEN attname = 'target_id' THEN 't.target_id' ELSE 'f.' || quote_ident(attname) END, ', ' ORDER BY attnum)
			FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' AND attidentity = ''`,
			table).Scan(&names, &cols))
		exec(`INSERT INTO ` + table + ` (` + names + `) SELECT ` + cols + ` FROM ` + table + ` f CROSS JOIN targets t
			WHERE f.target_id = (SELECT target_id FROM targets WHERE url = 't0000.example') AND t.url <> 't0000.example'`)
	}
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(big), runNow)
	require.NoError(t, err)
	tasks := s.Jobs[0].Tasks(runNow)
	require.Len(t, tasks, 6*targets)
	template := map[string]string{}
	for _, task := range tasks {
		if task.Target.URL == "t0000.example" {
			template[task.Endpoint.Name] = task.Key()
		}
	}
	for ep, key := range template {
		var keys, names []string
		for _, task := range tasks {
			if task.Endpoint.Name == ep && task.Target.URL != "t0000.example" {
				keys, names = append(keys, task.Key()), append(names, task.String())
			}
		}
		exec(`INSERT INTO task_checkpoints (run_id, task, endpoint, name, month, status, next_offset, pages, rows, rejected, units, since, error, updated_at,
				table_name, inserted, updated, unchanged, asked_from, asked_to, max_rows)
			SELECT c.run_id, k.task, c.endpoint, k.name, c.month, c.status, c.next_offset, c.pages, c.rows, c.rejected, c.units, c.since, c.error, c.updated_at,
				c.table_name, c.inserted, c.updated, c.unchanged, c.asked_from, c.asked_to, c.max_rows
			FROM task_checkpoints c, unnest($1::text[], $2::text[]) k(task, name) WHERE c.task = $3`, keys, names, key)
	}
	// 30 nightly runs before it.
	exec(`WITH r AS (
			INSERT INTO runs (job, trigger, status, started_at, finished_at)
			SELECT job, trigger, status, started_at - d * interval '1 day', finished_at - d * interval '1 day'
			FROM runs, generate_series(1, $3::int) d WHERE run_id = $1
			RETURNING run_id, started_at)
		INSERT INTO task_checkpoints (run_id, task, endpoint, name, month, status, next_offset, pages, rows, rejected, units, updated_at,
			table_name, inserted, updated, unchanged, asked_from, asked_to, max_rows)
		SELECT r.run_id, c.task, c.endpoint, c.name, c.month, c.status, c.next_offset, c.pages, c.rows, c.rejected, c.units,
			c.updated_at - ($2::timestamptz - r.started_at), c.table_name, c.inserted, c.updated, c.unchanged,
			(c.asked_from - ($2::timestamptz - r.started_at))::date, (c.asked_to - ($2::timestamptz - r.started_at))::date, c.max_rows
		FROM r, task_checkpoints c WHERE c.run_id = $1`, sum.RunID, runNow, days)
	exec(`ANALYZE`)
	require.Equal(t, int64((days+1)*6*targets), f.Count(t, `SELECT count(*) FROM task_checkpoints`))

	c.Set(runNow.Add(time.Hour))
	start := time.Now()
	all := f.PlanAt(t, big, c, planning.PlanOptions{Refetch: true})
	refetch := time.Since(start)
	require.Zero(t, all.Held.Tasks)
	start = time.Now()
	plan := f.PlanAt(t, big, c, planning.PlanOptions{})
	held := time.Since(start)
	require.Equal(t, 6*targets, plan.Held.Tasks)
	start = time.Now()
	run := f.RunAt(t, big, c, pipeline.RunOptions{})
	ran := time.Since(start)
	require.Equal(t, 6*targets, run.Held().Tasks)
	t.Logf("%d tasks, %d checkpoints: plan --refetch %s, plan %s (holdings about %s), a run that holds every task %s",
		6*targets, (days+1)*6*targets, refetch.Round(time.Millisecond), held.Round(time.Millisecond),
		(held - refetch).Round(time.Millisecond), ran.Round(time.Millisecond))
}
