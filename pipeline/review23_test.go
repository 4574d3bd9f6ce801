package pipeline_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

// Review of issue 23 (max_age, closed months, --refetch): each test here
// is a bug found by a hostile review.

// newClockFixtureMW is newClockFixture with a middleware in front of the
// sandbox, which may move the clock.
func newClockFixtureMW(t *testing.T, at time.Time, mw func(c *clock, next http.Handler) http.Handler) (*fixture, *clock) {
	t.Helper()
	c := &clock{t: at}
	sb, err := sandbox.New(sandbox.Config{Seed: 7, Now: c.now, APIKeys: []string{"test-key"}})
	require.NoError(t, err)
	srv := httptest.NewServer(mw(c, sb.Handler()))
	t.Cleanup(srv.Close)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	f := &fixture{sandbox: sb, url: srv.URL, mem: mem, dbURL: pgtest.NewDB(t)}
	f.pool = f.newPool(t)
	return f, c
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
	now := c.now().UTC()
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

// TestReview23PlanProbeSpendsNothingOnHeldTasks: etl plan --probe an hour
// after a run probes the tasks the run would hold (not send): it spends
// units to price tasks that cost 0.
func TestReview23PlanProbeSpendsNothingOnHeldTasks(t *testing.T) {
	t.Parallel()
	spec := `jobs:
  - name: j
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints:
      anchors: {max_rows: 20}
      ref-domains: {max_rows: 20, filter: "domain_score > 10"}
`
	f, c := newClockFixture(t, runNow)
	sum := f.runAt(t, spec, c, pipeline.RunOptions{})
	require.Zero(t, sum.Failed())
	paid := f.spent()

	c.set(runNow.Add(time.Hour))
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), c.now())
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: f.url, APIKey: "test-key"})
	require.NoError(t, err)
	p, err := pipeline.NewPlanner(pipeline.PlanConfig{Pool: f.pool, Client: client, Allocator: f.mem, Now: c.now})
	require.NoError(t, err)
	plan, err := p.Plan(t.Context(), s.Jobs[0], pipeline.PlanOptions{Probe: true})
	require.NoError(t, err)
	require.Equal(t, 2, plan.Held.Tasks, "both tasks are held")
	require.Zero(t, plan.Probe.Requests, "no probe of a task the run will not send")
	require.Equal(t, paid, f.spent(), "the probe of held tasks cost units")
}

// TestReview23ReprocessFailedDoesNotRebuyHeldMonths: etl backfill
// --reprocess failed buys again "the months whose latest try failed, was
// skipped, or did not finish"; a keyword month held by the job's last run
// (closed, the warehouse holds it) is none of these, yet it is bought again.
func TestReview23ReprocessFailedDoesNotRebuyHeldMonths(t *testing.T) {
	t.Parallel()
	spec := `jobs:
  - name: kw
    keywords: {keywords: [seo], countries: [US], months: [2026-10]}
`
	f, c := newClockFixture(t, runNow)
	f.runAt(t, spec, c, pipeline.RunOptions{})
	c.set(runNow.Add(time.Hour))
	sum := f.runAt(t, spec, c, pipeline.RunOptions{})
	require.Equal(t, 1, sum.Held().Tasks)

	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), c.now())
	require.NoError(t, err)
	oct := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	tasks, _, err := s.Jobs[0].BackfillTasks(jobspec.BackfillRequest{From: oct, To: oct}, c.now())
	require.NoError(t, err)
	require.Len(t, tasks, 1)
	require.Equal(t, sum.Tasks[0].Task.Key(), tasks[0].Key(), "the backfill's task is the run's")
	failed, err := pipeline.Pending(t.Context(), f.pool, s.Jobs[0], tasks, jobspec.ReprocessFailed)
	require.NoError(t, err)
	require.Empty(t, failed, "a held month did not fail: --reprocess failed must not buy it again")
}

// TestReview23AMonthEndRunHoldsNoMonthItDidNotSee: a run that starts
// before a month ends and sends its summary request after it ended (a run
// over midnight, the summary queued behind other tasks) narrows the
// request to the month that is ending (date_from, limit 1, no date_to);
// the API answers with its current month, the new one, but the checkpoint
// says the ending month was asked for after it ended: it is held for
// good as a closed month, and its final numbers are never bought.
func TestReview23AMonthEndRunHoldsNoMonthItDidNotSee(t *testing.T) {
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
	f.runAt(t, spec, c, pipeline.RunOptions{}) // 21 November: September to November

	// 30 November, 23:50: the run starts; its summary request goes at 00:05.
	c.set(time.Date(2026, 11, 30, 23, 50, 0, 0, time.UTC))
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), c.now())
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: f.url, APIKey: "test-key"})
	require.NoError(t, err)
	r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.pool, Allocator: f.mem, Now: c.now, BatchRows: 5,
		Observer: &onRunStarted{fn: func() { c.set(time.Date(2026, 12, 1, 0, 5, 0, 0, time.UTC)) }}})
	require.NoError(t, err)
	_, err = r.RunWith(t.Context(), s.Jobs[0], pipeline.RunOptions{})
	require.NoError(t, err)

	c.set(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC))
	f.runAt(t, spec, c, pipeline.RunOptions{})
	c.set(time.Date(2026, 12, 3, 3, 0, 0, 0, time.UTC))
	f.runAt(t, spec, c, pipeline.RunOptions{})
	for _, s := range log.got {
		t.Logf("summary served %s: %v", s.at.Format(time.RFC3339), s.months)
	}
	require.True(t, log.servedAfter(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), "2026-11"),
		"November's history was never asked for after November ended")
}

// TestReview23AQuarantinedClosedMonthIsBoughtAgain: a closed month of
// summary history whose row was quarantined (the API sent it malformed)
// is held for good: every later run asks only for the current month, and
// the warehouse never gets that month, although the tables say nothing of
// it. A keyword month whose row was quarantined is bought again.
func TestReview23AQuarantinedClosedMonthIsBoughtAgain(t *testing.T) {
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
	day1 := f.runAt(t, spec, c, pipeline.RunOptions{})
	corrupt.Store(false)
	require.Equal(t, int64(1), day1.Tasks[0].Rejected, "June's row is quarantined")
	require.Zero(t, f.count(t, `SELECT count(*) FROM backlink_history WHERE month_date = '2026-06-01'`))

	for day := 1; day <= 2; day++ {
		c.set(runNow.AddDate(0, 0, day))
		f.runAt(t, spec, c, pipeline.RunOptions{})
	}
	require.Equal(t, int64(1), f.count(t, `SELECT count(*) FROM backlink_history WHERE month_date = '2026-06-01'`),
		"June, quarantined on day 1, is never bought again")
}

// TestReview23HoldingsAtScale measures what holding costs a job of 2,000
// targets x 6 endpoints (12,000 tasks) after a run of each of the 30 days
// before (372,000 checkpoints): the plan with and without --refetch (the
// difference is holdings), and a run that holds every task.
func TestReview23HoldingsAtScale(t *testing.T) {
	t.Parallel()
	const targets = 2000
	days := 30 // REVIEW23_DAYS: nightly runs before the one held
	if v, err := strconv.Atoi(os.Getenv("REVIEW23_DAYS")); err == nil {
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
	sum := f.runAt(t, one, c, pipeline.RunOptions{})
	require.Zero(t, sum.Failed())
	ctx := t.Context()
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := f.pool.Exec(ctx, q, args...)
		require.NoError(t, err)
	}
	// The other targets, their rows (copies of t0000's), and the run's
	// checkpoints of their tasks.
	exec(`INSERT INTO targets (url, scope) SELECT format('t%s.example', lpad(i::text, 4, '0')), 'ROOT_DOMAIN'
		FROM generate_series(1, $1 - 1) i`, targets)
	for _, table := range []string{"backlink_overview", "backlink_history", "backlinks", "ref_domains", "anchors", "indexed_pages"} {
		var names, cols string
		require.NoError(t, f.pool.QueryRow(ctx, `SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum),
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
	require.Equal(t, int64((days+1)*6*targets), f.count(t, `SELECT count(*) FROM task_checkpoints`))

	c.set(runNow.Add(time.Hour))
	start := time.Now()
	all := f.planAt(t, big, c, pipeline.PlanOptions{Refetch: true})
	refetch := time.Since(start)
	require.Zero(t, all.Held.Tasks)
	start = time.Now()
	plan := f.planAt(t, big, c, pipeline.PlanOptions{})
	held := time.Since(start)
	require.Equal(t, 6*targets, plan.Held.Tasks)
	start = time.Now()
	run := f.runAt(t, big, c, pipeline.RunOptions{})
	ran := time.Since(start)
	require.Equal(t, 6*targets, run.Held().Tasks)
	t.Logf("%d tasks, %d checkpoints: plan --refetch %s, plan %s (holdings about %s), a run that holds every task %s",
		6*targets, (days+1)*6*targets, refetch.Round(time.Millisecond), held.Round(time.Millisecond),
		(held - refetch).Round(time.Millisecond), ran.Round(time.Millisecond))
}

// TestReview23PlanOfATakenUpRunCountsHeldTasksAsGoingOn: etl plan before
// taking up a run that held tasks says they "go on from their checkpoint"
// (ResumePlan.GoOn), although they are held again (not sent): "1 tasks
// done are not run again, 2 go on from their checkpoint" for one task.
func TestReview23PlanOfATakenUpRunCountsHeldTasksAsGoingOn(t *testing.T) {
	t.Parallel()
	spec := func(budget string) string {
		return `jobs:
  - name: j
` + budget + `    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}}
    keywords: {keywords: [a, b], countries: [US], max_age: 0}
`
	}
	f, c := newClockFixture(t, runNow)
	f.runAt(t, spec(""), c, pipeline.RunOptions{})
	// An hour later under a cap of one keyword: the overview is held, one
	// keyword bought, the other skipped by the cap.
	c.set(runNow.Add(time.Hour))
	capped := spec("    budget: {per_run: 20}\n")
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(capped), c.now())
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: f.url, APIKey: "test-key"})
	require.NoError(t, err)
	r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.pool, Allocator: f.mem, Now: c.now, BatchRows: 5})
	require.NoError(t, err)
	second, _ := r.RunWith(t.Context(), s.Jobs[0], pipeline.RunOptions{})
	require.Equal(t, 1, second.Held().Tasks)
	require.Equal(t, 1, second.Skipped())

	c.set(runNow.Add(2 * time.Hour))
	plan := f.planAt(t, capped, c, pipeline.PlanOptions{})
	require.NotNil(t, plan.Resume)
	require.Equal(t, second.RunID, plan.Resume.RunID)
	require.Equal(t, 1, plan.Held.Tasks, "the overview is held again")
	require.Equal(t, 1, plan.Resume.GoOn, "%s: only the skipped keyword goes on; the overview is held", plan.Resume)
}

// TestReview23AFetchStampedInTheFutureIsNotFresh: a machine whose clock
// ran two days ahead (then set right) stamped a run in the future; the
// next nightly run held everything it bought (its now was "before" it, so
// less than max_age after it), although the data was a day old. A stamp
// more than max_age ahead of now is no longer fresh. (The night after,
// now equals the stamp: no run can tell that from a fresh fetch.)
func TestReview23AFetchStampedInTheFutureIsNotFresh(t *testing.T) {
	t.Parallel()
	spec := "jobs:\n  - name: j\n    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {overview: {}}\n"
	ahead := runNow.AddDate(0, 0, 2) // the clock two days ahead; truly runNow
	f, c := newClockFixture(t, ahead)
	f.runAt(t, spec, c, pipeline.RunOptions{})
	c.set(runNow.AddDate(0, 0, 1)) // set right; the next night
	sum := f.runAt(t, spec, c, pipeline.RunOptions{})
	require.Nil(t, sum.Tasks[0].Held, "a fetch stamped a day after now is not fresh: %v", sum.Tasks[0].Held)
}

// TestReview23AnIncrementalFetchDoesNotHoldAFullOne: Task.Key leaves out an
// incremental task's watermark, so a job that pulls links incrementally
// (ordered by first_seen_at ascending) and a job that asks for them all
// in the same order have the same key: the full job is held by the
// incremental job's fetch of the same month, which bought only the links
// first seen past its watermark. The month's partition then holds 300
// links of 900, and the full job buys none of the rest.
func TestReview23AnIncrementalFetchDoesNotHoldAFullOne(t *testing.T) {
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
	var then atomic.Pointer[time.Time]
	f, c := newClockFixtureMW(t, time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC), func(c *clock, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if t1 := then.Load(); t1 != nil {
				asOf(*t1)(next).ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	all := f.served(t, "/apis/v4/backlinks/v1/links", url.Values{"url": {"n900.example"}, "scope": {"ROOT_DOMAIN"},
		"limit": {"10000"}, "order_by": {"first_seen_at"}, "direction": {"ASC"}})
	require.Len(t, all, 900)
	t1, err := time.Parse("2006-01-02T15:04:05", all[600]["first_seen_at"])
	require.NoError(t, err)
	then.Store(&t1)
	f.runAt(t, delta, c, pipeline.RunOptions{}) // 31 October: the links first seen by T1
	then.Store(nil)

	c.set(time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC))
	d := f.runAt(t, delta, c, pipeline.RunOptions{}) // 1 November: those past the watermark
	require.Less(t, d.Tasks[0].Rows, int64(900))
	c.set(time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC))
	sum := f.runAt(t, full, c, pipeline.RunOptions{})
	require.Equal(t, d.Tasks[0].Task.Key(), sum.Tasks[0].Task.Key(), "one key")
	require.Nil(t, sum.Tasks[0].Held, "held by a fetch of the links past a watermark: %v", sum.Tasks[0].Held)
	require.Equal(t, int64(900), f.count(t, `SELECT count(*) FROM backlinks WHERE month = '2026-11-01'`))
}

// TestReview23ACutSummaryOverMidnightHoldsNoMonthItGotBefore: a summary
// answer cut off at 23:59 on the last day of a month brings the newest
// months (the one ending among them); the rest is asked for after
// midnight. The task's checkpoint is stamped with the last page's time, so
// the month that just ended counts as fetched after it ended, held for
// good, although its row came from the page before midnight.
func TestReview23ACutSummaryOverMidnightHoldsNoMonthItGotBefore(t *testing.T) {
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
			c.set(time.Date(2026, 12, 1, 0, 1, 0, 0, time.UTC)) // the rest is asked after midnight
			body := rec.Body.Bytes()
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		})
	})
	sum := f.runAt(t, spec, c, pipeline.RunOptions{})
	require.Equal(t, "succeeded", sum.Status())
	require.Equal(t, int64(2), f.count(t, `SELECT count(*) FROM unit_ledger`), "the cut page and the rest")

	c.set(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC))
	f.runAt(t, spec, c, pipeline.RunOptions{})
	for _, s := range log.got {
		t.Logf("summary served %s: %v", s.at.Format(time.RFC3339), s.months)
	}
	require.True(t, log.servedAfter(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), "2026-11"),
		"November's history was never asked for after November ended")
}

// TestReview23ThePlansCapCountsNoHeldTaskAsSkipped: the caps' simulation
// says how many tasks after the one a cap cuts would be skipped; held
// tasks (not sent, whatever the cap) were counted among them, while the
// run records them held, not skipped.
func TestReview23ThePlansCapCountsNoHeldTaskAsSkipped(t *testing.T) {
	t.Parallel()
	spec := func(budget string) string {
		return `jobs:
  - name: j
` + budget + `    targets: [{url: n2500.example, scope: ROOT_DOMAIN}]
    endpoints:
      links: {max_rows: 100, max_age: 0}
      overview: {}
      score-profile: {}
`
	}
	f, c := newClockFixture(t, runNow)
	f.runAt(t, spec(""), c, pipeline.RunOptions{})
	c.set(runNow.Add(time.Hour))
	capped := spec("    budget: {per_run: 1000}\n")
	plan := f.planAt(t, capped, c, pipeline.PlanOptions{})
	require.Equal(t, 2, plan.Held.Tasks, "the overview and the score profile")
	var cp *pipeline.CapPlan
	for i := range plan.Caps {
		if plan.Caps[i].Cap == "per_run" {
			cp = &plan.Caps[i]
		}
	}
	require.NotNil(t, cp)
	require.Equal(t, "links n2500.example (ROOT_DOMAIN)", cp.CutTask)

	s, err := jobspec.ParseSpec("jobs.yaml", []byte(capped), c.now())
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: f.url, APIKey: "test-key"})
	require.NoError(t, err)
	r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.pool, Allocator: f.mem, Now: c.now, BatchRows: 5})
	require.NoError(t, err)
	sum, _ := r.RunWith(t.Context(), s.Jobs[0], pipeline.RunOptions{})
	require.Equal(t, 2, sum.Held().Tasks)
	require.Equal(t, 1, sum.Skipped(), "the links, cut")
	require.Equal(t, 0, cp.NotStarted, "%s: the tasks after the links are held, not skipped", cp)
}
