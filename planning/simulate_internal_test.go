package planning

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
)

var simulateNow = time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)

// linksTask is the links task of a job whose links endpoint says opts.
func linksTask(t *testing.T, opts string) jobspec.Task {
	t.Helper()
	s, err := jobspec.ParseSpec("jobs.yaml", []byte("jobs:\n  - name: j\n    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {links: "+opts+"}\n"), simulateNow)
	require.NoError(t, err)
	tasks := s.Jobs[0].Tasks(simulateNow)
	require.Len(t, tasks, 1)
	return tasks[0]
}

// TestSimulatePagesAsTheRunDoes: a paged task is counted page by page as
// the runner asks for it: full pages of its limit, then the rest; units at
// the endpoint's price per line; max_rows stops it; a checkpoint goes on
// from its offset; a done one costs nothing; a budget too small for one
// line cuts it and says what the next request needs.
func TestSimulatePagesAsTheRunDoes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		opts        string
		total, left int64
		from        runs.Checkpoint
		want        pass
	}{
		{name: "full pages then the rest", opts: "{limit: 1000}", total: 2500, left: -1, want: pass{requests: 3, rows: 2500, units: 2500 * 45}},
		{name: "an exact number of pages asks one more", opts: "{limit: 1000}", total: 2000, left: -1, want: pass{requests: 3, rows: 2000, units: 2000 * 45}},
		{name: "max_rows stops it", opts: "{limit: 1000, max_rows: 1500}", total: 2500, left: -1, want: pass{requests: 2, rows: 1500, units: 1500 * 45}},
		{name: "goes on from its checkpoint", opts: "{limit: 1000}", total: 2500, left: -1,
			from: runs.Checkpoint{Status: "running", Offset: 2000, Rows: 2000}, want: pass{requests: 1, rows: 500, units: 500 * 45}},
		{name: "done costs nothing", opts: "{limit: 1000}", total: 2500, left: -1, from: runs.Checkpoint{Status: "done"}},
		{name: "a budget below one line cuts it", opts: "{limit: 1000}", total: 2500, left: 44, want: pass{cut: true, need: 45}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, simulate(linksTask(t, tc.opts), tc.total, tc.left, tc.from))
		})
	}
}
