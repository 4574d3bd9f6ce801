package planning_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
)

// TestPlanWithProbeMatchesTheFirstRun: on a fresh warehouse, the example
// job planned with a probe costs exactly what the run then spends, by the
// sandbox's count and by the ledger.
func TestPlanWithProbeMatchesTheFirstRun(t *testing.T) {
	t.Parallel()
	f := testworld.New(t, testworld.Options{})
	spec := testworld.ExampleSpec(t)
	plan := f.Plan(t, spec, testworld.Now, true)

	// The probe said what it cost, and it cost that.
	probe := f.Sandbox.Usage("test-key")
	require.NotNil(t, plan.Probe)
	require.Equal(t, probe.UnitsSpent, plan.Probe.Units)
	require.Equal(t, probe.Requests, int64(plan.Probe.Requests))
	require.Empty(t, plan.Probe.Failed)
	require.Empty(t, plan.Probe.Stopped)
	require.Less(t, plan.Probe.Units, int64(1500), "a few cheap units")
	require.Equal(t, plan.Probe.Units, f.Count(t, `SELECT units FROM runs WHERE run_id = $1 AND trigger = 'probe'`, plan.Probe.RunID))
	for _, tp := range plan.Tasks {
		require.NotEqual(t, planning.SourceUnknown, tp.Source, "%s: %s", tp.Name, tp.Basis)
	}

	sum := f.Run(t, spec, testworld.Now)
	testworld.RequireRunMatchesPlan(t, plan, sum)
	spent := f.Sandbox.Usage("test-key").UnitsSpent - probe.UnitsSpent
	require.Equal(t, *plan.Total.Expected, spent, "the run spent what the plan expected")
	require.Equal(t, spent, f.Count(t, `SELECT units FROM runs WHERE run_id = $1`, sum.RunID), "and the ledger says so")
	t.Logf("plan: %d tasks, expected %d units, worst %d; probe %d requests, %d units; run %d units",
		plan.Total.Tasks, *plan.Total.Expected, *plan.Total.Worst, plan.Probe.Requests, plan.Probe.Units, spent)
}

// TestPlanAfterARunMatchesTheNextRun: without a probe, once a run has
// read the data, the plan of the example job is what the next run spends.
func TestPlanAfterARunMatchesTheNextRun(t *testing.T) {
	t.Parallel()
	f := testworld.New(t, testworld.Options{})
	spec := strings.Replace(testworld.ExampleSpec(t), "max_age: 20h", "max_age: 0", 1) // the next run buys again
	require.Contains(t, spec, "max_age: 0")
	first := f.Run(t, spec, testworld.Now)
	require.Zero(t, first.Failed())
	before := f.Sandbox.Usage("test-key")

	plan := f.Plan(t, spec, testworld.Now, false)
	require.Nil(t, plan.Probe)
	require.Zero(t, f.Sandbox.Usage("test-key").Requests-before.Requests, "a plan without probe sends nothing")
	for _, tp := range plan.Tasks {
		switch tp.Endpoint {
		case "score-profile":
			require.Equal(t, planning.SourceRun, tp.Source, tp.Basis)
			require.Regexp(t, `^last run 2026-11-21: \d+ rows$`, tp.Basis)
		case "ref-domains":
			require.Contains(t, []string{planning.SourceRun, planning.SourceOverview}, tp.Source, tp.Basis)
			if tp.Source == planning.SourceOverview {
				// Cut at max_rows by the run: the job's overview tells the total.
				require.Regexp(t, `^overview of 2026-11-21: domains_count \d+$`, tp.Basis)
			}
		}
		if tp.Source == planning.SourceUnknown {
			// Cut at max_rows (or summary's limit) last time: at least
			// that many rows, so the worst case is what it costs.
			require.Contains(t, tp.Basis, "unknown: worst case", tp.Name)
		}
	}

	require.Zero(t, f.Count(t, `SELECT count(*) FROM task_totals WHERE endpoint = 'links' AND request = 'url=n25000.example scope=ROOT_DOMAIN'`),
		"a task cut at max_rows says nothing of its total")
	require.Equal(t, int64(4), f.Count(t, `SELECT count(*) FROM task_totals WHERE endpoint = 'score-profile' AND source = 'run'`))

	second := f.Run(t, spec, testworld.Now)
	testworld.RequireRunMatchesPlan(t, plan, second)
	spent := f.Sandbox.Usage("test-key").UnitsSpent - before.UnitsSpent
	require.Equal(t, *plan.Total.Expected, spent)
	require.Equal(t, spent, f.Count(t, `SELECT units FROM runs WHERE run_id = $1`, second.RunID))
	t.Logf("plan after a run: expected %d units (%d tasks, %d priced at worst case); second run %d units",
		*plan.Total.Expected, plan.Total.Tasks, plan.Total.Unknown, spent)
}

// TestPlanProbeSpendsNothingOnHeldTasks: etl plan --probe an hour
// after a run probes the tasks the run would hold (not send): it spends
// units to price tasks that cost 0.
func TestPlanProbeSpendsNothingOnHeldTasks(t *testing.T) {
	t.Parallel()
	spec := `jobs:
  - name: j
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints:
      anchors: {max_rows: 20}
      ref-domains: {max_rows: 20, filter: "domain_score > 10"}
`
	f, c := testworld.NewClocked(t, testworld.Now)
	sum := f.RunAt(t, spec, c, pipeline.RunOptions{})
	require.Zero(t, sum.Failed())
	paid := f.Spent()

	c.Set(testworld.Now.Add(time.Hour))
	plan := f.PlanOn(t, spec, c.Now, true)
	require.Equal(t, 2, plan.Held.Tasks, "both tasks are held")
	require.Zero(t, plan.Probe.Requests, "no probe of a task the run will not send")
	require.Equal(t, paid, f.Spent(), "the probe of held tasks cost units")
}

// TestPlanOfATakenUpRunCountsHeldTasksAsGoingOn: etl plan before
// taking up a run that held tasks says they "go on from their checkpoint"
// (ResumePlan.GoOn), although they are held again (not sent): "1 tasks
// done are not run again, 2 go on from their checkpoint" for one task.
func TestPlanOfATakenUpRunCountsHeldTasksAsGoingOn(t *testing.T) {
	t.Parallel()
	spec := func(budget string) string {
		return `jobs:
  - name: j
` + budget + `    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}}
    keywords: {keywords: [a, b], countries: [US], max_age: 0}
`
	}
	f, c := testworld.NewClocked(t, testworld.Now)
	f.RunAt(t, spec(""), c, pipeline.RunOptions{})
	// An hour later under a cap of one keyword: the overview is held, one
	// keyword bought, the other skipped by the cap.
	c.Set(testworld.Now.Add(time.Hour))
	capped := spec("    budget: {per_run: 20}\n")
	second, _ := f.TryRunAt(t, capped, c, pipeline.Config{}, pipeline.RunOptions{})
	require.Equal(t, 1, second.Held().Tasks)
	require.Equal(t, 1, second.Skipped())

	c.Set(testworld.Now.Add(2 * time.Hour))
	plan := f.PlanAt(t, capped, c, planning.PlanOptions{})
	require.NotNil(t, plan.Resume)
	require.Equal(t, second.RunID, plan.Resume.RunID)
	require.Equal(t, 1, plan.Held.Tasks, "the overview is held again")
	require.Equal(t, 1, plan.Resume.GoOn, "%s: only the skipped keyword goes on; the overview is held", plan.Resume)
}

// TestPlanPagesAsTheRunnerDoes: targets of known size, page sizes that
// divide the totals or not, max_rows above and below them, paged and
// unpaged lists: each task's requests, rows and units as planned.
func TestPlanPagesAsTheRunnerDoes(t *testing.T) {
	t.Parallel()
	f := testworld.New(t, testworld.Options{})
	const spec = `jobs:
  - name: paging
    targets:
      - {url: n240.example, scope: ROOT_DOMAIN}
      - {url: n250.example, scope: ROOT_DOMAIN}
    endpoints:
      links: {limit: 120}
      ref-ips: {limit: 7, max_rows: 30}
      pages: {limit: 50}
      competitors: {limit: 5, max_rows: 12}
      summary: {limit: 5, date_from: 2026-01}
      anchors: {limit: 40, max_rows: 1000, filter: "backlinks_count >= 2"}
`
	plan := f.Plan(t, spec, testworld.Now, true)
	// Per target, one overview tells links and ref-ips (45 units, less
	// than 45 + 20 for asking both); pages, competitors, summary and
	// anchors are asked with limit=1.
	require.Equal(t, 2+2*4, plan.Probe.Requests)
	links := plan.Tasks[0]
	require.Equal(t, "links n240.example (ROOT_DOMAIN)", links.Name)
	require.Equal(t, "probe: overview backlinks_count 240", links.Basis)
	require.Equal(t, int64(3), *links.Requests, "120 + 120 + a last page of 0 lines")
	require.Equal(t, int64(240*45), *links.Expected)
	require.Nil(t, links.Worst, "no max_rows: unbounded")

	sum := f.Run(t, spec, testworld.Now)
	testworld.RequireRunMatchesPlan(t, plan, sum)
	spent := f.Sandbox.Usage("test-key").UnitsSpent - plan.Probe.Units
	require.Equal(t, *plan.Total.Expected, spent)
}

// TestPlanWorstCases: from the catalog alone (no database), every task at
// its worst case: per request, max_rows x price, the limit of an unpaged
// request, the score profile's 101 lines, one comparison line per url,
// and no bound at all for a paged list without max_rows.
func TestPlanWorstCases(t *testing.T) {
	t.Parallel()
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(`jobs:
  - name: worst
    budget: {per_run: 100000}
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    target_sets: [{name: rivals, scope: ROOT_DOMAIN, urls: [a.example, b.example, c.example]}]
    endpoints:
      overview: {}
      summary: {limit: 12}
      links: {limit: 100, max_rows: 250}
      ref-domains: {}
      score-profile: {}
      comparison: {}
      matrix: {limit: 100, max_rows: 200}
    keywords: {keywords: [seo], countries: [US, DE]}
`), testworld.Now)
	require.NoError(t, err)
	p, err := planning.NewPlanner(planning.PlanConfig{Now: func() time.Time { return testworld.Now }})
	require.NoError(t, err)
	plan, err := p.Plan(t.Context(), s.Jobs[0], planning.PlanOptions{})
	require.NoError(t, err)
	require.False(t, plan.History)
	require.NotEmpty(t, plan.Warnings)

	type want struct {
		requests, worst int64 // -1: unbounded
		source          string
	}
	wants := map[string]want{
		"overview example.com (ROOT_DOMAIN)":      {1, 45, planning.SourcePerRequest},
		"summary example.com (ROOT_DOMAIN)":       {1, 12 * 40, planning.SourceUnknown},
		"links example.com (ROOT_DOMAIN)":         {3, 250 * 45, planning.SourceUnknown},
		"ref-domains example.com (ROOT_DOMAIN)":   {-1, -1, planning.SourceUnknown},
		"score-profile example.com (ROOT_DOMAIN)": {1, 101, planning.SourceUnknown},
		"comparison set rivals (ROOT_DOMAIN)":     {1, 3 * 40, planning.SourceExact},
		"matrix set rivals (ROOT_DOMAIN)":         {2, 200 * 40, planning.SourceUnknown},
		`keyword-metrics "seo" US 2026-11`:        {1, 20, planning.SourcePerRequest},
		`keyword-metrics "seo" DE 2026-11`:        {1, 20, planning.SourcePerRequest},
	}
	require.Len(t, plan.Tasks, len(wants))
	for _, tp := range plan.Tasks {
		w, ok := wants[tp.Name]
		require.True(t, ok, tp.Name)
		require.Equal(t, w.source, tp.Source, tp.Name)
		if w.worst < 0 {
			require.Nil(t, tp.Worst, tp.Name)
			require.Nil(t, tp.Expected, tp.Name)
			require.Nil(t, tp.Requests, tp.Name)
			require.Contains(t, tp.Basis, "unbounded")
			continue
		}
		require.Equal(t, w.worst, *tp.Worst, tp.Name)
		require.Equal(t, w.worst, *tp.Expected, tp.Name)
		require.Equal(t, w.requests, *tp.Requests, tp.Name)
	}
	require.Nil(t, plan.Total.Worst, "one unbounded task makes the job unbounded")
	require.Equal(t, 5, plan.Total.Unknown)
	var links planning.Cost
	for _, c := range plan.Endpoints {
		if c.Endpoint == "links" {
			links = c
		}
	}
	require.Equal(t, int64(250*45), *links.Worst)

	// The cap would be reached only in ref-domains, or not at all.
	require.Len(t, plan.Caps, 1)
	c := plan.Caps[0]
	require.Nil(t, c.Fits)
	require.Nil(t, c.Spend)
	require.Equal(t, "ref-domains example.com (ROOT_DOMAIN)", c.CutTask)
	require.Equal(t, "per_run cap 100000 (0 used, 100000 left): cannot tell: ref-domains example.com (ROOT_DOMAIN) has no known total and no max_rows (the cap bounds the run)", c.String())
}

// TestPlanSaysWhatACapWouldCut: with totals known, the plan says which
// task a cap stops and how many are skipped; a run one task at a time
// then stops exactly there, having spent what the plan said. Caps that
// count earlier spending (the job's month, the day) start from what is
// used already.
func TestPlanSaysWhatACapWouldCut(t *testing.T) {
	t.Parallel()
	f := testworld.New(t, testworld.Options{})
	const job = `  - name: capped
    budget: {per_run: %d}
    targets:
      - {url: n300.example, scope: ROOT_DOMAIN}
      - {url: n240.example, scope: ROOT_DOMAIN}
    endpoints:
      overview: {}
      links: {limit: 37}
      ref-domains: {limit: 23}
      score-profile: {}
`
	spec := func(perRun int64, daily string) string {
		return daily + "jobs:\n" + fmt.Sprintf(job, perRun)
	}
	plan := f.Plan(t, spec(10_000, ""), testworld.Now, true)
	require.Len(t, plan.Caps, 1)
	c := plan.Caps[0]
	require.Equal(t, "per_run", c.Cap)
	require.NotNil(t, c.Fits)
	require.False(t, *c.Fits)
	require.Equal(t, "links n300.example (ROOT_DOMAIN)", c.CutTask, c.String())
	probeUnits := f.Sandbox.Usage("test-key").UnitsSpent

	sum, err := f.TryRunWith(t, spec(10_000, ""), testworld.Now, 1)
	require.NoError(t, err)
	require.Contains(t, sum.Stopped, "per_run cap")
	spent := f.Sandbox.Usage("test-key").UnitsSpent - probeUnits
	require.Equal(t, *c.Spend, spent)
	require.Equal(t, c.NotStarted+1, sum.Skipped(), "the cut task and the ones after it")
	for _, res := range sum.Tasks {
		if res.Skipped != "" {
			require.Equal(t, c.CutTask, res.Task.String(), "the first task stopped")
			require.Equal(t, c.CutAfterRows, res.Rows)
			break
		}
	}

	// A daily cap counts the probe and the run above; a per_run cap large
	// enough fits. The run stopped, so the next one continues it: the plan
	// prices what is left (the overviews are done, the cut links go on from
	// their offset) in a new per_run window.
	used := probeUnits + spent
	plan = f.Plan(t, spec(1_000_000, fmt.Sprintf("budget: {daily: %d}\n", used+100)), testworld.Now, false)
	require.NotNil(t, plan.Resume)
	require.Equal(t, sum.RunID, plan.Resume.RunID)
	require.Equal(t, "continued", plan.Resume.How)
	require.Equal(t, 2, plan.Resume.Window)
	require.Equal(t, 2, plan.Resume.Done, "the two overviews")
	require.Len(t, plan.Caps, 2)
	require.True(t, *plan.Caps[0].Fits, plan.Caps[0].String())
	require.Zero(t, plan.Caps[0].Used, "a new cap window")
	daily := plan.Caps[1]
	require.Equal(t, "daily", daily.Cap)
	require.Equal(t, used, daily.Used)
	require.Equal(t, int64(100), daily.Remaining)
	require.False(t, *daily.Fits)
	require.Equal(t, "links n300.example (ROOT_DOMAIN)", daily.CutTask, "the overviews are done; two more links fit in 100")
	require.Equal(t, int64(2), daily.CutAfterRows)
	require.Equal(t, 5, daily.NotStarted)
}

// TestPlanSaysACapSmallerThanOneLineNeverFits: under a per_run cap that
// cannot pay one line of links, the run refuses every task; the plan says
// so of each, the unbounded links too. Before, it stopped at the links
// (no total, no max_rows) with "cannot tell", and said nothing of the
// tasks after them.
func TestPlanSaysACapSmallerThanOneLineNeverFits(t *testing.T) {
	t.Parallel()
	f := testworld.New(t, testworld.Options{})
	const spec = `jobs:
  - name: tiny
    budget: {per_run: 10}
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {links: {limit: 50}, overview: {}, score-profile: {}}
`
	plan := f.Plan(t, spec, testworld.Now, false)
	require.Len(t, plan.Caps, 1)
	c := plan.Caps[0]
	require.NotNil(t, c.Fits, c.String())
	require.False(t, *c.Fits)
	require.Len(t, c.Never, 3, c.String())
	require.Contains(t, c.Never[0], "links n300.example (ROOT_DOMAIN) (one request may cost 45)")

	sum, err := f.TryRun(t, spec, testworld.Now)
	require.NoError(t, err)
	for _, res := range sum.Tasks {
		require.True(t, res.Refused, res.Task.String())
	}
}

// TestThePlansCapCountsNoHeldTaskAsSkipped: the caps' simulation
// says how many tasks after the one a cap cuts would be skipped; held
// tasks (not sent, whatever the cap) were counted among them, while the
// run records them held, not skipped.
func TestThePlansCapCountsNoHeldTaskAsSkipped(t *testing.T) {
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
	f, c := testworld.NewClocked(t, testworld.Now)
	f.RunAt(t, spec(""), c, pipeline.RunOptions{})
	c.Set(testworld.Now.Add(time.Hour))
	capped := spec("    budget: {per_run: 1000}\n")
	plan := f.PlanAt(t, capped, c, planning.PlanOptions{})
	require.Equal(t, 2, plan.Held.Tasks, "the overview and the score profile")
	var cp *planning.CapPlan
	for i := range plan.Caps {
		if plan.Caps[i].Cap == "per_run" {
			cp = &plan.Caps[i]
		}
	}
	require.NotNil(t, cp)
	require.Equal(t, "links n2500.example (ROOT_DOMAIN)", cp.CutTask)

	sum, _ := f.TryRunAt(t, capped, c, pipeline.Config{}, pipeline.RunOptions{})
	require.Equal(t, 2, sum.Held().Tasks)
	require.Equal(t, 1, sum.Skipped(), "the links, cut")
	require.Equal(t, 0, cp.NotStarted, "%s: the tasks after the links are held, not skipped", cp)
}
