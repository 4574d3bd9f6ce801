package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// Config says what a report covers. The zero value is every target (the
// first DefaultTop drawn one by one), every job, DefaultMonths months.
type Config struct {
	// Job narrows spend and runs to one job ("": every job).
	Job string
	// Targets are the urls of the targets to report on (as in the job
	// spec); empty: every target of the warehouse.
	Targets []string
	// Months is how many months, the current one included, the report
	// covers. Default DefaultMonths.
	Months int
	// Top is how many targets get charts of their own (the rest are rows
	// of the targets table), the largest by backlinks first. Default
	// DefaultTop.
	Top int
	// Caps are the caps to draw spend against; zero caps are not drawn.
	Caps Caps
	// Now is the clock (default time.Now): the current month and the age
	// of listing problems.
	Now func() time.Time
}

// Caps are the budget caps of the job spec the report draws spend against
// (0: none).
type Caps struct {
	// Daily and Monthly cap the installation (every job together).
	Daily, Monthly int64
	// JobMonthly caps each job in a calendar month, and PerRun each run of
	// it (each cap window), by job name.
	JobMonthly, PerRun map[string]int64
}

// Defaults of Config.
const (
	DefaultMonths = 12
	DefaultTop    = 10
)

// ConfigError is a Config that Load refuses, or a target it asks for that
// the warehouse does not hold: the asker's mistake, not the warehouse's.
type ConfigError struct{ msg string }

func (e *ConfigError) Error() string { return e.msg }

func configErrorf(format string, args ...any) error {
	return &ConfigError{msg: fmt.Sprintf(format, args...)}
}

// withDefaults fills the defaults of c, and validates it.
func (c Config) withDefaults() (Config, error) {
	if c.Months == 0 {
		c.Months = DefaultMonths
	}
	if c.Months < 1 || c.Months > 240 {
		return c, configErrorf("months must be between 1 and 240, got %d", c.Months)
	}
	if c.Top == 0 {
		c.Top = DefaultTop
	}
	if c.Top < 0 {
		return c, configErrorf("top must be at least 1, got %d", c.Top)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// Data is what a report shows, read from the analytic views.
type Data struct {
	Job        string
	Generated  time.Time
	From, To   time.Time // the first and last month covered
	Targets    []Target  // every target asked for, largest first
	Gap        []GapSet
	SpendDays  []Spend
	SpendMonth []Spend
	Caps       Caps
	Runs       []Run
	Weeks      []ProblemWeek
	OpenWeeks  []OpenWeek
	Open       []OpenProblems
	top        int // Config.Top
}

// Target is one target with its history (empty past Config.Top).
type Target struct {
	ID        int64
	URL       string
	Scope     string
	Charted   bool
	Authority []Authority
	Changes   []Change
	Velocity  []Velocity
}

// Latest is the target's newest authority row (zero when none).
func (t Target) Latest() Authority {
	if len(t.Authority) == 0 {
		return Authority{}
	}
	return t.Authority[len(t.Authority)-1]
}

// Authority is a row of target_authority.
type Authority struct {
	Month                        time.Time
	Score, Backlinks, RefDomains int64
}

// Change is a row of link_changes.
type Change struct {
	Month                      time.Time
	Links, NewLinks, LostLinks int64
	FlaggedNew, FlaggedLost    int64
}

// Velocity is a row of link_velocity.
type Velocity struct {
	Day                      time.Time
	NewLinks, New30d, New90d int64
	Spike                    bool
}

// GapSet is the competitor gap of one target set in Month (the newest
// month of its matrix in the months covered), best domain first.
type GapSet struct {
	Name, Target string
	Month        time.Time
	Domains      []Gap
}

// Gap is a row of competitor_gap.
type Gap struct {
	Domain                                     string
	Score, RivalsLinking, RivalBacklinks, Rank int64
}

// Spend is a row of spend_by_day or spend_by_month (Runs: of the month
// only, 0 for a day).
type Spend struct {
	Period    time.Time
	Job       string
	Requests  int64
	Reserved  int64
	Units     int64
	Unsettled int64
	Runs      int64
}

// Run is a row of runs, its Units those of spend_by_run (the ledger's).
type Run struct {
	ID         int64
	Job        string
	Trigger    string
	Status     string
	Started    time.Time
	Duration   time.Duration // 0 while running
	Rows       int64
	Units      int64
	Unfinished bool
}

// ProblemWeek is a row of listing_problem_weeks summed over codes.
type ProblemWeek struct {
	Account          string
	Week             time.Time
	Opened, Resolved int64
}

// OpenWeek is how many listing problems were open at the end of a week
// (every account and code): each account and code's open_at_end of
// listing_problem_weeks in its latest week up to this one.
type OpenWeek struct {
	Week time.Time
	Open int64
}

// OpenProblems is a row of listing_open_problems.
type OpenProblems struct {
	Account, Code                           string
	Problems, Locations, Over7Days, Over30d int64
}

// ErrNotAnalyst is returned when the connecting role may not act as
// etl_analyst.
var ErrNotAnalyst = errors.New("report: the report reads the warehouse as etl_analyst, which this role may not: GRANT etl_analyst TO your role")

// Querier is what Load reads through: a pool or a connection.
type Querier interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Load reads the report's data in one read-only transaction as
// etl_analyst, so a report can see nothing an analyst could not.
func Load(ctx context.Context, db Querier, cfg Config) (*Data, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// Repeatable read: every view is read at the same instant.
	tx, err := db.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET LOCAL ROLE etl_analyst"); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			return nil, ErrNotAnalyst
		}
		return nil, fmt.Errorf("report: %w", err)
	}
	now := cfg.Now().UTC()
	to := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	d := &Data{Job: cfg.Job, Generated: now, To: to, From: to.AddDate(0, 1-cfg.Months, 0), Caps: cfg.Caps, top: cfg.Top}
	last := to.AddDate(0, 1, -1) // the last day covered
	if err := d.loadTargets(ctx, tx, cfg); err != nil {
		return nil, err
	}
	steps := []func() error{
		func() error { return d.loadHistory(ctx, tx, last) },
		func() error { return d.loadGap(ctx, tx) },
		func() error { return d.loadSpend(ctx, tx, cfg.Job, last) },
		func() error { return d.loadRuns(ctx, tx, cfg.Job) },
		func() error { return d.loadListings(ctx, tx) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
	}
	return d, nil
}

// loadTargets reads the targets asked for, with their latest backlinks,
// and marks the Top largest to be charted.
func (d *Data) loadTargets(ctx context.Context, tx pgx.Tx, cfg Config) error {
	rows, err := tx.Query(ctx, `
		SELECT t.target_id, t.url, t.scope
		FROM targets t
		WHERE $1::text[] IS NULL OR cardinality($1::text[]) = 0 OR t.url = ANY ($1)
		ORDER BY t.url, t.scope`, cfg.Targets)
	if err != nil {
		return fmt.Errorf("report: targets: %w", err)
	}
	d.Targets, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Target, error) {
		var t Target
		return t, r.Scan(&t.ID, &t.URL, &t.Scope)
	})
	if err != nil {
		return fmt.Errorf("report: targets: %w", err)
	}
	if len(cfg.Targets) > 0 {
		for _, u := range cfg.Targets {
			if !slices.ContainsFunc(d.Targets, func(t Target) bool { return t.URL == u }) {
				return configErrorf("report: no target %q in the warehouse", u)
			}
		}
	}
	return nil
}

// ids are the target ids of ts.
func ids(ts []Target) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// loadHistory reads authority and link changes of every target, ranks the
// targets by their latest backlinks, and reads the link velocity of the
// Top of them.
func (d *Data) loadHistory(ctx context.Context, tx pgx.Tx, last time.Time) error {
	byID := map[int64]*Target{}
	for i := range d.Targets {
		byID[d.Targets[i].ID] = &d.Targets[i]
	}
	all := ids(d.Targets)
	rows, err := tx.Query(ctx, `
		SELECT target_id, month, coalesce(score, 0), coalesce(backlinks, 0), coalesce(ref_domains, 0)
		FROM target_authority
		WHERE month >= $1 AND month <= $2 AND target_id = ANY ($3)
		ORDER BY target_id, month`, d.From, d.To, all)
	if err != nil {
		return fmt.Errorf("target_authority: %w", err)
	}
	var id int64
	var a Authority
	if _, err := pgx.ForEachRow(rows, []any{&id, &a.Month, &a.Score, &a.Backlinks, &a.RefDomains}, func() error {
		byID[id].Authority = append(byID[id].Authority, a)
		return nil
	}); err != nil {
		return fmt.Errorf("target_authority: %w", err)
	}
	// Largest first, by the latest backlinks, those with history before
	// those without, then by url.
	slices.SortStableFunc(d.Targets, func(x, y Target) int {
		if bx, by := x.Latest().Backlinks, y.Latest().Backlinks; bx != by {
			if bx > by {
				return -1
			}
			return 1
		}
		if hx, hy := len(x.Authority) > 0, len(y.Authority) > 0; hx != hy {
			if hx {
				return -1
			}
			return 1
		}
		return 0
	})
	return d.loadCharted(ctx, tx, last)
}

// loadCharted reads link changes and velocity of the targets with charts.
func (d *Data) loadCharted(ctx context.Context, tx pgx.Tx, last time.Time) error {
	byID := map[int64]*Target{}
	var charted []int64
	for i := range d.Targets {
		if len(charted) == d.top {
			break
		}
		if len(d.Targets[i].Authority) == 0 {
			continue // no history in these months: nothing to chart
		}
		d.Targets[i].Charted = true
		byID[d.Targets[i].ID] = &d.Targets[i]
		charted = append(charted, d.Targets[i].ID)
	}
	rows, err := tx.Query(ctx, `
		SELECT target_id, month, links, new_links, lost_links, flagged_new, flagged_lost
		FROM link_changes
		WHERE month >= $1 AND month <= $2 AND target_id = ANY ($3)
		ORDER BY target_id, month`, d.From, d.To, charted)
	if err != nil {
		return fmt.Errorf("link_changes: %w", err)
	}
	var id int64
	var c Change
	if _, err := pgx.ForEachRow(rows, []any{&id, &c.Month, &c.Links, &c.NewLinks, &c.LostLinks, &c.FlaggedNew, &c.FlaggedLost}, func() error {
		byID[id].Changes = append(byID[id].Changes, c)
		return nil
	}); err != nil {
		return fmt.Errorf("link_changes: %w", err)
	}
	rows, err = tx.Query(ctx, `
		SELECT target_id, day, new_links, new_30d, new_90d, spike
		FROM link_velocity($1, $2)
		WHERE target_id = ANY ($3)
		ORDER BY target_id, day`, d.From, last, charted)
	if err != nil {
		return fmt.Errorf("link_velocity: %w", err)
	}
	var v Velocity
	if _, err := pgx.ForEachRow(rows, []any{&id, &v.Day, &v.NewLinks, &v.New30d, &v.New90d, &v.Spike}, func() error {
		byID[id].Velocity = append(byID[id].Velocity, v)
		return nil
	}); err != nil {
		return fmt.Errorf("link_velocity: %w", err)
	}
	return nil
}

// loadGap reads the competitor gap of each set in the newest month its
// matrix holds within the report's months (each set its own: one fetched
// in October beside one fetched in November shows October's): its 10
// best domains.
func (d *Data) loadGap(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `
		SELECT g.set_name, g.target, g.month, g.domain, coalesce(g.domain_score, 0), g.rivals_linking, g.rival_backlinks, g.gap_rank
		FROM (SELECT set_id, max(month) AS month FROM matrix WHERE month >= $1 AND month <= $2 GROUP BY set_id) l
		JOIN competitor_gap g ON g.set_id = l.set_id AND g.month = l.month
		WHERE g.gap_rank <= 10
		ORDER BY g.set_name, g.set_id, g.gap_rank`, d.From, d.To)
	if err != nil {
		return fmt.Errorf("competitor_gap: %w", err)
	}
	var set, target string
	var month time.Time
	var g Gap
	_, err = pgx.ForEachRow(rows, []any{&set, &target, &month, &g.Domain, &g.Score, &g.RivalsLinking, &g.RivalBacklinks, &g.Rank}, func() error {
		if n := len(d.Gap); n == 0 || d.Gap[n-1].Name != set || g.Rank == 1 {
			d.Gap = append(d.Gap, GapSet{Name: set, Target: target, Month: month})
		}
		d.Gap[len(d.Gap)-1].Domains = append(d.Gap[len(d.Gap)-1].Domains, g)
		return nil
	})
	if err != nil {
		return fmt.Errorf("competitor_gap: %w", err)
	}
	return nil
}

// loadSpend reads units per day and month, per job, of the months covered.
func (d *Data) loadSpend(ctx context.Context, tx pgx.Tx, job string, last time.Time) error {
	for _, q := range []struct {
		into  *[]Spend
		query string
	}{
		{&d.SpendDays, `SELECT day, job, requests, reserved, units, unsettled, 0 FROM spend_by_day
			WHERE day >= $1 AND day <= $2 AND ($3 = '' OR job = $3) ORDER BY day, job`},
		{&d.SpendMonth, `SELECT month, job, requests, reserved, units, unsettled, runs FROM spend_by_month
			WHERE month >= $1 AND month <= $2 AND ($3 = '' OR job = $3) ORDER BY month, job`},
	} {
		rows, err := tx.Query(ctx, q.query, d.From, last, job)
		if err != nil {
			return fmt.Errorf("spend: %w", err)
		}
		*q.into, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Spend, error) {
			var s Spend
			return s, r.Scan(&s.Period, &s.Job, &s.Requests, &s.Reserved, &s.Units, &s.Unsettled, &s.Runs)
		})
		if err != nil {
			return fmt.Errorf("spend: %w", err)
		}
	}
	return nil
}

// loadRuns reads the runs started within the months covered, with their
// units from the ledger, counted as spend_by_run counts them (through the
// ledger's index on run_id, for the runs read only): runs.units is
// written when a run ends, so a run killed mid-way has none there.
func (d *Data) loadRuns(ctx context.Context, tx pgx.Tx, job string) error {
	rows, err := tx.Query(ctx, `
		SELECT r.run_id, r.job, r.trigger, r.status, r.started_at, r.finished_at, coalesce(r.rows, 0),
		       coalesce((SELECT sum(coalesce(l.spent, l.reserved)) FROM unit_ledger l WHERE l.run_id = r.run_id), 0)::bigint
		FROM runs r
		WHERE r.started_at >= $1 AND ($2 = '' OR r.job = $2)
		ORDER BY r.started_at, r.run_id`, d.From, job)
	if err != nil {
		return fmt.Errorf("runs: %w", err)
	}
	d.Runs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Run, error) {
		var run Run
		var finished pgtype.Timestamptz
		err := r.Scan(&run.ID, &run.Job, &run.Trigger, &run.Status, &run.Started, &finished, &run.Rows, &run.Units)
		if finished.Valid {
			run.Duration = finished.Time.Sub(run.Started)
		} else {
			run.Unfinished = true
		}
		return run, err
	})
	if err != nil {
		return fmt.Errorf("runs: %w", err)
	}
	return nil
}

// loadListings reads listing problems opened and resolved per week (all
// codes together) and those open now.
func (d *Data) loadListings(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `
		SELECT account, week, sum(opened)::bigint, sum(resolved)::bigint
		FROM listing_problem_weeks
		WHERE week >= $1
		GROUP BY account, week
		ORDER BY account, week`, d.From.AddDate(0, 0, -6))
	if err != nil {
		return fmt.Errorf("listing_problem_weeks: %w", err)
	}
	d.Weeks, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ProblemWeek, error) {
		var w ProblemWeek
		return w, r.Scan(&w.Account, &w.Week, &w.Opened, &w.Resolved)
	})
	if err != nil {
		return fmt.Errorf("listing_problem_weeks: %w", err)
	}
	if err := d.loadOpenWeeks(ctx, tx); err != nil {
		return err
	}
	rows, err = tx.Query(ctx, `
		SELECT account, code, problems, locations, over_7_days, over_30_days
		FROM listing_open_problems
		ORDER BY account, problems DESC, code`)
	if err != nil {
		return fmt.Errorf("listing_open_problems: %w", err)
	}
	d.Open, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (OpenProblems, error) {
		var o OpenProblems
		return o, r.Scan(&o.Account, &o.Code, &o.Problems, &o.Locations, &o.Over7Days, &o.Over30d)
	})
	if err != nil {
		return fmt.Errorf("listing_open_problems: %w", err)
	}
	return nil
}

// loadOpenWeeks counts the problems open at the end of each week of the
// months covered, carrying each account and code's open_at_end forward
// over the weeks without a row of listing_problem_weeks (every week of
// them is read: the count at a week's end includes all that went before).
func (d *Data) loadOpenWeeks(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `
		SELECT account, code, week, open_at_end
		FROM listing_problem_weeks
		WHERE week <= $1
		ORDER BY week, account, code`, d.Generated)
	if err != nil {
		return fmt.Errorf("listing_problem_weeks: %w", err)
	}
	type key struct{ account, code string }
	type point struct {
		week time.Time
		open int64
	}
	var points []struct {
		k key
		p point
	}
	var k key
	var p point
	if _, err := pgx.ForEachRow(rows, []any{&k.account, &k.code, &p.week, &p.open}, func() error {
		points = append(points, struct {
			k key
			p point
		}{k, p})
		return nil
	}); err != nil {
		return fmt.Errorf("listing_problem_weeks: %w", err)
	}
	if len(points) == 0 {
		return nil
	}
	// The Mondays from the week of From to the week of Generated (UTC).
	monday := func(t time.Time) time.Time {
		t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return t.AddDate(0, 0, -((int(t.Weekday()) + 6) % 7))
	}
	open := map[key]int64{}
	i := 0
	for w := monday(d.From); !w.After(monday(d.Generated)); w = w.AddDate(0, 0, 7) {
		for ; i < len(points) && !points[i].p.week.After(w); i++ {
			open[points[i].k] = points[i].p.open
		}
		var n int64
		for _, v := range open {
			n += v
		}
		d.OpenWeeks = append(d.OpenWeeks, OpenWeek{Week: w, Open: n})
	}
	return nil
}
