package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/apitest"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/internal/redact"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/schedule"
)

func metricsLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func metricsEndpoint(t testing.TB, name string) *catalog.Endpoint {
	t.Helper()
	ep, ok := catalog.Lookup(name)
	require.True(t, ok, "no endpoint %q", name)
	return ep
}

// metricsLinksTasks is a links task for each url, each with a target of
// its own (as each job has).
func metricsLinksTasks(t testing.TB, urls ...string) []jobspec.Task {
	ep := metricsEndpoint(t, "links")
	tasks := make([]jobspec.Task, len(urls))
	for i, u := range urls {
		tasks[i] = jobspec.Task{Endpoint: ep, Target: &jobspec.Target{URL: u, Scope: "domain"}}
	}
	return tasks
}

func metricsKeywordTask(t testing.TB, keyword string) jobspec.Task {
	return jobspec.Task{Endpoint: metricsEndpoint(t, "keyword-metrics"), Keyword: keyword, Country: "us",
		Month: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
}

func metricsPing(err error) func(context.Context) error {
	return func(context.Context) error { return err }
}

// metricsDuration is the text of an etl_run_duration_seconds histogram
// holding one run of the job that took secs (of the buckets' seconds).
func metricsDuration(job string, secs float64) string {
	var b strings.Builder
	for _, le := range []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800} {
		n := 0
		if secs <= le {
			n = 1
		}
		fmt.Fprintf(&b, "etl_run_duration_seconds_bucket{job=%q,le=\"%g\"} %d\n", job, le, n)
	}
	fmt.Fprintf(&b, "etl_run_duration_seconds_bucket{job=%q,le=\"+Inf\"} 1\n", job)
	fmt.Fprintf(&b, "etl_run_duration_seconds_sum{job=%q} %g\n", job, secs)
	fmt.Fprintf(&b, "etl_run_duration_seconds_count{job=%q} 1\n", job)
	return b.String()
}

const metricsHelp = `# HELP etl_rows_loaded_total Rows loaded into the warehouse (received and not quarantined), by job and endpoint; counted per committed page.
# TYPE etl_rows_loaded_total counter
# HELP etl_rows_quarantined_total Rows received but quarantined as invalid, by job and endpoint; counted per committed page.
# TYPE etl_rows_quarantined_total counter
# HELP etl_units_total API units spent, by job and endpoint, per the catalog's price (including requests that failed after the API may have charged).
# TYPE etl_units_total counter
# HELP etl_pages_total Pages fetched and committed, by job and endpoint.
# TYPE etl_pages_total counter
# HELP etl_runs_in_progress Runs started and not yet finished, by job.
# TYPE etl_runs_in_progress gauge
`

func TestMetricsCountWhatEachPageAddsAndNotWhatAResumedTaskDidBefore(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	srv := httptest.NewServer(m.handler(metricsPing(nil), redact.New().String))
	t.Cleanup(srv.Close)
	scrape := func(want string, names ...string) {
		t.Helper()
		require.NoError(t, testutil.ScrapeAndCompare(srv.URL+"/metrics", strings.NewReader(want), names...))
	}

	tasks := metricsLinksTasks(t, "a.example", "b.example", "c.example")
	sum := &pipeline.Summary{Job: "nightly", RunID: 7, Attempt: 2}
	m.RunStarted(sum, tasks)
	// Task 0 resumes: an earlier process loaded two pages of it.
	m.TaskStarted(0, pipeline.TaskResult{Task: tasks[0], Resumed: true, Pages: 2, Rows: 200, Rejected: 5, Units: 400})
	m.PageLoaded(0, pipeline.TaskResult{Task: tasks[0], Resumed: true, Pages: 3, Rows: 300, Rejected: 8, Units: 600})

	// The counters move during the run, by the page only.
	scrape(metricsHelp+`
etl_rows_loaded_total{endpoint="links",job="nightly"} 97
etl_rows_quarantined_total{endpoint="links",job="nightly"} 3
etl_units_total{endpoint="links",job="nightly"} 200
etl_pages_total{endpoint="links",job="nightly"} 1
etl_runs_in_progress{job="nightly"} 1
`, "etl_rows_loaded_total", "etl_rows_quarantined_total", "etl_units_total", "etl_pages_total", "etl_runs_in_progress")

	m.PageLoaded(0, pipeline.TaskResult{Task: tasks[0], Resumed: true, Pages: 4, Rows: 350, Rejected: 8, Units: 700})
	// The next page fails after the API answered: its units were spent.
	res0 := pipeline.TaskResult{Task: tasks[0], Resumed: true, Pages: 4, Rows: 350, Rejected: 8, Units: 750, Err: errors.New("decoding links: cut short")}
	m.TaskFinished(0, res0)
	// Task 1 was done by the earlier process: nothing of it is counted.
	res1 := pipeline.TaskResult{Task: tasks[1], Resumed: true, Pages: 5, Rows: 500, Rejected: 1, Units: 1000}
	m.TaskFinished(1, res1)
	// Task 2 never starts: a cap was reached.
	res2 := pipeline.TaskResult{Task: tasks[2], Skipped: "monthly cap reached"}
	m.TaskFinished(2, res2)
	finished := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	sum.Tasks = []pipeline.TaskResult{res0, res1, res2}
	sum.Finished, sum.Took = finished, 90*time.Second
	require.Equal(t, "partial", sum.Status())
	m.RunFinished(sum)

	scrape(metricsHelp+`
etl_rows_loaded_total{endpoint="links",job="nightly"} 147
etl_rows_quarantined_total{endpoint="links",job="nightly"} 3
etl_units_total{endpoint="links",job="nightly"} 350
etl_pages_total{endpoint="links",job="nightly"} 2
etl_runs_in_progress{job="nightly"} 0
# HELP etl_task_errors_total Tasks that ended in an error, by job and endpoint.
# TYPE etl_task_errors_total counter
etl_task_errors_total{endpoint="links",job="nightly"} 1
# HELP etl_tasks_skipped_total Tasks skipped or stopped early (a cap reached, API units exhausted, an interrupt), by job and endpoint.
# TYPE etl_tasks_skipped_total counter
etl_tasks_skipped_total{endpoint="links",job="nightly"} 1
# HELP etl_runs_total Runs finished, by job and status (succeeded, partial, failed, interrupted).
# TYPE etl_runs_total counter
etl_runs_total{job="nightly",status="partial"} 1
# HELP etl_last_run_success 1 when the job's last run succeeded, 0 when it was partial, failed or interrupted.
# TYPE etl_last_run_success gauge
etl_last_run_success{job="nightly"} 0
# HELP etl_last_run_timestamp_seconds When the job's last run finished, in seconds since the Unix epoch.
# TYPE etl_last_run_timestamp_seconds gauge
etl_last_run_timestamp_seconds{job="nightly"} `+fmt.Sprint(finished.Unix())+`
# HELP etl_run_duration_seconds Wall time of finished runs, by job.
# TYPE etl_run_duration_seconds histogram
`+metricsDuration("nightly", 90),
		"etl_rows_loaded_total", "etl_rows_quarantined_total", "etl_units_total", "etl_pages_total", "etl_runs_in_progress",
		"etl_task_errors_total", "etl_tasks_skipped_total", "etl_runs_total", "etl_last_run_success",
		"etl_last_run_timestamp_seconds", "etl_run_duration_seconds")
}

func TestMetricsLastRunSuccessFollowsTheLatestRun(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	finished := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		sum     pipeline.Summary
		success float64
	}{
		{name: "succeeded", sum: pipeline.Summary{Job: "nightly", Finished: finished}, success: 1},
		{name: "interrupted", sum: pipeline.Summary{Job: "nightly", Finished: finished.Add(time.Hour), Interrupted: true}, success: 0},
		{name: "succeeded again", sum: pipeline.Summary{Job: "nightly", Finished: finished.Add(2 * time.Hour)}, success: 1},
	} {
		m.RunStarted(&tc.sum, nil)
		m.RunFinished(&tc.sum)
		require.Equal(t, tc.success, testutil.ToFloat64(m.lastRunSuccess.WithLabelValues("nightly")), tc.name)
		require.Equal(t, float64(tc.sum.Finished.Unix()), testutil.ToFloat64(m.lastRunTime.WithLabelValues("nightly")), tc.name)
	}
	require.Equal(t, 2.0, testutil.ToFloat64(m.runs.WithLabelValues("nightly", "succeeded")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.runs.WithLabelValues("nightly", "interrupted")))
	require.Equal(t, 0.0, testutil.ToFloat64(m.runsInProgress.WithLabelValues("nightly")))
}

// Jobs of one scheduler share a Runner, so one metrics sees their runs at
// once, from many goroutines, with the same task indexes.
func TestMetricsTellConcurrentRunsApart(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	jobs := []string{"alpha", "beta", "gamma"}
	sums := make([]*pipeline.Summary, len(jobs))
	runTasks := make([][]jobspec.Task, len(jobs))
	for j, job := range jobs {
		sums[j] = &pipeline.Summary{Job: job}
		// The same URLs and the same keyword task in every job.
		runTasks[j] = append(metricsLinksTasks(t, "a.example", "b.example"), metricsKeywordTask(t, "seo"))
		m.RunStarted(sums[j], runTasks[j])
	}
	// Job j's links tasks load j+1 pages of 10 rows (1 quarantined); the
	// keyword tasks load 3 pages of 1 row each, in every job.
	var wg sync.WaitGroup
	for j := range jobs {
		for i, task := range runTasks[j] {
			wg.Go(func() {
				pages, rows, rejected := j+1, int64(10), int64(1)
				if task.Keyword != "" {
					pages, rows, rejected = 3, 1, 0
				}
				res := pipeline.TaskResult{Task: task}
				m.TaskStarted(i, res)
				for range pages {
					res.Pages++
					res.Rows += rows
					res.Rejected += rejected
					res.Units += rows * 5
					m.PageLoaded(i, res)
				}
				m.TaskFinished(i, res)
			})
		}
	}
	wg.Wait()
	for j, job := range jobs {
		links := float64(2 * (j + 1))
		require.Equal(t, links*9, testutil.ToFloat64(m.rowsLoaded.WithLabelValues(job, "links")), job)
		require.Equal(t, links, testutil.ToFloat64(m.rowsQuarantined.WithLabelValues(job, "links")), job)
		require.Equal(t, links*50, testutil.ToFloat64(m.units.WithLabelValues(job, "links")), job)
		require.Equal(t, links, testutil.ToFloat64(m.pages.WithLabelValues(job, "links")), job)
		require.Equal(t, 3.0, testutil.ToFloat64(m.rowsLoaded.WithLabelValues(job, "keyword-metrics")), job)
		require.Equal(t, 3.0, testutil.ToFloat64(m.pages.WithLabelValues(job, "keyword-metrics")), job)
		require.Equal(t, 1.0, testutil.ToFloat64(m.runsInProgress.WithLabelValues(job)), job)
		m.RunFinished(sums[j])
	}
	require.Empty(t, m.inFlight)
}

// Two runs in flight have the same keyword task at the same index; their
// page counts say which run an event is about.
func TestMetricsTellSharedKeywordTasksApartByTheirPages(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	a, b := &pipeline.Summary{Job: "a"}, &pipeline.Summary{Job: "b"}
	kw := metricsKeywordTask(t, "seo")
	m.RunStarted(a, []jobspec.Task{kw})
	m.RunStarted(b, []jobspec.Task{kw})
	page := func(pages int) pipeline.TaskResult {
		return pipeline.TaskResult{Task: kw, Pages: pages, Rows: int64(pages), Units: int64(pages) * 5}
	}
	// a loads 3 pages, b one; b finishes while a is between its pages.
	m.TaskStarted(0, page(0)) // a
	m.TaskStarted(0, page(0)) // b
	m.PageLoaded(0, page(1))  // a
	m.PageLoaded(0, page(1))  // b
	m.PageLoaded(0, page(2))  // a
	b1 := page(1)
	b1.Units += 5 // b's next page failed after the API answered
	b1.Err = errors.New("decoding keyword-metrics: cut short")
	m.TaskFinished(0, b1)      // b
	m.PageLoaded(0, page(3))   // a
	m.TaskFinished(0, page(3)) // a
	m.RunFinished(a)
	m.RunFinished(b)

	for _, tc := range []struct {
		job                string
		pages, rows, units float64
		errors             float64
	}{
		{job: "a", pages: 3, rows: 3, units: 15, errors: 0},
		{job: "b", pages: 1, rows: 1, units: 10, errors: 1},
	} {
		require.Equal(t, tc.pages, testutil.ToFloat64(m.pages.WithLabelValues(tc.job, "keyword-metrics")), tc.job)
		require.Equal(t, tc.rows, testutil.ToFloat64(m.rowsLoaded.WithLabelValues(tc.job, "keyword-metrics")), tc.job)
		require.Equal(t, tc.units, testutil.ToFloat64(m.units.WithLabelValues(tc.job, "keyword-metrics")), tc.job)
		require.Equal(t, tc.errors, testutil.ToFloat64(m.taskErrors.WithLabelValues(tc.job, "keyword-metrics")), tc.job)
	}
}

func TestMetricsTicks(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	m.addJob("nightly")
	m.Tick("nightly", tickRan)
	m.Tick("nightly", tickRan)
	m.Tick("nightly", tickSkipped)
	m.Tick("nightly", tickLost)
	m.Tick("weekly", "caught up") // as pipeline's scheduler says it
	require.NoError(t, testutil.GatherAndCompare(m.reg, strings.NewReader(`
# HELP etl_schedule_ticks_total Schedule ticks, by job and outcome (ran, skipped, caught_up, lost: another scheduler claimed it).
# TYPE etl_schedule_ticks_total counter
etl_schedule_ticks_total{job="nightly",outcome="ran"} 2
etl_schedule_ticks_total{job="nightly",outcome="skipped"} 1
etl_schedule_ticks_total{job="nightly",outcome="caught_up"} 0
etl_schedule_ticks_total{job="nightly",outcome="lost"} 1
etl_schedule_ticks_total{job="weekly",outcome="caught_up"} 1
# HELP etl_runs_total Runs finished, by job and status (succeeded, partial, failed, interrupted).
# TYPE etl_runs_total counter
etl_runs_total{job="nightly",status="succeeded"} 0
etl_runs_total{job="nightly",status="partial"} 0
etl_runs_total{job="nightly",status="failed"} 0
etl_runs_total{job="nightly",status="interrupted"} 0
# HELP etl_runs_in_progress Runs started and not yet finished, by job.
# TYPE etl_runs_in_progress gauge
etl_runs_in_progress{job="nightly"} 0
`), "etl_schedule_ticks_total", "etl_runs_total", "etl_runs_in_progress"))
}

func TestMetricsRegistryHasTheGoAndProcessCollectors(t *testing.T) {
	t.Parallel()
	families, err := newMetrics().reg.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	require.True(t, names["go_goroutines"], "go collector")
	require.True(t, names["process_start_time_seconds"], "process collector")
}

func TestMetricsHealthz(t *testing.T) {
	t.Parallel()
	const password = "Hunter2-not-for-your-eyes"
	for _, tc := range []struct {
		name       string
		method     string
		ping       error
		wantStatus int
		wantBody   string
	}{
		{name: "database up", method: http.MethodGet, wantStatus: http.StatusOK, wantBody: "ok\n"},
		{name: "database down, its URL redacted", method: http.MethodGet,
			ping:       fmt.Errorf("failed to connect to `postgres://etl:%s@db:5432/etl`: connection refused", password),
			wantStatus: http.StatusServiceUnavailable,
			wantBody:   "database: failed to connect to `postgres://etl:" + redact.Mask + "@db:5432/etl`: connection refused\n"},
		{name: "not a GET", method: http.MethodPost, wantStatus: http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var deadline time.Duration
			ping := func(ctx context.Context) error {
				if d, ok := ctx.Deadline(); ok {
					deadline = time.Until(d)
				}
				return tc.ping
			}
			h := newMetrics().handler(ping, redact.New(password).String)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), tc.method, "/healthz", nil))
			require.Equal(t, tc.wantStatus, rec.Code)
			if tc.wantStatus == http.StatusMethodNotAllowed {
				return
			}
			require.Equal(t, tc.wantBody, rec.Body.String())
			require.NotContains(t, rec.Body.String(), password)
			require.Positive(t, deadline, "ping has a deadline")
			require.LessOrEqual(t, deadline, healthTimeout)
		})
	}
}

func TestMetricsServeHTTPAnswersAndStops(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	m.Tick("nightly", tickRan)
	s, err := serveHTTP(t.Context(), "127.0.0.1:0", m.handler(metricsPing(nil), redact.New().String), metricsLogger(t))
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	base := "http://" + s.Addr().String()

	get := func(path string) (int, string, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	code, body, err := get("/healthz")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
	code, body, err = get("/metrics")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `etl_schedule_ticks_total{job="nightly",outcome="ran"} 1`)
	require.Contains(t, body, "go_goroutines")

	// The port is taken: the second server fails at once.
	_, err = serveHTTP(t.Context(), s.Addr().String(), http.NotFoundHandler(), metricsLogger(t))
	require.Error(t, err)

	s.Stop()
	s.Stop() // again: a no-op
	client.CloseIdleConnections()
	_, _, err = get("/healthz")
	require.Error(t, err, "the server answers after Stop")
}

// TestMetricsCountTheJobsPushes: a scheduled job's listings push step
// (listings: {push: RELATION}), run by a runner that the metrics observe,
// against the sandbox: the pushes by status, its locations by outcome,
// its requests by kind, the answers 429 and when it ended, as its
// summary says; a job without a push step has no push series.
func TestMetricsCountTheJobsPushes(t *testing.T) {
	t.Parallel()
	const account = "x-n30"
	ctx := t.Context()
	wall := apitest.NewVirtualClock(cliNow)
	sb, err := sandbox.New(sandbox.Config{Seed: 7, Now: func() time.Time { return cliNow }, WallClock: wall.Now, APIKeys: []string{account}})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	tok, err := sb.IssueToken(account)
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: srv.URL, Clock: wall, Authorize: apitest.Bearer(tok.AccessToken)})
	require.NoError(t, err)
	pool := pgtest.NewPool(t)
	m := newMetrics()
	runner, err := pipeline.NewRunner(pipeline.Config{Pool: pool, Now: wall.Now, Observer: m,
		AccountClient: func(string) (*extract.Client, error) { return client, nil }})
	require.NoError(t, err)
	spec, err := jobspec.ParseSpec("jobs.yaml", fmt.Appendf(nil, `jobs:
  - name: pull
    schedule: "0 3 * * *"
    listings: {account: %[1]s}
  - name: stores
    schedule: "0 4 * * *"
    listings: {account: %[1]s, push: desired}
`, account), cliNow)
	require.NoError(t, err)
	for _, j := range schedule.Scheduled(spec) {
		m.addSpecJob(j)
	}
	sum, err := runner.Run(ctx, spec.Jobs[0])
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
	require.Nil(t, sum.Tasks[0].Push)

	// Every COMPLETE location renamed but one, and one refused.
	_, err = pool.Exec(ctx, `CREATE TABLE desired AS SELECT location_id AS id, location_name, city, address,
		additional_address_info, zip, phone, region, website_url, business_hours, holiday_hours, reopen_date
		FROM listings_current WHERE account = $1 AND status = 'COMPLETE'`, account)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE desired SET location_name = 'Metrics ' || id WHERE id <> (SELECT min(id) FROM desired)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE desired SET phone = '555 0100' WHERE id = (SELECT max(id) FROM desired)`)
	require.NoError(t, err)
	wall.Sleep(ctx, time.Minute)
	sum, err = runner.Run(ctx, spec.Jobs[1])
	require.Error(t, err, "its only task failed: a location was refused, as etl listings push exits 3")
	require.Equal(t, "failed", sum.Status())
	ps := sum.Tasks[0].Push
	require.NotNil(t, ps)
	require.Equal(t, 1, ps.Refused)
	require.Equal(t, 1, ps.Unchanged)
	require.Positive(t, ps.Updated)

	require.NoError(t, testutil.GatherAndCompare(m.reg, strings.NewReader(fmt.Sprintf(`
# HELP etl_listings_pushes_total Listings pushes of the job's push step, by job and status (succeeded, partial: some location failed, was refused or is left in doubt or unsent, failed, interrupted).
# TYPE etl_listings_pushes_total counter
etl_listings_pushes_total{job="stores",status="succeeded"} 0
etl_listings_pushes_total{job="stores",status="partial"} 1
etl_listings_pushes_total{job="stores",status="failed"} 0
etl_listings_pushes_total{job="stores",status="interrupted"} 0
# HELP etl_listings_push_items_total Locations of listings pushes, by job and outcome (updated, failed, refused, unchanged, waiting, in_doubt, not_sent).
# TYPE etl_listings_push_items_total counter
etl_listings_push_items_total{job="stores",outcome="updated"} %d
etl_listings_push_items_total{job="stores",outcome="failed"} 0
etl_listings_push_items_total{job="stores",outcome="refused"} 1
etl_listings_push_items_total{job="stores",outcome="unchanged"} 1
etl_listings_push_items_total{job="stores",outcome="waiting"} 0
etl_listings_push_items_total{job="stores",outcome="in_doubt"} 0
etl_listings_push_items_total{job="stores",outcome="not_sent"} 0
# HELP etl_listings_push_requests_total Requests listings pushes sent, by job and kind (bulk: Update locations, single: Update location, read_back: Get location of a location in doubt); the client's retries are not counted.
# TYPE etl_listings_push_requests_total counter
etl_listings_push_requests_total{job="stores",kind="bulk"} 1
etl_listings_push_requests_total{job="stores",kind="single"} 0
etl_listings_push_requests_total{job="stores",kind="read_back"} 0
# HELP etl_listings_push_rate_limited_total Answers 429 (rate limit exceeded) that listings pushes met, retries included, by job.
# TYPE etl_listings_push_rate_limited_total counter
etl_listings_push_rate_limited_total{job="stores"} 0
# HELP etl_listings_last_push_timestamp_seconds When the job's last listings push ended, in seconds since the Unix epoch.
# TYPE etl_listings_last_push_timestamp_seconds gauge
etl_listings_last_push_timestamp_seconds{job="stores"} %v
`, ps.Updated, float64(ps.Finished.UnixNano())/1e9)), "etl_listings_pushes_total", "etl_listings_push_items_total", "etl_listings_push_requests_total",
		"etl_listings_push_rate_limited_total", "etl_listings_last_push_timestamp_seconds"))
}

// TestMetricsCountHeldTasksAndTheUnitsTheySaved: a task held (not sent: the
// warehouse held its data) counts in etl_tasks_held_total, and what its
// last fetch cost in etl_units_saved_total; it spends nothing.
func TestMetricsCountHeldTasksAndTheUnitsTheySaved(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	srv := httptest.NewServer(m.handler(metricsPing(nil), redact.New().String))
	t.Cleanup(srv.Close)
	tasks := metricsLinksTasks(t, "a.example", "b.example")
	sum := &pipeline.Summary{Job: "nightly", RunID: 8, Attempt: 1}
	m.RunStarted(sum, tasks)
	res0 := pipeline.TaskResult{Task: tasks[0], Held: &planning.Held{RunID: 7, Units: 4500}}
	res1 := pipeline.TaskResult{Task: tasks[1], Held: &planning.Held{RunID: 7, Units: 900, Closed: true}}
	m.TaskFinished(0, res0)
	m.TaskFinished(1, res1)
	sum.Tasks = []pipeline.TaskResult{res0, res1}
	m.RunFinished(sum)
	require.NoError(t, testutil.ScrapeAndCompare(srv.URL+"/metrics", strings.NewReader(`# HELP etl_tasks_held_total Tasks not sent because the warehouse held their data (fetched within max_age, or closed months), by job and endpoint.
# TYPE etl_tasks_held_total counter
etl_tasks_held_total{endpoint="links",job="nightly"} 2
# HELP etl_units_saved_total API units not spent because the warehouse held the data: what the held tasks' last fetches cost, and the closed months of summary history not asked again at their price, by job and endpoint.
# TYPE etl_units_saved_total counter
etl_units_saved_total{endpoint="links",job="nightly"} 5400
`), "etl_tasks_held_total", "etl_units_saved_total", "etl_units_total"), "and no unit spent")
}
