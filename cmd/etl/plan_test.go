package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
)

// planJSON is the part of `etl plan --json` the tests read.
type planJSON struct {
	Job   string `json:"job"`
	Tasks []struct {
		Endpoint string `json:"endpoint"`
		Task     string `json:"task"`
		Price    struct {
			Units int64  `json:"units"`
			Per   string `json:"per"`
		} `json:"price"`
		Requests *int64 `json:"requests"`
		Worst    *int64 `json:"worst_units"`
		Expected *int64 `json:"expected_units"`
		Source   string `json:"source"`
		Basis    string `json:"basis"`
	} `json:"tasks"`
	Endpoints []struct {
		Endpoint string `json:"endpoint"`
		Expected *int64 `json:"expected_units"`
	} `json:"endpoints"`
	Total struct {
		Tasks    int    `json:"tasks"`
		Expected *int64 `json:"expected_units"`
		Worst    *int64 `json:"worst_units"`
	} `json:"total"`
	Caps []struct {
		Cap  string `json:"cap"`
		Fits *bool  `json:"fits"`
	} `json:"caps"`
	Probe *struct {
		Requests int   `json:"requests"`
		Units    int64 `json:"units"`
	} `json:"probe"`
}

var (
	planHeader = regexp.MustCompile(`(?m)^plan of job example at 2026-11-21T03:00:00Z: 35 tasks, \d+ requests, expected (\d+) units, worst case (\d+)$`)
	runUnits   = regexp.MustCompile(`(?m)^job example: 35 tasks, \d+ rows, 0 quarantined, (\d+) API units`)
	probeLine  = regexp.MustCompile(`(?m)^probe: (\d+) requests, (\d+) units, \d+ totals learned \(run \d+\)$`)
)

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}

// TestPlanCommand plans the repo's example job: with --probe on a fresh
// warehouse (the table, and what the probe cost by the sandbox's count),
// then, after a run, as JSON, whose expected units the next run spends.
func TestPlanCommand(t *testing.T) {
	t.Parallel()
	sb, env := runWorld(t, "k")
	now := cliNow.Format(time.RFC3339)
	// The example without its listings: no account is signed in here.
	example, err := os.ReadFile("../../jobs.yaml")
	require.NoError(t, err)
	noListings, _, ok := strings.Cut(string(example), "    listings:")
	require.True(t, ok)
	// Bought again by every run: the plans after a run price a run.
	noListings = strings.Replace(noListings, "max_age: 20h", "max_age: 0", 1)
	require.Contains(t, noListings, "max_age: 0")
	args := []string{"--jobs", writeSpec(t, noListings), "--job", "example", "--now", now}

	r := etl(t, env, append([]string{"plan", "--probe", "--tasks"}, args...)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, planHeader, r.stdout)
	require.Regexp(t, `(?m)^task\s+price\s+requests\s+worst\s+expected\s+basis$`, r.stdout)
	require.Regexp(t, `(?m)^overview example\.com \(ROOT_DOMAIN\)\s+45/request\s+1\s+45\s+45\s+per request$`, r.stdout)
	require.Regexp(t, `(?m)^links example\.com \(ROOT_DOMAIN\)\s+45/line\s+\d\s+13500\s+\d+\s+probe: meta\.total \d+$`, r.stdout)
	require.Regexp(t, `(?m)^score-profile example\.com \(ROOT_DOMAIN\)\s+1/line\s+1\s+101\s+\d+\s+probe: meta\.total \d+$`, r.stdout)
	require.Regexp(t, `(?m)^comparison set rivals \(ROOT_DOMAIN\)\s+40/line\s+1\s+120\s+120\s+exact: comparison has one line per url \(3\)$`, r.stdout)
	total := regexp.MustCompile(`(?m)^total\s+35\s+\d+\s+\d+\s+(\d+)\s+0\s+\S+$`).FindStringSubmatch(r.stdout)
	require.NotNil(t, total, "every total known after the probe:\n%s", r.stdout)
	require.Contains(t, r.stdout, "caps: none")
	m := probeLine.FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	require.Equal(t, sb.Usage("k").Requests, atoi(t, m[1]))
	require.Equal(t, sb.Usage("k").UnitsSpent, atoi(t, m[2]), "the probe cost what it says")

	r = etl(t, env, append([]string{"run"}, args...)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, atoi(t, total[1]), atoi(t, runUnits.FindStringSubmatch(r.stdout)[1]), "the first run spent what the probed plan expected")

	// After a run every total is known, or the task was cut by its bound
	// (which it costs again).
	r = etl(t, env, append([]string{"plan", "--json"}, args...)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	var plan planJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan), r.stdout)
	require.Equal(t, "example", plan.Job)
	require.Len(t, plan.Tasks, 35)
	require.Nil(t, plan.Probe)
	require.Empty(t, plan.Caps)
	var sum int64
	for _, task := range plan.Tasks {
		require.NotNil(t, task.Expected, task.Task)
		sum += *task.Expected
		if task.Endpoint == "score-profile" {
			require.Equal(t, "run", task.Source)
		}
	}
	require.Equal(t, sum, *plan.Total.Expected)
	before := sb.Usage("k").UnitsSpent

	r = etl(t, env, append([]string{"run"}, args...)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	m = runUnits.FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	require.Equal(t, *plan.Total.Expected, atoi(t, m[1]), "the run spent what the plan expected")
	require.Equal(t, *plan.Total.Expected, sb.Usage("k").UnitsSpent-before)
	t.Logf("example job, default sandbox: plan %d units, run %d units", *plan.Total.Expected, atoi(t, m[1]))
}

// TestPlanRejectsABadSpecBeforeSpending: a bad spec is exit 2, with --probe
// too, and not one request reaches the API.
func TestPlanRejectsABadSpecBeforeSpending(t *testing.T) {
	t.Parallel()
	sb, env := runWorld(t, "k")
	jobs := writeSpec(t, "jobs:\n  - name: bad\n    targets: [{url: a.com, scope: ROOT_DOMAIN}]\n    endpoints:\n      links: {max_rows: 0}\n")
	r := etl(t, env, "plan", "--probe", "--jobs", jobs)
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, jobs+":5: max_rows must be between 1 and 2147483647, got 0")
	require.Empty(t, r.stdout)

	r = etl(t, env, "plan", "--probe", "--jobs", writeSpec(t, cliSpec))
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "has 2 jobs; pick one with --job")

	r = etl(t, map[string]string{"ETL_API_URL": env["ETL_API_URL"], "ETL_API_KEY": "k"}, "plan", "--probe", "--jobs", writeSpec(t, cliSpec), "--job", "one")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "--probe spends units through the ledger: set DATABASE_URL")

	r = etl(t, map[string]string{"DATABASE_URL": env["DATABASE_URL"]}, "plan", "--probe", "--jobs", writeSpec(t, cliSpec), "--job", "one")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "no data API: set ETL_API_URL")
	require.Zero(t, sb.Usage("k").Requests+sb.Usage("k").FailedRequests)
}

// TestPlanWithoutAWarehouse: with no DATABASE_URL the plan comes from the
// catalog alone and says so; a database that is unreachable or not
// migrated is an error that says which.
func TestPlanWithoutAWarehouse(t *testing.T) {
	t.Parallel()
	jobs := writeSpec(t, cliSpec)
	r := etl(t, nil, "plan", "--jobs", jobs, "--job", "one", "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "plan of job one at 2026-11-21T03:00:00Z: 3 tasks, 3 requests, expected 185 units, worst case 185")
	require.Contains(t, r.stdout, "warning: no database")
	require.Regexp(t, `(?m)^summary example\.com \(ROOT_DOMAIN\)\s+40/line\s+1\s+120\s+120\s+unknown: worst case$`, r.stdout)

	r = etl(t, map[string]string{"DATABASE_URL": pgtest.NewEmptyDB(t)}, "plan", "--jobs", jobs, "--job", "one")
	require.Equal(t, exitFailed, r.code)
	require.Contains(t, r.stderr, "the database is not migrated to this build's schema (run `etl migrate up`)")

	addr := closedAddr(t)
	r = etl(t, map[string]string{"DATABASE_URL": "postgres://etl:secret-pw@" + addr + "/etl?sslmode=disable&connect_timeout=5"}, "plan", "--jobs", jobs, "--job", "one")
	require.Equal(t, exitFailed, r.code)
	require.Contains(t, r.stderr, "connecting to the database")
	require.NotContains(t, r.stderr, "secret-pw")
}

// TestPlanCaps: --json says whether each cap fits.
func TestPlanCaps(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	jobs := writeSpec(t, "budget: {daily: 100, monthly: 1000}\njobs:\n  - name: c\n    budget: {per_run: 60}\n    keywords: {keywords: [a, b, c, d], countries: [US]}\n")
	r := etl(t, env, "plan", "--json", "--jobs", jobs, "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	var plan planJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan))
	require.Len(t, plan.Caps, 3)
	for i, want := range []struct {
		cap  string
		fits bool
	}{{"per_run", false}, {"daily", true}, {"monthly", true}} {
		require.Equal(t, want.cap, plan.Caps[i].Cap)
		require.Equal(t, want.fits, *plan.Caps[i].Fits, want.cap)
	}

	r = etl(t, env, "plan", "--jobs", jobs, "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, `cap: per_run cap 60 (0 used, 60 left): does not fit: the run would stop at keyword-metrics "d" US 2026-11, skipping it and the 0 tasks after it`)
	require.Contains(t, r.stdout, "cap: daily cap 100 (0 used, 100 left): fits, the run would spend 80")
}

// TestPlanProbeStopsAtACap: probes spend through the ledger, so a cap
// stops them like a run; the plan still prints, says so, and exits 3.
func TestPlanProbeStopsAtACap(t *testing.T) {
	t.Parallel()
	sb, env := runWorld(t, "k")
	jobs := writeSpec(t, "jobs:\n  - name: p\n    budget: {per_run: 50}\n    targets: [{url: n240.example, scope: ROOT_DOMAIN}, {url: n300.example, scope: ROOT_DOMAIN}]\n    endpoints: {anchors: {max_rows: 10}}\n")
	r := etl(t, env, "plan", "--probe", "--jobs", jobs, "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "probe: 1 requests, 40 units, 1 totals learned")
	require.Regexp(t, `probes stopped early: budget exhausted: the per_run cap of 50 units has 10 left, and the next request \(anchors url=n(240|300)\.example scope=ROOT_DOMAIN\) costs 40 \(one line, at 40 units each\)`, r.stdout)
	// Probes run concurrently: either target may be the one probed.
	require.Len(t, regexp.MustCompile(`(?m)^anchors n\d+\.example \(ROOT_DOMAIN\)\s+40/line\s+1\s+400\s+400\s+probe: meta\.total \d+$`).FindAllString(r.stdout, -1), 1, r.stdout)
	require.Len(t, regexp.MustCompile(`(?m)^anchors n\d+\.example \(ROOT_DOMAIN\)\s+40/line\s+1\s+400\s+400\s+unknown: worst case \(max_rows 10\)$`).FindAllString(r.stdout, -1), 1, r.stdout)
	require.Equal(t, int64(40), sb.Usage("k").UnitsSpent)
}

// TestPlanHelpSaysHowTheScoreProfileIsProbed: etl plan --help says what
// --probe does to the score profile as the code does it: one request for
// the whole profile (it takes no limit), costing at most its bound, whose
// meta.total becomes the task's total.
func TestPlanHelpSaysHowTheScoreProfileIsProbed(t *testing.T) {
	t.Parallel()
	r := etl(t, nil, "plan", "--help")
	require.Equal(t, exitOK, r.code, r.stderr)
	help := strings.Join(strings.Fields(r.stdout), " ")
	require.False(t, strings.Contains(help, "score profile takes no limit and is not probed"), "the help says the score profile is not probed")
	require.Contains(t, help, "The score profile takes no limit, so its probe asks for it whole (JSON, at most 101 lines at 1 unit each: up to 101 units, what a run of it costs) and takes its meta.total.")

	sb, env := runWorld(t, "k")
	jobs := writeSpec(t, "jobs:\n  - name: sp\n    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {score-profile: {}}\n")
	r = etl(t, env, "plan", "--probe", "--json", "--jobs", jobs, "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	var plan planJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan), r.stdout)
	require.Len(t, plan.Tasks, 1)
	require.Equal(t, "probe", plan.Tasks[0].Source, "the score profile was probed")
	require.Contains(t, plan.Tasks[0].Basis, "meta.total")
	require.Equal(t, int64(1), sb.Usage("k").Requests, "one request, for the whole profile")
	require.LessOrEqual(t, sb.Usage("k").UnitsSpent, int64(101))
	require.Positive(t, sb.Usage("k").UnitsSpent)
}

// agencySpec is a job of n targets, five endpoints each (5n tasks): a
// per_run cap that one request of summary (12 months) costs more than
// (they never fit it), which cuts the first links; a daily cap the
// summaries reach; anchors without max_rows (unbounded).
func agencySpec(n int) string {
	var b strings.Builder
	b.WriteString("budget: {daily: 20000}\njobs:\n  - name: agency\n    budget: {per_run: 400}\n    targets:\n")
	for i := range n {
		fmt.Fprintf(&b, "      - {url: n%d.example, scope: ROOT_DOMAIN}\n", i+1)
	}
	b.WriteString("    endpoints: {summary: {limit: 12}, links: {limit: 100, max_rows: 300}, ref-domains: {limit: 100, max_rows: 200}, anchors: {}, score-profile: {}}\n")
	return b.String()
}

// TestPlanOfAnAgencyFitsAScreen: a job of 2,000 targets (10,000 tasks)
// plans in at most 60 lines by default, whose totals are --json's, with
// the dearest tasks, the one each cap cuts and a few that never fit;
// --tasks lists every task.
func TestPlanOfAnAgencyFitsAScreen(t *testing.T) {
	t.Parallel()
	jobs := writeSpec(t, agencySpec(2000))
	now := cliNow.Format(time.RFC3339)
	r := etl(t, nil, "plan", "--jobs", jobs, "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	require.LessOrEqual(t, len(lines), 60, r.stdout)
	t.Logf("etl plan of 2,000 targets, %d lines:\n%s", len(lines), r.stdout)

	r = etl(t, nil, "plan", "--json", "--jobs", jobs, "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	var plan planJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan))
	require.Len(t, plan.Tasks, 10000)
	require.Equal(t, 10000, plan.Total.Tasks)
	require.Nil(t, plan.Total.Expected, "anchors without max_rows are unbounded")
	worstCase := func(n *int64) string {
		if n == nil {
			return "unbounded"
		}
		return strconv.FormatInt(*n, 10)
	}
	require.Equal(t, fmt.Sprintf("plan of job agency at 2026-11-21T03:00:00Z: %d tasks, unbounded requests, expected %s units, worst case %s",
		plan.Total.Tasks, worstCase(plan.Total.Expected), worstCase(plan.Total.Worst)), lines[0])
	require.Regexp(t, fmt.Sprintf(`(?m)^total\s+%d\s+\?\s+%s\s+%s\s+\d+\s+\?$`, plan.Total.Tasks, worstCase(plan.Total.Worst),
		worstCase(plan.Total.Expected)), strings.Join(lines, "\n"))
	for _, e := range plan.Endpoints {
		require.Regexp(t, fmt.Sprintf(`(?m)^%s\s+2000\s`, regexp.QuoteMeta(e.Endpoint)), strings.Join(lines, "\n"))
	}

	out := strings.Join(lines, "\n")
	require.Contains(t, out, "the tasks that matter, 17 of 10000:\n")
	require.Regexp(t, `(?m)^anchors n1\.example \(ROOT_DOMAIN\)\s+40/line\s+\?\s+unbounded\s+unbounded\s+dearest\s`, out, "unbounded first, in the job's order")
	require.Regexp(t, `(?m)^anchors n10\.example \(ROOT_DOMAIN\)\s+40/line\s+\?\s+unbounded\s+unbounded\s+dearest\s`, out)
	require.NotContains(t, out, "anchors n11.example", "ten dearest")
	require.Regexp(t, `(?m)^links n1\.example \(ROOT_DOMAIN\)\s.*\sthe per_run cap cuts it\s`, out)
	require.Regexp(t, `(?m)^summary n42\.example \(ROOT_DOMAIN\)\s.*\sthe daily cap cuts it\s`, out)
	require.Regexp(t, `(?m)^summary n5\.example \(ROOT_DOMAIN\)\s.*\snever fits the per_run cap\s`, out)
	require.NotContains(t, out, "summary n6.example", "five that never fit")
	require.Regexp(t, `(?m)^cap: per_run cap 400 .*; never fits \(skipped in every run under this cap\): 2000 tasks, the first 5 below \(--tasks lists every one\)$`, out)
	require.Regexp(t, `(?m)^\d+ tasks not shown; --tasks lists every one \(--json too\)$`, out)
	m := regexp.MustCompile(`(?s)\nthe tasks that matter, (\d+) of 10000:\ntask .*?\n(.*)\n\d+ tasks not shown`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.Len(t, strings.Split(m[2], "\n"), int(atoi(t, m[1])), "a row per task shown")
	require.Equal(t, 10000, int(atoi(t, m[1]))+planNotShown(t, out), "those shown and those not are every task")

	r = etl(t, nil, "plan", "--tasks", "--jobs", jobs, "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, lines[0], strings.SplitN(r.stdout, "\n", 2)[0])
	require.Len(t, regexp.MustCompile(`(?m)^(summary|links|ref-domains|anchors|score-profile) n\d+\.example \(ROOT_DOMAIN\)\s`).FindAllString(r.stdout, -1), 10000)
	require.NotContains(t, r.stdout, "not shown")
}

// planNotShown reads the count of "N tasks not shown" in a plan.
func planNotShown(t *testing.T, out string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^(\d+) tasks not shown`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	return int(atoi(t, m[1]))
}
