package planning

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/migrations"
)

// ListingPlan is what the listings pull of a job would do: no units (spec
// 8.1), but requests, and the time the rate limits imply (spec 8.2).
type ListingPlan struct {
	Account string `json:"account"`
	// Locations is the account's locations as the last pull left them
	// (listed, not gone); nil before the first pull.
	Locations *int64 `json:"locations"`
	// Size is the page size: the job's, or the largest the API is known
	// to accept; 0 when it is not known yet (the first page probes it).
	Size int `json:"size"`
	// Pages and Singles are the Get locations and Get location requests
	// (one per location whose status is read); Requests their sum. nil
	// when Locations is.
	Pages    *int64 `json:"pages"`
	Singles  *int64 `json:"singles"`
	Requests *int64 `json:"requests"`
	// Seconds is the least time the requests take at the rate limits, the
	// client pacing them a little under (extract.ListingInterval): each
	// operation has its own limit, and the pull sends a page, then its
	// statuses.
	Seconds *float64 `json:"seconds"`
	Units   int64    `json:"units"`
	// Status is the job's status policy (all or changed); with changed,
	// Singles is the most it may read.
	Status string `json:"status"`
	// Done says the run etl run would take up pulled it already.
	Done  bool   `json:"done"`
	Basis string `json:"basis"`
}

func (l ListingPlan) String() string {
	if l.Done {
		return fmt.Sprintf("listings of account %s: done in the run etl run would take up; 0 requests", l.Account)
	}
	size := "the largest the API accepts (probed on the first page)"
	if l.Size > 0 {
		size = fmt.Sprint(l.Size)
	}
	if l.Locations == nil {
		return fmt.Sprintf("listings of account %s: 0 units; page size %s; %s", l.Account, size, l.Basis)
	}
	up := ""
	if l.Status == jobspec.StatusChanged {
		up = "up to "
	}
	return fmt.Sprintf("listings of account %s: 0 units, %s%d requests (%d pages of %s, %s%d locations read one by one for their status), about %s at the rate limits; %s",
		l.Account, up, *l.Requests, *l.Pages, size, up, *l.Singles, (time.Duration(*l.Seconds * float64(time.Second))).Round(time.Second), l.Basis)
}

// listingPlan plans the listings pull of task t.
func (p *Planner) listingPlan(ctx context.Context, t jobspec.Task, from runs.Checkpoint) (ListingPlan, error) {
	spec := t.Listings
	lp := ListingPlan{Account: spec.Account, Size: spec.Size, Status: spec.Status, Done: from.Status == "done"}
	if lp.Done {
		return lp, nil
	}
	if p.cfg.Pool == nil {
		lp.Basis = "no database: the number of locations is not known"
		return lp, nil
	}
	var n int64
	var at *time.Time
	if err := p.cfg.Pool.QueryRow(ctx, `SELECT count(*), max(observed_at) FROM listing_versions
		WHERE account = $1 AND valid_to IS NULL AND gone_at IS NULL`, spec.Account).Scan(&n, &at); err != nil {
		return lp, fmt.Errorf("reading the locations of account %s: %w", spec.Account, migrations.NotMigrated(err))
	}
	if at == nil {
		lp.Basis = "never pulled: the number of locations is not known"
		return lp, nil
	}
	// The largest size learned from any API: the plan does not know
	// which the run will call. The run lowers the job's size to it
	// (pull.size), so the plan does too.
	var known *int
	if err := p.cfg.Pool.QueryRow(ctx, `SELECT min(accepted) FROM api_bounds WHERE operation = $1 AND param = 'size'`,
		catalog.GetLocations.Name).Scan(&known); err != nil && err != pgx.ErrNoRows {
		return lp, fmt.Errorf("reading the known page size: %w", migrations.NotMigrated(err))
	}
	if known != nil && (lp.Size == 0 || lp.Size > *known) {
		lp.Size = *known
	}
	lp.Locations = &n
	size := int64(lp.Size)
	if size == 0 {
		size = int64(catalog.DefaultLocationsSize) // at worst; the probe finds the bound
	}
	pages := max(1, (n+size-1)/size)
	singles := n
	reqs := pages + singles
	secs := float64(pages)*extract.ListingInterval(catalog.GetLocations).Seconds() +
		float64(singles)*extract.ListingInterval(catalog.GetLocation).Seconds()
	lp.Pages, lp.Singles, lp.Requests, lp.Seconds = &pages, &singles, &reqs, &secs
	lp.Basis = fmt.Sprintf("last pull %s: %d locations", at.UTC().Format("2006-01-02"), n)
	return lp, nil
}
