package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/export"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
)

// RetentionReport is what applying a job spec's retention did: to the
// API's data (keep_months) and to the runs' bookkeeping
// (keep_run_detail).
type RetentionReport struct {
	load.RetentionReport
	Bookkeeping runs.CompactReport
}

// String is the data's report (when keep_months is set) and the
// bookkeeping's line (when keep_run_detail is).
func (r RetentionReport) String() string {
	var b strings.Builder
	if r.KeepMonths > 0 {
		b.WriteString(r.RetentionReport.String())
	}
	b.WriteString(r.Bookkeeping.String())
	return b.String()
}

// Changed reports whether retention removed or compacted anything.
func (r RetentionReport) Changed() bool {
	dropped, detached, deleted := r.Totals()
	return dropped+detached > 0 || deleted > 0 || r.Bookkeeping.Runs > 0
}

// ApplyRetention applies rs at now: keep_months to the API's data
// through loader (load.Loader.ApplyRetention), then keep_run_detail to
// the runs' bookkeeping (CompactRuns, within that time when > 0). The
// second is done even when the first failed; the errors are joined.
func ApplyRetention(ctx context.Context, pool *pgxpool.Pool, loader *load.Loader, log *slog.Logger, rs *jobspec.RetentionSpec, now time.Time, dryRun bool, within time.Duration) (RetentionReport, error) {
	var rep RetentionReport
	var errs []error
	if rs.KeepMonths > 0 {
		var err error
		rep.RetentionReport, err = loader.ApplyRetention(ctx, retentionPolicy(rs), now, dryRun)
		errs = append(errs, err)
	}
	if rs.KeepRunDetail > 0 && ctx.Err() == nil {
		var err error
		rep.Bookkeeping, err = runs.CompactRuns(ctx, pool, log, rs.KeepRunDetail, now, dryRun, within)
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

// retentionPolicy is a job spec's retention as the loader's policy: a
// month dropped is exported first when the spec says where to.
func retentionPolicy(r *jobspec.RetentionSpec) load.Retention {
	p := load.Retention{KeepMonths: r.KeepMonths, Detach: r.Detach}
	if r.ExportTo != "" {
		p.BeforeDrop = export.BeforeDrop(r.ExportTo, nil)
	}
	return p
}
