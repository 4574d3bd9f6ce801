package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/push"
)

// Outcomes of a schedule tick, as the outcome label of
// etl_schedule_ticks_total says them.
const (
	tickRan      = "ran"       // this scheduler claimed the tick and ran the job
	tickCaughtUp = "caught_up" // a tick missed while the scheduler was down, run late
	tickSkipped  = "skipped"   // claimed, but the job was still running
	tickLost     = "lost"      // another scheduler claimed it
)

var tickOutcomes = []string{tickRan, tickCaughtUp, tickSkipped, tickLost}

// healthTimeout bounds the database ping of /healthz.
const healthTimeout = 2 * time.Second

// metrics is the Prometheus instrumentation of `etl schedule`: a
// pipeline.Observer that counts what runs do as they do it, and the
// schedule's ticks. It has a registry of its own (with the Go and process
// collectors), served by handler.
//
// Row, page and unit counters move per page, by what the page added: a
// TaskResult counts a task cumulatively, and a resumed task starts from
// what an earlier process did (its TaskStarted says how much), so only the
// increase after TaskStarted is counted. A task that never starts (done in
// an earlier attempt, or skipped) adds nothing but its skip or error.
//
// One metrics may observe several runs at once (jobs of one scheduler share
// a Runner). The Observer's task methods do not say which run they are
// about, so a task is matched to the run in flight whose task list holds it
// at that index. That is exact for target and target-set tasks (a job's
// targets are its own). A keyword task that two jobs in flight both have at
// the same index is told apart by its page count, which fails only when
// both copies stand at the same page: then part of their counts may be
// credited to the other job.
type metrics struct {
	reg *prometheus.Registry

	runs            *prometheus.CounterVec
	runDuration     *prometheus.HistogramVec
	runsInProgress  *prometheus.GaugeVec
	lastRunTime     *prometheus.GaugeVec
	lastRunSuccess  *prometheus.GaugeVec
	rowsLoaded      *prometheus.CounterVec
	rowsQuarantined *prometheus.CounterVec
	units           *prometheus.CounterVec
	pages           *prometheus.CounterVec
	taskErrors      *prometheus.CounterVec
	tasksSkipped    *prometheus.CounterVec
	tasksHeld       *prometheus.CounterVec
	unitsSaved      *prometheus.CounterVec
	ticks           *prometheus.CounterVec
	pushes          *prometheus.CounterVec
	pushItems       *prometheus.CounterVec
	pushRequests    *prometheus.CounterVec
	pushRateLimited *prometheus.CounterVec
	lastPushTime    *prometheus.GaugeVec

	mu       sync.Mutex
	inFlight []*observedRun // in the order they started
}

// observedRun is a run in flight as the observer saw it start.
type observedRun struct {
	sum   *pipeline.Summary
	job   string
	tasks []jobspec.Task
	state []taskCounts
}

// taskCounts is what one task of a run has been counted up to.
type taskCounts struct {
	started, finished bool
	pages             int
	loaded, rejected  int64 // rows loaded (received less quarantined), quarantined
	units             int64
}

// newMetrics returns metrics with a fresh registry.
func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := promauto.With(reg)
	jobEndpoint := []string{"job", "endpoint"}
	return &metrics{
		reg: reg,
		runs: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_runs_total",
			Help: "Runs finished, by job and status (succeeded, partial, failed, interrupted).",
		}, []string{"job", "status"}),
		runDuration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etl_run_duration_seconds",
			Help:    "Wall time of finished runs, by job.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800},
		}, []string{"job"}),
		runsInProgress: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "etl_runs_in_progress",
			Help: "Runs started and not yet finished, by job.",
		}, []string{"job"}),
		lastRunTime: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "etl_last_run_timestamp_seconds",
			Help: "When the job's last run finished, in seconds since the Unix epoch.",
		}, []string{"job"}),
		lastRunSuccess: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "etl_last_run_success",
			Help: "1 when the job's last run succeeded, 0 when it was partial, failed or interrupted.",
		}, []string{"job"}),
		rowsLoaded: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_rows_loaded_total",
			Help: "Rows loaded into the warehouse (received and not quarantined), by job and endpoint; counted per committed page.",
		}, jobEndpoint),
		rowsQuarantined: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_rows_quarantined_total",
			Help: "Rows received but quarantined as invalid, by job and endpoint; counted per committed page.",
		}, jobEndpoint),
		units: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_units_total",
			Help: "API units spent, by job and endpoint, per the catalog's price (including requests that failed after the API may have charged).",
		}, jobEndpoint),
		pages: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_pages_total",
			Help: "Pages fetched and committed, by job and endpoint.",
		}, jobEndpoint),
		taskErrors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_task_errors_total",
			Help: "Tasks that ended in an error, by job and endpoint.",
		}, jobEndpoint),
		tasksSkipped: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_tasks_skipped_total",
			Help: "Tasks skipped or stopped early (a cap reached, API units exhausted, an interrupt), by job and endpoint.",
		}, jobEndpoint),
		tasksHeld: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_tasks_held_total",
			Help: "Tasks not sent because the warehouse held their data (fetched within max_age, or closed months), by job and endpoint.",
		}, jobEndpoint),
		unitsSaved: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_units_saved_total",
			Help: "API units not spent because the warehouse held the data: what the held tasks' last fetches cost, and the closed months of summary history not asked again at their price, by job and endpoint.",
		}, jobEndpoint),
		ticks: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_schedule_ticks_total",
			Help: "Schedule ticks, by job and outcome (ran, skipped, caught_up, lost: another scheduler claimed it).",
		}, []string{"job", "outcome"}),
		pushes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_listings_pushes_total",
			Help: "Listings pushes of the job's push step, by job and status (succeeded, partial: some location failed, was refused or is left in doubt or unsent, failed, interrupted).",
		}, []string{"job", "status"}),
		pushItems: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_listings_push_items_total",
			Help: "Locations of listings pushes, by job and outcome (updated, failed, refused, unchanged, waiting, in_doubt, not_sent).",
		}, []string{"job", "outcome"}),
		pushRequests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_listings_push_requests_total",
			Help: "Requests listings pushes sent, by job and kind (bulk: Update locations, single: Update location, read_back: Get location of a location in doubt); the client's retries are not counted.",
		}, []string{"job", "kind"}),
		pushRateLimited: f.NewCounterVec(prometheus.CounterOpts{
			Name: "etl_listings_push_rate_limited_total",
			Help: "Answers 429 (rate limit exceeded) that listings pushes met, retries included, by job.",
		}, []string{"job"}),
		lastPushTime: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "etl_listings_last_push_timestamp_seconds",
			Help: "When the job's last listings push ended, in seconds since the Unix epoch.",
		}, []string{"job"}),
	}
}

// Push statuses and item outcomes, as the labels of the push metrics say
// them.
var (
	pushStatuses     = []string{"succeeded", "partial", "failed", "interrupted"}
	pushItemOutcomes = []string{"updated", "failed", "refused", "unchanged", "waiting", "in_doubt", "not_sent"}
	pushRequestKinds = []string{"bulk", "single", "read_back"}
)

// addSpecJob makes the series of a job of the spec exist at 0: addJob's,
// and addPushJob's when it has a listings push step.
func (m *metrics) addSpecJob(j *jobspec.Job) {
	m.addJob(j.Name)
	if j.Listings != nil && j.Listings.Push != "" {
		m.addPushJob(j.Name)
	}
}

// addPushJob makes the push series of a job with a listings push step
// exist at 0 before its first push.
func (m *metrics) addPushJob(job string) {
	for _, s := range pushStatuses {
		m.pushes.WithLabelValues(job, s)
	}
	for _, o := range pushItemOutcomes {
		m.pushItems.WithLabelValues(job, o)
	}
	for _, k := range pushRequestKinds {
		m.pushRequests.WithLabelValues(job, k)
	}
	m.pushRateLimited.WithLabelValues(job)
}

// countPush counts a push of the job's push step.
func (m *metrics) countPush(job string, s *push.Summary) {
	status := "succeeded"
	switch {
	case s.Status == "interrupted":
		status = "interrupted"
	case s.Status == "failed":
		status = "failed"
	case s.Partial():
		status = "partial"
	}
	m.pushes.WithLabelValues(job, status).Inc()
	for i, n := range []int{s.Updated, s.Failed, s.Refused, s.Unchanged, s.Waiting, s.InDoubt, s.NotSent} {
		m.pushItems.WithLabelValues(job, pushItemOutcomes[i]).Add(float64(n))
	}
	for i, n := range []int{s.BulkRequests, s.SingleRequests, s.ReadBacks} {
		m.pushRequests.WithLabelValues(job, pushRequestKinds[i]).Add(float64(n))
	}
	m.pushRateLimited.WithLabelValues(job).Add(float64(s.TooMany))
	m.lastPushTime.WithLabelValues(job).Set(float64(s.Finished.UnixNano()) / 1e9)
}

// addJob makes the job's run, in-progress and tick series exist at 0
// before its first run, so rates and alerts see them from the start.
func (m *metrics) addJob(job string) {
	for _, s := range runs.EndStatuses {
		m.runs.WithLabelValues(job, s)
	}
	for _, o := range tickOutcomes {
		m.ticks.WithLabelValues(job, o)
	}
	m.runsInProgress.WithLabelValues(job)
}

// Tick counts a tick of the job's schedule; outcome is one of tickRan,
// tickCaughtUp, tickSkipped and tickLost. Spaces become underscores, so the
// scheduler's "caught up" counts as caught_up.
func (m *metrics) Tick(job, outcome string) {
	m.ticks.WithLabelValues(job, strings.ReplaceAll(outcome, " ", "_")).Inc()
}

// RunStarted implements pipeline.Observer.
func (m *metrics) RunStarted(sum *pipeline.Summary, tasks []jobspec.Task) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight = append(m.inFlight, &observedRun{sum: sum, job: sum.Job, tasks: tasks, state: make([]taskCounts, len(tasks))})
	m.runsInProgress.WithLabelValues(sum.Job).Inc()
}

// TaskStarted implements pipeline.Observer: what res counts already is an
// earlier attempt's, and is not counted.
func (m *metrics) TaskStarted(i int, res pipeline.TaskResult) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, c := m.find(i, res.Task, func(c *taskCounts) bool { return !c.started && !c.finished })
	if c == nil {
		return
	}
	c.started = true
	c.raise(res)
}

// PageLoaded implements pipeline.Observer.
func (m *metrics) PageLoaded(i int, res pipeline.TaskResult) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, c := m.find(i, res.Task, func(c *taskCounts) bool { return c.started && !c.finished && res.Pages == c.pages+1 })
	if c == nil {
		return
	}
	m.count(r.job, c, res)
}

// TaskFinished implements pipeline.Observer. A failed page may have cost
// units after the last PageLoaded; they are counted here.
func (m *metrics) TaskFinished(i int, res pipeline.TaskResult) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, c := m.find(i, res.Task, func(c *taskCounts) bool { return !c.finished && (!c.started || res.Pages == c.pages) })
	if c == nil {
		return
	}
	m.count(r.job, c, res)
	c.finished = true
	ep := endpointName(res.Task)
	if res.Err != nil {
		m.taskErrors.WithLabelValues(r.job, ep).Inc()
	}
	if res.Skipped != "" {
		m.tasksSkipped.WithLabelValues(r.job, ep).Inc()
	}
	if res.Held != nil {
		m.tasksHeld.WithLabelValues(r.job, ep).Inc()
		m.unitsSaved.WithLabelValues(r.job, ep).Add(float64(res.Held.Units))
	} else if n := res.Task.HeldMonths; n > 0 {
		m.unitsSaved.WithLabelValues(r.job, ep).Add(float64(n) * float64(res.Task.Endpoint.Price.Units))
	}
	if res.Push != nil && !res.Push.DryRun && res.Push.PushID != 0 {
		m.countPush(r.job, res.Push)
	}
}

// RunFinished implements pipeline.Observer.
func (m *metrics) RunFinished(sum *pipeline.Summary) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range m.inFlight {
		if r.sum == sum {
			m.inFlight = append(m.inFlight[:i], m.inFlight[i+1:]...)
			m.runsInProgress.WithLabelValues(sum.Job).Dec()
			break
		}
	}
	status := sum.Status()
	m.runs.WithLabelValues(sum.Job, status).Inc()
	m.runDuration.WithLabelValues(sum.Job).Observe(sum.Took.Seconds())
	m.lastRunTime.WithLabelValues(sum.Job).Set(float64(sum.Finished.UnixNano()) / 1e9)
	success := 0.0
	if status == "succeeded" {
		success = 1
	}
	m.lastRunSuccess.WithLabelValues(sum.Job).Set(success)
}

// find returns the run in flight that task i, t, belongs to and what the
// task has been counted up to, or nil when no run holds it. Where several
// runs hold the same task at i, the first whose count fits the event wins.
func (m *metrics) find(i int, t jobspec.Task, fits func(*taskCounts) bool) (*observedRun, *taskCounts) {
	var first *observedRun
	for _, r := range m.inFlight {
		if i < 0 || i >= len(r.tasks) || !sameTask(r.tasks[i], t) {
			continue
		}
		if fits(&r.state[i]) {
			return r, &r.state[i]
		}
		if first == nil {
			first = r
		}
	}
	if first == nil {
		return nil, nil
	}
	return first, &first.state[i]
}

// sameTask says a and b are the same task of a run; the runner may have
// set b's Since (an incremental task's watermark) since.
func sameTask(a, b jobspec.Task) bool {
	return a.Endpoint == b.Endpoint && a.Target == b.Target && a.Set == b.Set &&
		a.Keyword == b.Keyword && a.Country == b.Country && a.Month.Equal(b.Month)
}

// count adds what res has beyond c to the job's counters. A task that did
// not start counts nothing: whatever res holds was done before.
func (m *metrics) count(job string, c *taskCounts, res pipeline.TaskResult) {
	if !c.started {
		return
	}
	ep := endpointName(res.Task)
	add := func(v *prometheus.CounterVec, delta int64) {
		if delta > 0 {
			v.WithLabelValues(job, ep).Add(float64(delta))
		}
	}
	add(m.rowsLoaded, res.Rows-res.Rejected-c.loaded)
	add(m.rowsQuarantined, res.Rejected-c.rejected)
	add(m.units, res.Units-c.units)
	add(m.pages, int64(res.Pages-c.pages))
	c.raise(res)
}

// raise moves c up to res; it never moves down, so nothing is counted twice.
func (c *taskCounts) raise(res pipeline.TaskResult) {
	c.pages = max(c.pages, res.Pages)
	c.loaded = max(c.loaded, res.Rows-res.Rejected)
	c.rejected = max(c.rejected, res.Rejected)
	c.units = max(c.units, res.Units)
}

func endpointName(t jobspec.Task) string {
	if t.Endpoint == nil {
		return ""
	}
	return t.Endpoint.Name
}

// handler serves /metrics (the registry, in Prometheus' formats) and
// /healthz: 200 "ok" when ping (the pool's Ping) succeeds within
// healthTimeout, else 503 with ping's error passed through sanitize (it may
// carry the database URL).
func (m *metrics) handler(ping func(context.Context) error, sanitize func(string) string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := ping(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(sanitize("database: "+err.Error()) + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// shutdownGrace bounds how long httpServer.Stop waits for requests in
// flight before it closes their connections.
const shutdownGrace = 5 * time.Second

// httpServer serves h on a listener of its own until Stop.
type httpServer struct {
	ln   net.Listener
	srv  *http.Server
	log  *slog.Logger
	done chan struct{} // closed when Serve has returned
	once sync.Once
}

// serveHTTP listens on addr (host:port; port 0 picks one) and serves h
// there in the background until Stop. A listen error (the port in use) is
// returned at once. Cancelling ctx does not stop the server, so /metrics
// stays up while runs in flight drain; requests see ctx's values only.
func serveHTTP(ctx context.Context, addr string, h http.Handler, log *slog.Logger) (*httpServer, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	base := context.WithoutCancel(ctx)
	s := &httpServer{ln: ln, log: log, done: make(chan struct{}), srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}}
	log.LogAttrs(ctx, slog.LevelInfo, "serving metrics and health check", slog.String("addr", ln.Addr().String()))
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.LogAttrs(base, slog.LevelError, "metrics server stopped", slog.String("error", err.Error()))
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *httpServer) Addr() net.Addr { return s.ln.Addr() }

// Stop stops accepting connections, lets requests in flight finish for up
// to shutdownGrace, closes what is left and returns when the server is
// done. It may be called more than once.
func (s *httpServer) Stop() {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "metrics server: requests cut short", slog.String("error", err.Error()))
			_ = s.srv.Close()
		}
		<-s.done
	})
}
