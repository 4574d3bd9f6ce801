package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/planning"
)

// hugeLimitSpec is issue 12's job: a limit whose worst case (x 45 units a
// line) wrapped around int64 to 29 units, so the per_run cap of 1000 let
// it through and the API charged 90,000.
const hugeLimitSpec = `jobs:
  - name: huge
    budget: {per_run: 1000}
    targets: [{url: n2000.example, scope: ROOT_DOMAIN}]
    endpoints:
      links: {limit: 409927646082434481}
`

// TestHugeLimitIsRefusedBeforeSpending: etl plan (with --probe too) and
// etl run refuse the job with exit 2 and the bound at file:line, and not
// one request reaches the API.
func TestHugeLimitIsRefusedBeforeSpending(t *testing.T) {
	t.Parallel()
	sb, env := runWorld(t, "k")
	jobs := writeSpec(t, hugeLimitSpec)
	want := jobs + ":6: limit must be between 1 and 2147483647, got 409927646082434481"
	now := cliNow.Format(time.RFC3339)
	for _, args := range [][]string{
		{"plan", "--jobs", jobs, "--now", now},
		{"plan", "--probe", "--jobs", jobs, "--now", now},
		{"run", "--jobs", jobs, "--now", now},
	} {
		r := etl(t, env, args...)
		require.Equal(t, exitUsage, r.code, "%s: %s%s", strings.Join(args, " "), r.stdout, r.stderr)
		require.Contains(t, r.stderr, want, args)
		require.Empty(t, r.stdout, args)
	}
	u := sb.Usage("k")
	require.Zero(t, u.Requests+u.FailedRequests, "no request reached the API")
	require.Zero(t, u.UnitsSpent)
}

// TestPlanPrintsASaturatedCountAsOverflow: a count past what an int64
// holds (the plan's sums saturate at math.MaxInt64) prints as overflow,
// never as a number that looks like a price.
func TestPlanPrintsASaturatedCountAsOverflow(t *testing.T) {
	t.Parallel()
	sat, three := int64(math.MaxInt64), int64(3)
	var out strings.Builder
	writePlan(&out, &planning.Plan{
		Job: "huge", At: cliNow,
		Tasks: []planning.TaskPlan{{Name: "links n2000.example (ROOT_DOMAIN)", Price: planning.PlanPrice{Units: 45, Per: "line"},
			Requests: &three, Worst: &sat, Expected: &sat, Basis: "unknown: worst case"}},
		Total: planning.Cost{Tasks: 1, Requests: &three, Worst: &sat, Expected: &sat},
	}, true)
	require.Contains(t, out.String(), "plan of job huge at 2026-11-21T03:00:00Z: 1 tasks, 3 requests, expected overflow units, worst case overflow\n")
	require.Regexp(t, `(?m)^links n2000\.example \(ROOT_DOMAIN\)\s+45/line\s+3\s+overflow\s+overflow\s+unknown: worst case$`, out.String())
	require.NotContains(t, out.String(), "9223372036854775807")
}
