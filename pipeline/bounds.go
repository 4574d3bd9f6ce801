package pipeline

import (
	"context"
	"log/slog"

	"github.com/seoetl/etl/internal/apibound"
	"github.com/seoetl/etl/jobspec"
)

// limitBound is the bound of limit on t's endpoint, for a task whose
// requests page with a limit (Task.LearnsLimit); nil for any other.
func (r *Runner) limitBound(t jobspec.Task, st *runState) *apibound.Use {
	if !t.LearnsLimit() {
		return nil
	}
	return st.bounds.Of(r.boundsConfig(), r.cfg.Client.Origin(), t.Endpoint.Name, "limit")
}

// pageBound brings t's bound of limit up to date from lb (nil: t learns
// none) before a request, and says once per task (*warned) when the job's
// limit is above it: the task pages at the bound instead.
func (r *Runner) pageBound(ctx context.Context, t *jobspec.Task, lb *apibound.Use, warned *bool) error {
	if lb == nil {
		return nil
	}
	n, err := lb.Get(ctx)
	if err != nil {
		return err
	}
	t.Bound = n
	if n > 0 && t.Spec.Limit > n && !*warned {
		*warned = true
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "the job's limit is above the largest the API accepts; paging at the API's",
			slog.String("task", t.String()), slog.Int("limit", t.Spec.Limit), slog.Int("bound", n))
	}
	return nil
}

// boundsConfig is how the run's bounds reach the database: its pool and
// clock, retried as its other statements are.
func (r *Runner) boundsConfig() apibound.Config {
	return apibound.Config{Pool: r.cfg.Pool, Now: r.cfg.Now, Logger: r.cfg.Logger,
		Retry: func(ctx context.Context, what string, do func(context.Context) error) error {
			return r.retry(ctx, nil, what, do)
		}}
}
