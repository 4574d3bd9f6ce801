package jobspec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/load"
)

// Which backfill tasks to run again (BackfillRequest.Reprocess).
const (
	ReprocessMissing = "missing" // months without a task done, in any run of the job (default)
	ReprocessFailed  = "failed"  // months whose latest try failed, was skipped, or did not finish
	ReprocessAll     = "all"     // every month
)

// BackfillRequest says which history to fetch.
type BackfillRequest struct {
	// From and To are the first and last month, inclusive.
	From, To time.Time
	// Endpoints names the endpoints to backfill; default every endpoint of
	// the job that has history.
	Endpoints []string
	// Reprocess picks the months to fetch: ReprocessMissing (default),
	// ReprocessFailed or ReprocessAll.
	Reprocess string
	// Reverse fetches the newest month first.
	Reverse bool
}

// historyMonths says how an endpoint asks for one month of history: the
// catalog's month parameters (keyword metrics: month; summary: date_from
// and date_to). Nil for an endpoint that answers only its current state.
func historyMonths(ep *catalog.Endpoint) []catalog.Param {
	var ps []catalog.Param
	for _, p := range ep.Params {
		if p.Kind == catalog.PMonth {
			ps = append(ps, p)
		}
	}
	return ps
}

// HasHistory reports whether ep can be asked for a past month.
func HasHistory(ep *catalog.Endpoint) bool { return len(historyMonths(ep)) > 0 }

// BackfillTasks expands the job's endpoints that have history into one
// task per month (of each target, or each keyword and country), month by
// month from req.From to req.To (newest first with req.Reverse). A summary
// task asks for its month alone (date_from = date_to) with limit 1, so it
// costs one line at most. now bounds the months (none after the current
// one). Endpoints without history are refused when named, and otherwise
// left out with a note.
func (j *Job) BackfillTasks(req BackfillRequest, now time.Time) (tasks []Task, notes []string, err error) {
	from, to := load.MonthStart(req.From), load.MonthStart(req.To)
	if from.After(to) {
		return nil, nil, fmt.Errorf("--from %s is after --to %s", from.Format("2006-01"), to.Format("2006-01"))
	}
	if cur := load.MonthStart(now); to.After(cur) {
		return nil, nil, fmt.Errorf("--to %s is in the future (the current month is %s)", to.Format("2006-01"), cur.Format("2006-01"))
	}
	var have, without []string // the job's endpoints, with and without history
	for _, es := range j.Endpoints {
		if HasHistory(es.Endpoint) {
			have = append(have, es.Endpoint.Name)
		} else {
			without = append(without, es.Endpoint.Name)
		}
	}
	kw, _ := catalog.Lookup("keyword-metrics")
	if j.Keywords != nil {
		have = append(have, kw.Name)
	}
	want := req.Endpoints
	if len(want) == 0 {
		want = have
		if len(without) > 0 {
			notes = append(notes, fmt.Sprintf("left out, they have no history (the API answers their current state only): %s",
				strings.Join(without, ", ")))
		}
	}
	for _, name := range want {
		ep, ok := catalog.Lookup(name)
		switch {
		case !ok:
			return nil, nil, fmt.Errorf("no endpoint %q in the catalog", name)
		case !HasHistory(ep):
			return nil, nil, fmt.Errorf("%s has no history: the API answers its current state only, so it cannot be backfilled (endpoints with history: %s)",
				name, strings.Join(historyNames(), ", "))
		case !slices.Contains(have, name):
			return nil, nil, fmt.Errorf("job %s does not collect %s", j.Name, name)
		}
		for _, p := range historyMonths(ep) {
			if p.MinMonth == "" {
				continue
			}
			if first, _ := time.Parse("2006-01", p.MinMonth); from.Before(first) {
				return nil, nil, fmt.Errorf("%s has no history before %s (--from %s)", name, p.MinMonth, from.Format("2006-01"))
			}
		}
	}
	if len(want) == 0 {
		return nil, notes, fmt.Errorf("job %s collects nothing with history (endpoints with history: %s)", j.Name, strings.Join(historyNames(), ", "))
	}
	var months []time.Time
	for m := from; !m.After(to); m = m.AddDate(0, 1, 0) {
		months = append(months, m)
	}
	if req.Reverse {
		slices.Reverse(months)
	}
	for _, m := range months {
		ym := m.Format("2006-01")
		for _, es := range j.Endpoints {
			if !slices.Contains(want, es.Endpoint.Name) {
				continue
			}
			es.DateFrom, es.DateTo = ym, ym
			if _, ok := es.Endpoint.Param("limit"); ok {
				es.Limit, es.MaxRows = 1, 0
			}
			for i := range j.Targets {
				tasks = append(tasks, Task{Endpoint: es.Endpoint, Spec: es, Target: &j.Targets[i], Month: m})
			}
		}
		if j.Keywords != nil && slices.Contains(want, kw.Name) {
			for _, k := range j.Keywords.Keywords {
				for _, c := range j.Keywords.Countries {
					tasks = append(tasks, Task{Endpoint: kw, Keyword: k, Country: c, Month: m})
				}
			}
		}
	}
	return tasks, notes, nil
}

func historyNames() []string {
	var names []string
	for _, ep := range catalog.All() {
		if HasHistory(ep) {
			names = append(names, ep.Name)
		}
	}
	return names
}

// CheckReprocess says whether s is missing, failed or all.
func CheckReprocess(s string) error {
	switch s {
	case ReprocessMissing, ReprocessFailed, ReprocessAll:
		return nil
	}
	return fmt.Errorf("--reprocess %q: want missing, failed or all", s)
}
