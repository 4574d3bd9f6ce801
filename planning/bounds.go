package planning

import (
	"context"

	"github.com/seoetl/etl/internal/apibound"
	"github.com/seoetl/etl/jobspec"
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
		var err error
		if known, err = apibound.Limits(ctx, p.cfg.Pool, api); err != nil {
			return err
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
