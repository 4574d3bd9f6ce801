package planning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v15/arrow/array"
	"golang.org/x/sync/errgroup"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/migrations"
	"github.com/seoetl/etl/transform"
)

// ProbeReport is what the probes of a plan did and cost.
type ProbeReport struct {
	// RunID is the run the probes were recorded under (trigger probe);
	// 0 when there was nothing to probe.
	RunID int64 `json:"run_id"`
	// Requests were sent; Units is what they cost, per the ledger.
	Requests int   `json:"requests"`
	Units    int64 `json:"units"`
	// Learned counts the tasks whose total the probes learned.
	Learned int `json:"learned"`
	// Stopped says why the probes stopped before the end (a cap, or the
	// API out of units); the tasks not probed keep what was known.
	Stopped string `json:"stopped,omitempty"`
	// Failed lists the probes that failed, each with its error.
	Failed []string `json:"failed,omitempty"`
}

func (r *ProbeReport) String() string {
	s := fmt.Sprintf("probe: %d requests, %d units, %d totals learned", r.Requests, r.Units, r.Learned)
	if r.RunID != 0 {
		s += fmt.Sprintf(" (run %d)", r.RunID)
	}
	return s
}

// aProbe is one probe request and the tasks whose totals it tells.
type aProbe struct {
	// ask is what the ledger reserves for: one line of the task's
	// endpoint, or the overview of a target.
	endpoint *catalog.Endpoint
	target   string // for the ledger
	params   url.Values
	// tasks are told by the answer: one task by meta.total, or the tasks
	// an overview covers, each by its endpoint's TotalField.
	tasks []jobspec.Task
	// lines is the most lines the probe may return: 1, or the endpoint's
	// bound where it takes no limit.
	lines int
}

// probes lists the probe requests of tasks, in task order: per target,
// one overview for the tasks it covers when that costs less than asking
// each of them with limit=1; limit=1 for every other list task that takes
// a limit. The score profile takes no limit: it is asked whole, which
// costs at most its bound (101 lines at 1 unit). Per-request tasks and
// comparison (one line per url, known) get none.
func probes(tasks []jobspec.Task) []*aProbe {
	ov, _ := catalog.Lookup("overview")
	covered := map[jobspec.Target][]jobspec.Task{}
	for _, t := range tasks {
		if overviewCovers(t) {
			k := jobspec.Target{URL: t.Target.URL, Scope: t.Target.Scope}
			covered[k] = append(covered[k], t)
		}
	}
	byOverview := map[jobspec.Target]bool{}
	for k, ts := range covered {
		var each int64
		for _, t := range ts {
			each += t.Endpoint.Price.Worst(1)
		}
		byOverview[k] = ov.Price.Worst(0) < each
	}
	var out []*aProbe
	done := map[jobspec.Target]bool{}
	for _, t := range tasks {
		if overviewCovers(t) && byOverview[jobspec.Target{URL: t.Target.URL, Scope: t.Target.Scope}] {
			k := jobspec.Target{URL: t.Target.URL, Scope: t.Target.Scope}
			if done[k] {
				continue
			}
			done[k] = true
			var fields []string
			for _, c := range covered[k] {
				fields = append(fields, c.Endpoint.TotalField)
			}
			o := jobspec.Task{Endpoint: ov, Target: t.Target}
			q := o.Params(0, 0)
			q.Set("fields", strings.Join(fields, ","))
			q.Set("format", "json")
			out = append(out, &aProbe{endpoint: ov, target: o.Request(), params: q, tasks: covered[k], lines: 1})
			continue
		}
		if t.Endpoint.Shape != catalog.List {
			continue
		}
		var q url.Values
		lines := 1
		if _, ok := t.Endpoint.Param("limit"); ok {
			q = t.Params(0, 1)
		} else if t.Endpoint.MaxRows > 0 {
			q, lines = t.Params(0, 0), t.Endpoint.MaxRows
		} else {
			continue
		}
		if _, ok := t.Endpoint.Param("format"); ok {
			q.Set("format", "json")
		}
		out = append(out, &aProbe{endpoint: t.Endpoint, target: t.Request(), params: q, tasks: []jobspec.Task{t}, lines: lines})
	}
	return out
}

// probe sends the probes of tasks through the ledger, in a run of job
// with trigger probe, and records the totals they learn in task_totals.
// A cap that cannot pay the next probe, or a 403, stops the probes; a
// probe that fails is reported and the others go on.
func (p *Planner) probe(ctx context.Context, job *jobspec.Job, tasks []jobspec.Task) (*ProbeReport, map[totalKey]bool, error) {
	rep := &ProbeReport{}
	learned := map[totalKey]bool{}
	list := probes(tasks)
	if len(list) == 0 {
		return rep, learned, nil
	}
	runID, err := p.cfg.Ledger.StartRun(ctx, job.Name, "probe")
	if err != nil {
		return nil, nil, migrations.NotMigrated(err)
	}
	rep.RunID = runID
	acct := budget.Account{RunID: runID, Job: job.Name, Caps: job.Caps}
	var stop atomic.Pointer[string]
	var answered atomic.Bool // the API has answered a probe (see send)
	var mu sync.Mutex
	var lines int64
	g := new(errgroup.Group)
	g.SetLimit(p.cfg.Concurrency)
	for _, pr := range list {
		g.Go(func() error {
			if stop.Load() != nil {
				return nil
			}
			got, sent, totals, err := p.send(ctx, acct, pr, &answered)
			mu.Lock()
			defer mu.Unlock()
			rep.Requests += sent
			lines += int64(got)
			mistake := ""
			if err != nil && !answered.Load() {
				// Nothing at ETL_API_URL has answered: another service
				// there, or none (see runTask); the other probes would
				// meet the same.
				if mistake = p.cfg.Client.NotHTTP(err); mistake == "" {
					mistake = p.cfg.Client.Unreachable(err)
				}
			}
			switch {
			case mistake != "":
				stop.CompareAndSwap(nil, &mistake)
			case errors.Is(err, budget.ErrExhausted):
				reason := err.Error()
				stop.CompareAndSwap(nil, &reason)
			case errors.Is(err, extract.ErrUnitsExhausted):
				reason := runs.SkippedUnits
				stop.CompareAndSwap(nil, &reason)
			case err != nil:
				rep.Failed = append(rep.Failed, fmt.Sprintf("%s: %v", pr.tasks[0], err))
			}
			for i, total := range totals {
				if total < 0 {
					continue
				}
				source := totalByMetaTotal
				if pr.endpoint.Shape == catalog.Object {
					source = totalByOverview
				}
				t := pr.tasks[i]
				if err := SaveTotal(ctx, p.cfg.Pool, t, total, source, p.cfg.Now()); err != nil {
					rep.Failed = append(rep.Failed, fmt.Sprintf("%s: %v", t, err))
					continue
				}
				learned[totalKeyOf(t)] = true
				rep.Learned++
			}
			return nil
		})
	}
	_ = g.Wait() // probes report through rep
	if s := stop.Load(); s != nil {
		rep.Stopped = *s
	}
	status := "succeeded"
	switch {
	case len(rep.Failed) == len(list):
		status = "failed"
	case rep.Stopped != "" || len(rep.Failed) > 0:
		status = "partial"
	}
	msg := rep.Stopped
	if msg == "" && len(rep.Failed) > 0 {
		msg = strings.Join(rep.Failed, "; ")
	}
	if err := p.cfg.Ledger.FinishRun(context.WithoutCancel(ctx), runID, status, lines, msg); err != nil {
		return nil, nil, err
	}
	units, err := p.cfg.Ledger.RunUnits(context.WithoutCancel(ctx), runID)
	if err != nil {
		return nil, nil, fmt.Errorf("reading what the probes cost: %w", err)
	}
	rep.Units = units
	p.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "probes finished", slog.String("job", job.Name), slog.Int64("run_id", runID),
		slog.Int("requests", rep.Requests), slog.Int64("units", units), slog.Int("learned", rep.Learned))
	return rep, learned, nil
}

// send reserves, sends and settles one probe. It returns the lines the
// answer held, whether a request was sent (0 or 1), and the total of each
// of the probe's tasks (-1 where the answer did not say).
//
// As in the runner, an error answer, or a request that was never sent,
// costs nothing and is released, and so does one that got nothing HTTP
// back while no probe has been answered (answered: nothing that speaks
// the API is there); an answer that breaks mid-body stays at its
// reservation.
func (p *Planner) send(ctx context.Context, acct budget.Account, pr *aProbe, answered *atomic.Bool) (lines, sent int, totals []int64, err error) {
	totals = make([]int64, len(pr.tasks))
	for i := range totals {
		totals[i] = -1
	}
	rv, err := p.cfg.Ledger.Reserve(ctx, acct, budget.Ask{Endpoint: pr.endpoint, Target: pr.target, Lines: pr.lines})
	if err != nil {
		return 0, 0, totals, err
	}
	defer p.cfg.Ledger.Finish(rv)
	resp, err := p.cfg.Client.Do(ctx, extract.Request{Endpoint: pr.endpoint, Params: pr.params})
	var apiErr *extract.APIError
	if err == nil || errors.As(err, &apiErr) {
		answered.Store(true)
	}
	if err != nil {
		var notHTTP *extract.NotHTTPError
		if errors.As(err, &apiErr) || errors.Is(err, extract.ErrNotSent) || (errors.As(err, &notHTTP) && !answered.Load()) {
			err = errors.Join(err, p.cfg.Ledger.Settle(context.WithoutCancel(ctx), nil, rv, 0))
		}
		if errors.Is(err, extract.ErrNotSent) {
			return 0, 0, totals, err
		}
		return 0, 1, totals, err
	}
	defer resp.Body.Close()
	dec, err := transform.NewJSONDecoder(resp.Body, pr.endpoint, transform.Options{Allocator: p.cfg.Allocator, Redactor: p.cfg.Client.Redactor()})
	if err != nil {
		return 0, 1, totals, fmt.Errorf("decoding %s: %w", pr.endpoint.Name, err)
	}
	defer dec.Release()
	counts := map[string]*int64{}
	for {
		rec, rejects, err := dec.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return lines, 1, totals, fmt.Errorf("decoding %s: %w", pr.endpoint.Name, err)
		}
		lines += int(rec.NumRows()) + len(rejects)
		if pr.endpoint.Shape == catalog.Object && rec.NumRows() > 0 {
			for i, f := range pr.endpoint.Fields {
				if col, ok := rec.Column(i).(*array.Int64); ok && col.IsValid(0) {
					counts[f.Name] = ptr(col.Value(0))
				}
			}
		}
		rec.Release()
	}
	if err := p.cfg.Ledger.Settle(ctx, nil, rv, pr.endpoint.Price.Cost(lines)); err != nil {
		return lines, 1, totals, err
	}
	if pr.endpoint.Shape == catalog.Object {
		for i, t := range pr.tasks {
			if n := counts[t.Endpoint.TotalField]; n != nil && *n >= 0 {
				totals[i] = *n
			}
		}
		return lines, 1, totals, nil
	}
	var total int64
	if raw, ok := dec.Meta()["total"]; !ok || json.Unmarshal(raw, &total) != nil || total < 0 {
		return lines, 1, totals, fmt.Errorf("the answer of %s has no meta.total to tell the task's rows", pr.endpoint.Name)
	}
	totals[0] = total
	return lines, 1, totals, nil
}
