package pipeline

import (
	"context"
	"log/slog"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/planning"
)

// noteTotal records the row total of a task that ended at the end of its
// data: its last page, which asked for pageLimit lines (0: no limit, all
// there are), brought got. A page as full as it asked ended at max_rows or
// at its limit, which says nothing of the total. An incremental task past
// a watermark is not recorded: its next run asks past another one. A
// failure is logged only: the rows are loaded, and the total merely
// sharpens the next plan.
func (r *Runner) noteTotal(ctx context.Context, t jobspec.Task, pageLimit, got int, rows int64) {
	if t.Endpoint.Shape != catalog.List || (pageLimit > 0 && got >= pageLimit) || !t.Since.IsZero() {
		return
	}
	if err := planning.SaveTotal(ctx, r.cfg.Pool, t, rows, planning.TotalByRun, r.cfg.Now()); err != nil {
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "the row total was not recorded", slog.String("task", t.String()), slog.String("error", err.Error()))
	}
}
