package planning

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/migrations"
)

// pageBounds sets the Bound of every task that pages with a limit to the
// API's, as api_bounds knows it (of p.cfg.API; or, not knowing the API,
// the smallest learned from any), for the planner to count its requests
// as the run pages. A task whose job gives no limit and whose bound is not
// known yet is counted at the endpoint's default page: the most requests
// the run may send (it learns the bound at its first request, which the
// API refuses at no cost).
func (p *Planner) pageBounds(ctx context.Context, tasks []jobspec.Task) error {
	known := map[string]int{}
	if p.cfg.Pool != nil {
		api := p.cfg.API
		if api == "" && p.cfg.Client != nil {
			api = p.cfg.Client.Origin()
		}
		rows, err := p.cfg.Pool.Query(ctx, `SELECT operation, min(accepted) FROM api_bounds
			WHERE param = 'limit' AND ($1 = '' OR api = $1) GROUP BY operation`, api)
		if err != nil {
			return fmt.Errorf("reading the bounds of limit the API accepts: %w", migrations.NotMigrated(err))
		}
		var op string
		var n int
		if _, err := pgx.ForEachRow(rows, []any{&op, &n}, func() error { known[op] = n; return nil }); err != nil {
			return fmt.Errorf("reading the bounds of limit the API accepts: %w", migrations.NotMigrated(err))
		}
	}
	for i := range tasks {
		t := &tasks[i]
		if !t.LearnsLimit() {
			continue
		}
		t.Bound = known[t.Endpoint.Name]
		if t.Bound == 0 && t.Spec.Limit == 0 {
			t.Bound, t.Unlearned = t.Endpoint.DefaultLimit, true
		}
	}
	return nil
}
