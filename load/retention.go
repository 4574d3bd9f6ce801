package load

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seoetl/etl/catalog"
)

// Retention is a retention policy for the API's data: the provider's terms
// forbid keeping it longer than one month without written consent. It is
// off unless KeepMonths is set.
type Retention struct {
	// KeepMonths is how many months of data to keep, counting the current
	// month: 1 keeps what was observed (fetched) this month, 2 also what was
	// observed last month, and so on. Everything observed before the first
	// day of that window (see Cutoff) goes. Default 0: retention is off and
	// ApplyRetention does nothing. Negative values, and values past
	// MaxKeepMonths, are refused.
	KeepMonths int
	// Detach keeps the expired partitions of the tables whose month is the
	// fetch month as standalone tables, out of the warehouse's view,
	// instead of dropping them (see ApplyRetention). Default false: drop.
	Detach bool
	// LockTimeout bounds how long the work on one table waits for a lock:
	// DROP and DETACH lock the whole fact table (ACCESS EXCLUSIVE), so they
	// wait for running loads and analysts' queries on it, and while they
	// wait every later query of the table waits behind them. When the
	// timeout passes, that table is left unchanged (its transaction rolls
	// back) and ApplyRetention reports the error after doing the other
	// tables; running it again later finishes the job. Default 0 means 10
	// seconds; negative waits without limit.
	LockTimeout time.Duration
	// BeforeDrop, when set, is called in retention's transaction before
	// each partition retirePartitions drops whole (not a detached one, not
	// one emptied row by row), with the fact table and the partition; an
	// error vetoes the drop: the table is left unchanged and the error
	// reported, as for a lock timeout. Export's hook (export.BeforeDrop,
	// `retention: {export_to: DIR}`) writes the partition to Parquet
	// there. Default nil: drop.
	BeforeDrop func(ctx context.Context, tx pgx.Tx, table, partition string) error
}

// MaxKeepMonths bounds Retention.KeepMonths: a century. No warehouse can
// hold data fetched that long ago (the API's oldest month is 2012-01, and
// this tool fetched nothing before it was written), and past it, a
// number of months means nothing to Cutoff's month arithmetic (a large
// enough one would carry time.Time past its range). It is a bound of
// this tool, not a fact of the API, so it lives here beside the policy
// it bounds rather than in the catalog.
const MaxKeepMonths = 1200

// defaultRetentionLockTimeout is Retention.LockTimeout's default.
const defaultRetentionLockTimeout = 10 * time.Second

func (r Retention) validate() error {
	if r.KeepMonths < 0 || r.KeepMonths > MaxKeepMonths {
		return fmt.Errorf("load: retention keep_months must be between 0 (off) and %d, got %d", MaxKeepMonths, r.KeepMonths)
	}
	return nil
}

// Cutoff is the first day (UTC) of the oldest month r keeps at now: the
// first day of now's month, KeepMonths-1 months back. Data observed before
// it goes. The zero time when retention is off.
func (r Retention) Cutoff(now time.Time) time.Time {
	if r.KeepMonths <= 0 {
		return time.Time{}
	}
	return MonthStart(now).AddDate(0, -(r.KeepMonths - 1), 0)
}

// RetentionReport says what ApplyRetention did, or with a dry run would do.
type RetentionReport struct {
	KeepMonths int
	// Cutoff is the first day of the oldest month kept (Retention.Cutoff);
	// zero when retention is off.
	Cutoff time.Time
	DryRun bool
	Detach bool
	// Tables lists the tables with work, in catalog order, quarantine last.
	Tables []TableRetention
}

// TableRetention is what retention did (or would do) to one table.
type TableRetention struct {
	Table string
	// Dropped and Detached are the partitions dropped or detached, by their
	// first month. Partitions emptied by RowsDeleted are dropped, never
	// detached.
	Dropped  []RetiredPartition
	Detached []RetiredPartition
	// RowsDeleted counts the rows deleted one by one (tables whose month is
	// the month described, the quarantine, and the expired months of a
	// partition that straddles the cutoff). Rows of dropped or detached
	// partitions are not counted: they are never read.
	RowsDeleted int64
	// RowsByObservation is true for the tables whose rows go one by one by
	// observed_at (Detach does not apply to them), false for the tables
	// whose whole partitions go (and the expired months of one that
	// straddles the cutoff).
	RowsByObservation bool
}

// RetiredPartition is a partition retention removed from its table.
type RetiredPartition struct {
	Name string
	// Month is the first day of the range it held: its month or the
	// January of its year, for the loader's partitions.
	Month time.Time
	// DetachedAs is the standalone table the partition became; "" when it
	// was dropped.
	DetachedAs string
}

func (t TableRetention) empty() bool {
	return len(t.Dropped) == 0 && len(t.Detached) == 0 && t.RowsDeleted == 0
}

// Totals sums the report over its tables.
func (r RetentionReport) Totals() (dropped, detached int, rowsDeleted int64) {
	for _, t := range r.Tables {
		dropped += len(t.Dropped)
		detached += len(t.Detached)
		rowsDeleted += t.RowsDeleted
	}
	return dropped, detached, rowsDeleted
}

// String is a human summary: a header, one line per table with work, and a
// total, e.g.
//
//	retention: keep data observed since 2026-11-01 (keep_months 1)
//	backlinks: dropped backlinks_p202609, backlinks_p202610
//	quarantine: deleted 3 rows
//	total: dropped 2 partitions, detached 0, deleted 3 rows
func (r RetentionReport) String() string {
	if r.KeepMonths == 0 {
		return "retention: off (keep_months 0), nothing done\n"
	}
	drop, detach, del := "dropped", "detached", "deleted"
	var b strings.Builder
	fmt.Fprintf(&b, "retention: keep data observed since %s (keep_months %d)", r.Cutoff.Format(time.DateOnly), r.KeepMonths)
	if r.DryRun {
		drop, detach, del = "would drop", "would detach", "would delete"
		b.WriteString(", dry run: nothing changed")
	}
	b.WriteString("\n")
	for _, t := range r.Tables {
		var parts []string
		if t.RowsDeleted > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", del, plural(t.RowsDeleted, "row")))
		}
		if len(t.Detached) > 0 {
			var names []string
			for _, p := range t.Detached {
				names = append(names, p.Name+" as "+p.DetachedAs)
			}
			parts = append(parts, detach+" "+strings.Join(names, ", "))
		}
		if len(t.Dropped) > 0 {
			var names []string
			for _, p := range t.Dropped {
				names = append(names, p.Name)
			}
			what := drop
			if t.RowsByObservation {
				what += " emptied"
			}
			parts = append(parts, what+" "+strings.Join(names, ", "))
		}
		line := t.Table + ": " + strings.Join(parts, "; ")
		if r.Detach && t.RowsByObservation && t.Table != quarantineTable {
			line += " (rows go by observed_at, so they are deleted, not detached)"
		}
		b.WriteString(line + "\n")
	}
	if len(r.Tables) == 0 {
		b.WriteString("nothing to do\n")
	}
	dropped, detached, deleted := r.Totals()
	fmt.Fprintf(&b, "total: %s %s, %s %d, %s %s\n",
		drop, plural(int64(dropped), "partition"), detach, detached, del, plural(deleted, "row"))
	return b.String()
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

const quarantineTable = "quarantine"

// byFetchMonth reports whether the month column of ep's table is the month
// the rows were fetched in (the per-target and per-set endpoints without a
// MonthField), so a month partition before the cutoff holds only rows
// observed before it. Elsewhere month is the month a row describes (a
// MonthField such as summary's month_date, or keyword metrics' month
// parameter), and rows must go by their observed_at.
func byFetchMonth(ep *catalog.Endpoint) bool {
	return ep.MonthField == "" && (ep.PerTarget || ep.PerSet)
}

// ApplyRetention removes the data observed before r.Cutoff(now) from every
// fact table of the catalog and from the quarantine (which holds the API's
// raw rows). It does nothing when r.KeepMonths is 0.
//
// Tables whose month is the fetch month (the per-target and per-set
// endpoints without a MonthField: overview, links, ...): every partition
// whose whole range lies before the cutoff is dropped (no row is read), or
// with r.Detach detached and kept as a standalone table named
// <partition>_detached (then _detached2, ... if that is taken; partitions
// of its own, as the layout before migration 16 had, renamed alike). The
// renaming frees the partition's name, so a later load into that month
// creates a fresh partition. Retention never touches detached tables again:
// archive or drop them yourself. A partition whose range straddles the
// cutoff (a year partition, LayoutOf) loses the rows of its months before
// the cutoff (DELETE, whatever r.Detach says), and stays.
//
// Tables whose month is the month a row describes (summary history and
// comparison, by their month_date; keyword metrics, by the month
// requested): a partition of an old month may hold rows observed today, so
// rows observed before the cutoff are deleted (DELETE ... WHERE observed_at
// < cutoff, which reads the table); Detach does not apply to them.
// Partitions this emptied are then dropped; partitions that were empty
// already are left alone, since a loader may have just created one for
// rows it is about to write. The quarantine's rows observed before the
// cutoff are deleted.
//
// Each table is done in one transaction under the lock the loader takes
// to create its partitions (lockPartitions), so retention never races a partition's
// creation, and two retention runs never work on one table at once. DROP
// and DETACH (and the drop of emptied partitions) lock the whole table
// until the transaction commits, waiting for running loads first, at most
// r.LockTimeout. A month partition is told by its bounds (FOR VALUES FROM
// ... TO ...), not its name; a DEFAULT partition, which the loader never
// makes, is never dropped (its old rows are deleted where rows go one by
// one). Loads write the current month, which never expires, so they only
// meet a dropped partition when a run straddles the turn of a month: a page
// of the old month then fails on its missing partition, and the next run
// loads it into a fresh one.
//
// Then, in the same transaction, the newest months the *_latest views
// read (latest_months, keyword_latest_months) are mended: an owner whose
// recorded month lost rows to this retention and has none left gets its
// newest month that has one, or none (refreshLatest). Only those owners
// are read; a month removed by hand is not retention's to mend
// (docs/warehouse.md says how).
//
// The same statements run on plain PostgreSQL and on Citus
// (docs/warehouse.md, "On Citus"), where the fact tables are distributed
// and latest_months is a reference table.
//
// With dryRun nothing changes: each table is only read, in a read-only
// transaction, and the report says what a real run would do now.
//
// A missing table is an error (the migrations are not applied); so is a
// lock timeout. After an error on one table ApplyRetention goes on with the
// others (unless ctx is done) and returns the report of what was done with
// the errors joined. Each partition dropped or detached, and each table's deleted rows, is
// logged at level Info.
func (l *Loader) ApplyRetention(ctx context.Context, r Retention, now time.Time, dryRun bool) (RetentionReport, error) {
	if err := r.validate(); err != nil {
		return RetentionReport{}, err
	}
	rep := RetentionReport{KeepMonths: r.KeepMonths, DryRun: dryRun, Detach: r.Detach}
	if r.KeepMonths == 0 {
		return rep, nil
	}
	if now.IsZero() {
		return rep, errors.New("load: retention: now is the zero time")
	}
	if r.LockTimeout == 0 {
		r.LockTimeout = defaultRetentionLockTimeout
	}
	rep.Cutoff = r.Cutoff(now)
	var errs []error
	do := func(table string, work func(tx pgx.Tx, t *TableRetention) error) {
		if ctx.Err() != nil {
			return
		}
		t, err := l.retainTable(ctx, r, table, dryRun, work)
		if err != nil {
			errs = append(errs, err)
			return
		}
		if !t.empty() {
			rep.Tables = append(rep.Tables, t)
		}
	}
	for _, ep := range catalog.All() {
		do(ep.Table, func(tx pgx.Tx, t *TableRetention) error {
			var (
				err     error
				before  time.Time   // every month before it lost its rows
				touched []time.Time // these months lost some
			)
			if byFetchMonth(ep) {
				err = l.retirePartitions(ctx, tx, t, rep.Cutoff, r.Detach, dryRun, r.BeforeDrop)
				before = rep.Cutoff
			} else {
				t.RowsByObservation = true
				touched, err = l.deleteObserved(ctx, tx, t, rep.Cutoff, dryRun)
			}
			if err != nil || dryRun || t.empty() {
				return err
			}
			return l.refreshLatest(ctx, tx, ep, before, touched)
		})
	}
	do(quarantineTable, func(tx pgx.Tx, t *TableRetention) error {
		t.RowsByObservation = true
		return l.deleteQuarantined(ctx, tx, t, rep.Cutoff, dryRun)
	})
	if err := ctx.Err(); err != nil {
		errs = append(errs, fmt.Errorf("load: retention stopped: %w", err))
	}
	return rep, errors.Join(errs...)
}

// retainTable runs work on table in a transaction of its own, under the
// table's partition lock, with r's lock timeout.
func (l *Loader) retainTable(ctx context.Context, r Retention, table string, dryRun bool,
	work func(tx pgx.Tx, t *TableRetention) error) (TableRetention, error) {
	opts := pgx.TxOptions{}
	if dryRun {
		opts.AccessMode = pgx.ReadOnly
	}
	var t TableRetention
	err := pgx.BeginTxFunc(ctx, l.cfg.Pool, opts, func(tx pgx.Tx) error {
		t = TableRetention{Table: table}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{table}.Sanitize()).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return errors.New("the table does not exist (are the migrations applied?)")
		}
		timeout := "0" // no limit
		if r.LockTimeout > 0 {
			timeout = fmt.Sprintf("%dms", max(r.LockTimeout.Milliseconds(), 1))
		}
		// Partition bounds are printed in the session's DateStyle.
		if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true), set_config('datestyle', 'ISO, YMD', true)`, timeout); err != nil {
			return err
		}
		// The loader's partition lock (a dry run only reads, and a
		// read-only transaction may not take it): a loader holds it for
		// the moment it takes to make a partition.
		if !dryRun {
			if err := lockPartitions(ctx, tx, table); err != nil {
				return fmt.Errorf("partition lock: %w", err)
			}
		}
		return work(tx, &t)
	})
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
			return TableRetention{}, fmt.Errorf("load: retention %s: a lock was not granted within %s (loads or queries hold the table); "+
				"the table is unchanged, run again later: %w", table, r.LockTimeout, err)
		}
		return TableRetention{}, fmt.Errorf("load: retention %s: %w", table, err)
	}
	return t, nil
}

// monthPartition is a partition of a fact table with a range of months.
type monthPartition struct {
	oid      uint32
	name     string
	from, to time.Time
}

var rangeBound = regexp.MustCompile(`^FOR VALUES FROM \('(\d{4}-\d{2}-\d{2})'\) TO \('(\d{4}-\d{2}-\d{2})'\)$`)

// monthPartitions lists the partitions of table with a date range, by
// month. The DateStyle must be ISO.
func monthPartitions(ctx context.Context, tx pgx.Tx, table string) ([]monthPartition, error) {
	rows, err := tx.Query(ctx, `
		SELECT c.oid, c.relname, pg_get_expr(c.relpartbound, c.oid)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass`, pgx.Identifier{table}.Sanitize())
	if err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	var parts []monthPartition
	var (
		p     monthPartition
		bound string
	)
	_, err = pgx.ForEachRow(rows, []any{&p.oid, &p.name, &bound}, func() error {
		m := rangeBound.FindStringSubmatch(bound)
		if m == nil {
			return nil // DEFAULT, MINVALUE, MAXVALUE: not a range of months
		}
		var err error
		if p.from, err = time.Parse(time.DateOnly, m[1]); err != nil {
			return fmt.Errorf("partition %s: %w", p.name, err)
		}
		if p.to, err = time.Parse(time.DateOnly, m[2]); err != nil {
			return fmt.Errorf("partition %s: %w", p.name, err)
		}
		parts = append(parts, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	slices.SortFunc(parts, func(a, b monthPartition) int { return a.from.Compare(b.from) })
	return parts, nil
}

// retirePartitions drops or detaches the partitions of t.Table whose whole
// range lies before cutoff, and deletes the rows of months before cutoff
// from a partition whose range straddles it (a year partition of a yearly
// table, LayoutOf): their month is the month they were fetched in.
func (l *Loader) retirePartitions(ctx context.Context, tx pgx.Tx, t *TableRetention, cutoff time.Time, detach, dryRun bool,
	beforeDrop func(ctx context.Context, tx pgx.Tx, table, partition string) error) error {
	parts, err := monthPartitions(ctx, tx, t.Table)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if p.from.Before(cutoff) && p.to.After(cutoff) {
			if err := l.deleteMonthsBefore(ctx, tx, t, p, cutoff, dryRun); err != nil {
				return err
			}
			continue
		}
		if p.to.After(cutoff) {
			continue
		}
		retired := RetiredPartition{Name: p.name, Month: p.from}
		if !detach {
			if !dryRun {
				if beforeDrop != nil {
					if err := beforeDrop(ctx, tx, t.Table, p.name); err != nil {
						return fmt.Errorf("before dropping %s: %w", p.name, err)
					}
				}
				if _, err := tx.Exec(ctx, "DROP TABLE "+pgx.Identifier{p.name}.Sanitize()); err != nil {
					return fmt.Errorf("dropping %s: %w", p.name, err)
				}
				l.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "retention: partition dropped",
					slog.String("table", t.Table), slog.String("partition", p.name))
			}
			t.Dropped = append(t.Dropped, retired)
			continue
		}
		if retired.DetachedAs, err = l.detach(ctx, tx, t.Table, p, dryRun); err != nil {
			return err
		}
		t.Detached = append(t.Detached, retired)
	}
	return nil
}

// deleteMonthsBefore deletes (with dryRun counts) the rows of partition p
// of t.Table whose month is before cutoff.
func (l *Loader) deleteMonthsBefore(ctx context.Context, tx pgx.Tx, t *TableRetention, p monthPartition, cutoff time.Time, dryRun bool) error {
	part := pgx.Identifier{p.name}.Sanitize()
	query := fmt.Sprintf(`SELECT count(*) FROM %s WHERE month < $1`, part)
	if !dryRun {
		query = fmt.Sprintf(`WITH d AS (DELETE FROM %s WHERE month < $1 RETURNING 1) SELECT count(*) FROM d`, part)
	}
	var n int64
	if err := tx.QueryRow(ctx, query, cutoff).Scan(&n); err != nil {
		return fmt.Errorf("deleting the rows of %s before %s: %w", p.name, cutoff.Format("2006-01"), err)
	}
	t.RowsDeleted += n
	if n > 0 && !dryRun {
		l.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "retention: rows deleted",
			slog.String("table", t.Table), slog.String("partition", p.name), slog.Int64("rows", n))
	}
	return nil
}

// refreshLatest mends the newest months that the *_latest views read
// (writeLatest) after retention removed rows of ep's table: an owner whose
// recorded month has no row left gets its newest month that has, or none.
// What retention removed is every month before before (the zero time:
// none; the tables whose month is the fetch month lose all of them) and
// the months of months (those that lost rows observed before the cutoff).
//
// Only the candidates are read from the fact table: the owners whose
// recorded month lies in what was removed (a read of latest_months
// alone), in one query that names them and reads no month after the
// newest of theirs, so that on the tables whose month is the fetch month
// it reads no partition at all (every month before the cutoff is gone),
// and elsewhere only the candidates' rows. The mend then names each
// candidate with the month it had (a load that moved it on since is kept).
// Each statement reads one table: Citus refuses a DELETE or UPDATE of a
// reference table (latest_months) that reads a distributed one ("only
// reference tables may be queried when targeting a reference table with
// multi shard UPDATE/DELETE queries with multiple tables"), and a
// correlated subquery or lateral join from one into the other.
func (l *Loader) refreshLatest(ctx context.Context, tx pgx.Tx, ep *catalog.Endpoint, before time.Time, months []time.Time) error {
	if before.IsZero() && len(months) == 0 {
		return nil
	}
	k, err := newLatestKeys(ep)
	if err != nil {
		return err
	}
	cands, newest, err := k.candidates(ctx, tx, before, months)
	if err != nil {
		return err
	}
	if len(cands) == 0 {
		return nil
	}
	left, err := k.monthsLeft(ctx, tx, cands, newest)
	if err != nil {
		return err
	}
	gone, moved := planMend(len(k.qlk), cands, left)
	if err := k.mend(ctx, tx, "DELETE", gone); err != nil {
		return err
	}
	return k.mend(ctx, tx, "UPDATE", moved)
}

// latestKeys is how refreshLatest names the owners of ep's rows: the
// quoted fact table and latest table, the key of an owner in the latest
// table (qlk), the fact table's columns that hold it (qfk) and their
// types, and scope, the conditions (placeholders first, arguments
// scopeArgs) that limit the latest table to ep's rows.
type latestKeys struct {
	table, lt       string
	qlk, qfk, types []string
	scope           []string
	scopeArgs       []any
}

// newLatestKeys returns the latestKeys of ep.
func newLatestKeys(ep *catalog.Endpoint) (*latestKeys, error) {
	var latestKey, factKey, types []string
	var scope []string
	var scopeArgs []any
	if o := owner(ep); o != "" {
		latestKey, factKey, types = []string{"owner_id"}, []string{o}, []string{"bigint"}
		scope, scopeArgs = []string{"l.fact_table = $%d"}, []any{ep.Table}
	} else {
		latestKey, factKey = ep.Key, ep.Key
		for _, k := range ep.Key {
			for _, c := range Columns(ep) {
				if c.Name == k {
					types = append(types, c.PGType)
				}
			}
		}
	}
	if len(types) != len(factKey) {
		return nil, fmt.Errorf("latest months: the key of %s has no column", ep.Table)
	}
	k := &latestKeys{
		table:     pgx.Identifier{ep.Table}.Sanitize(),
		lt:        pgx.Identifier{latestTable(ep)}.Sanitize(),
		qlk:       quoteAll(latestKey),
		qfk:       quoteAll(factKey),
		types:     types,
		scopeArgs: scopeArgs,
	}
	for i, s := range scope {
		k.scope = append(k.scope, fmt.Sprintf(s, i+1))
	}
	return k, nil
}

// statementArgs gathers the arguments of a statement as its text names
// them.
type statementArgs struct{ args []any }

// arg adds v to the arguments and returns its placeholder.
func (a *statementArgs) arg(v any) string {
	a.args = append(a.args, v)
	return fmt.Sprintf("$%d", len(a.args))
}

// latestCandidate is an owner whose recorded month retention removed: its
// key as text and that month.
type latestCandidate struct {
	key   []string
	month time.Time
}

// candidates reads from the latest table alone the owners whose recorded
// month retention removed (before and months as refreshLatest takes
// them), by their key as text joined by NUL, and the newest of their
// months.
func (k *latestKeys) candidates(ctx context.Context, tx pgx.Tx, before time.Time, months []time.Time) (map[string]latestCandidate, time.Time, error) {
	a := statementArgs{args: slices.Clone(k.scopeArgs)}
	where := slices.Clone(k.scope)
	var removed []string
	if !before.IsZero() {
		removed = append(removed, "l.month < "+a.arg(before))
	}
	if len(months) > 0 {
		removed = append(removed, "l.month = ANY("+a.arg(months)+"::date[])")
	}
	where = append(where, "("+strings.Join(removed, " OR ")+")")
	rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT %s, l.month FROM %s l WHERE %s`,
		strings.Join(suffixed(prefixed("l.", k.qlk), "::text"), ", "), k.lt, strings.Join(where, " AND ")), a.args...)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("latest months: %w", err)
	}
	cands := map[string]latestCandidate{}
	var newest time.Time
	err = forEachKeyMonth(rows, len(k.qlk), func(key []string, m time.Time) {
		cands[strings.Join(key, "\x00")] = latestCandidate{key: slices.Clone(key), month: m}
		if m.After(newest) {
			newest = m
		}
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("latest months: %w", err)
	}
	return cands, newest, nil
}

// monthsLeft reads from the fact table the newest month each candidate
// has left, by its key as text joined by NUL, reading no month after
// newest. It names the candidates by key column: each column's values of
// the candidates (for a key of several columns, a superset of the
// candidates, which the map filters).
func (k *latestKeys) monthsLeft(ctx context.Context, tx pgx.Tx, cands map[string]latestCandidate, newest time.Time) (map[string]time.Time, error) {
	var a statementArgs
	var match []string
	for i, c := range k.qfk {
		match = append(match, fmt.Sprintf("%s = ANY(%s::text[]::%s[])", c, a.arg(keyColumn(cands, i)), k.types[i]))
	}
	match = append(match, "month <= "+a.arg(newest))
	rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT %s, max(month) FROM %s WHERE %s GROUP BY %s`,
		strings.Join(suffixed(k.qfk, "::text"), ", "), k.table, strings.Join(match, " AND "), strings.Join(k.qfk, ", ")), a.args...)
	if err != nil {
		return nil, fmt.Errorf("latest months: %w", err)
	}
	left := map[string]time.Time{}
	err = forEachKeyMonth(rows, len(k.qfk), func(key []string, m time.Time) {
		left[strings.Join(key, "\x00")] = m
	})
	if err != nil {
		return nil, fmt.Errorf("latest months: %w", err)
	}
	return left, nil
}

// keyColumn returns the distinct values of column i of the candidates'
// keys, sorted.
func keyColumn(cands map[string]latestCandidate, i int) []string {
	seen := map[string]bool{}
	var col []string
	for _, c := range cands {
		if !seen[c.key[i]] {
			seen[c.key[i]] = true
			col = append(col, c.key[i])
		}
	}
	slices.Sort(col)
	return col
}

// forEachKeyMonth calls fn for each row of rows, a key of n text columns
// and a month; fn must copy the key to keep it, as the next row reuses
// it.
func forEachKeyMonth(rows pgx.Rows, n int, fn func(key []string, month time.Time)) error {
	vals := make([]string, n)
	var m time.Time
	ptrs := make([]any, 0, n+1)
	for i := range vals {
		ptrs = append(ptrs, &vals[i])
	}
	ptrs = append(ptrs, &m)
	_, err := pgx.ForEachRow(rows, ptrs, func() error {
		fn(vals, m)
		return nil
	})
	return err
}

// latestMend is one statement of the mend of the latest table: the keys
// of the owners it names, by key column, and by owner the month each
// had, then (for a move) the month it moves back to.
type latestMend struct {
	keys  [][]string
	dates [][]time.Time
}

// add names one more owner, key, with its dates.
func (m *latestMend) add(key []string, dates ...time.Time) {
	for i, v := range key {
		m.keys[i] = append(m.keys[i], v)
	}
	for i, d := range dates {
		m.dates[i] = append(m.dates[i], d)
	}
}

// planMend sorts the candidates (keys of n columns) into those with no
// month left, which go, and those whose month left is older than the one
// recorded, which move back to it; it takes them in the order of their
// keys, so that the mend takes its locks in one order.
func planMend(n int, cands map[string]latestCandidate, left map[string]time.Time) (gone, moved latestMend) {
	gone = latestMend{keys: make([][]string, n), dates: make([][]time.Time, 1)}
	moved = latestMend{keys: make([][]string, n), dates: make([][]time.Time, 2)}
	for _, k := range slices.Sorted(maps.Keys(cands)) { // one lock order
		c := cands[k]
		to, ok := left[k]
		switch {
		case !ok:
			gone.add(c.key, c.month)
		case to.Before(c.month):
			moved.add(c.key, c.month, to)
		}
	}
	return gone, moved
}

// mend runs one statement of the mend: verb DELETE removes the owners of
// m from the latest table, UPDATE moves each back to its month left, each
// only if it still has the month read before.
func (k *latestKeys) mend(ctx context.Context, tx pgx.Tx, verb string, m latestMend) error {
	if len(m.keys[0]) == 0 {
		return nil
	}
	a := statementArgs{args: slices.Clone(k.scopeArgs)}
	where := slices.Clone(k.scope)
	var arrays, names []string
	for i, c := range k.qlk {
		arrays = append(arrays, a.arg(m.keys[i])+"::text[]")
		names = append(names, fmt.Sprintf("k%d", i))
		where = append(where, fmt.Sprintf("l.%s = g.k%d::%s", c, i, k.types[i]))
	}
	for i, d := range m.dates {
		arrays = append(arrays, a.arg(d)+"::date[]")
		names = append(names, fmt.Sprintf("m%d", i))
	}
	where = append(where, "l.month = g.m0")
	g := fmt.Sprintf("unnest(%s) g (%s)", strings.Join(arrays, ", "), strings.Join(names, ", "))
	sql := fmt.Sprintf(`DELETE FROM %s l USING %s WHERE %s`, k.lt, g, strings.Join(where, " AND "))
	if verb == "UPDATE" {
		sql = fmt.Sprintf(`UPDATE %s l SET month = g.m1 FROM %s WHERE %s`, k.lt, g, strings.Join(where, " AND "))
	}
	if _, err := tx.Exec(ctx, sql, a.args...); err != nil {
		return fmt.Errorf("latest months: %w", err)
	}
	return nil
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

func suffixed(names []string, suffix string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + suffix
	}
	return out
}

// detach detaches p from table and renames it and its own partitions to a
// free name, which it returns; with dryRun it only finds the name.
func (l *Loader) detach(ctx context.Context, tx pgx.Tx, table string, p monthPartition, dryRun bool) (string, error) {
	rows, err := tx.Query(ctx, `
		SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1 ORDER BY c.relname`, p.oid)
	if err != nil {
		return "", fmt.Errorf("listing partitions of %s: %w", p.name, err)
	}
	children, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", fmt.Errorf("listing partitions of %s: %w", p.name, err)
	}
	// The first of <name>_detached, <name>_detached2, ... that is free for
	// the partition and its children alike.
	var name string
	renames := map[string]string{}
	for n := 1; name == ""; n++ {
		if n > 100 {
			return "", fmt.Errorf("no free name to detach %s as: %s_detached to %s_detached100 are taken", p.name, p.name, p.name)
		}
		try := p.name + "_detached"
		if n > 1 {
			try += fmt.Sprint(n)
		}
		clear(renames)
		renames[p.name] = try
		for _, c := range children {
			if suffix, ok := strings.CutPrefix(c, p.name); ok {
				renames[c] = try + suffix
			} else {
				renames[c] = c + "_detached"
			}
		}
		free := true
		for _, to := range renames {
			// PostgreSQL would truncate a longer name and could collide.
			if len(to) > 63 {
				return "", fmt.Errorf("cannot detach %s: the name %s is longer than 63 bytes", p.name, to)
			}
			var taken bool
			if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{to}.Sanitize()).Scan(&taken); err != nil {
				return "", fmt.Errorf("detaching %s: %w", p.name, err)
			}
			free = free && !taken
		}
		if free {
			name = try
		}
	}
	if dryRun {
		return name, nil
	}
	qname := pgx.Identifier{name}.Sanitize()
	// One statement per call: Citus refuses several in one.
	ddl := []string{fmt.Sprintf("ALTER TABLE %s DETACH PARTITION %s", pgx.Identifier{table}.Sanitize(), pgx.Identifier{p.name}.Sanitize())}
	for _, from := range append(children, p.name) {
		ddl = append(ddl, fmt.Sprintf("ALTER TABLE %s RENAME TO %s", pgx.Identifier{from}.Sanitize(), pgx.Identifier{renames[from]}.Sanitize()))
	}
	ddl = append(ddl, fmt.Sprintf("COMMENT ON TABLE %s IS %s", qname, literal(fmt.Sprintf(
		"Rows of %s from %s, detached from it as %s by the retention policy; no longer part of %s, never touched by etl again.",
		table, p.from.Format("2006-01"), p.name, table))))
	for _, sql := range ddl {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return "", fmt.Errorf("detaching %s: %w", p.name, err)
		}
	}
	l.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "retention: partition detached",
		slog.String("table", table), slog.String("partition", p.name), slog.String("detached_as", name))
	return name, nil
}

// deleteObserved deletes the rows of t.Table observed before cutoff, then
// drops the partitions that emptied. It returns the months that lost rows
// (with dryRun: would lose).
//
// The rows are counted by month, and a month is told its partition by the
// partitions' bounds: not by tableoid, which on Citus names a shard, not
// the coordinator's partition.
func (l *Loader) deleteObserved(ctx context.Context, tx pgx.Tx, t *TableRetention, cutoff time.Time, dryRun bool) ([]time.Time, error) {
	parts, err := monthPartitions(ctx, tx, t.Table)
	if err != nil {
		return nil, err
	}
	table := pgx.Identifier{t.Table}.Sanitize()
	// Per month: the rows observed before the cutoff and all rows (a dry
	// run), or the rows deleted.
	query := fmt.Sprintf(`SELECT month, count(*) FILTER (WHERE observed_at < $1), count(*) FROM %s GROUP BY month`, table)
	if !dryRun {
		query = fmt.Sprintf(`
			WITH d AS (DELETE FROM %s WHERE observed_at < $1 RETURNING month)
			SELECT month, count(*), NULL::bigint FROM d GROUP BY month`, table)
	}
	rows, err := tx.Query(ctx, query, cutoff)
	if err != nil {
		return nil, fmt.Errorf("deleting rows: %w", err)
	}
	var (
		month   time.Time
		old     int64
		all     *int64
		touched []time.Time
		// per partition (index into parts): rows observed before the cutoff
		// and all rows (a dry run)
		partOld = map[int]int64{}
		partAll = map[int]int64{}
	)
	_, err = pgx.ForEachRow(rows, []any{&month, &old, &all}, func() error {
		t.RowsDeleted += old
		if old > 0 {
			touched = append(touched, month)
		}
		i := slices.IndexFunc(parts, func(p monthPartition) bool { return !month.Before(p.from) && month.Before(p.to) })
		if i < 0 {
			return nil // a DEFAULT partition's: never dropped
		}
		partOld[i] += old
		if all != nil {
			partAll[i] += *all
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("deleting rows: %w", err)
	}
	var candidate []monthPartition
	for i, p := range parts {
		// A dry run knows a partition would empty when all its rows are old;
		// a real run checks below, under the table lock.
		if partOld[i] > 0 && (!dryRun || partAll[i] == partOld[i]) {
			candidate = append(candidate, p)
		}
	}
	if len(candidate) > 0 && !dryRun {
		// Lock out loads before looking: a row written between the check and
		// the drop would be lost.
		if _, err := tx.Exec(ctx, fmt.Sprintf("LOCK TABLE %s IN ACCESS EXCLUSIVE MODE", table)); err != nil {
			return nil, fmt.Errorf("locking: %w", err)
		}
	}
	var names []string
	for _, p := range candidate {
		if !dryRun {
			var nonEmpty bool
			// SELECT 1, not an empty list: Citus fails to plan EXISTS (SELECT
			// FROM t) over a distributed table ("a column definition list is
			// required for functions returning "record"", 13.2.2).
			if err := tx.QueryRow(ctx, fmt.Sprintf("SELECT EXISTS (SELECT 1 FROM %s)", pgx.Identifier{p.name}.Sanitize())).Scan(&nonEmpty); err != nil {
				return nil, fmt.Errorf("checking %s: %w", p.name, err)
			}
			if nonEmpty {
				continue
			}
			if _, err := tx.Exec(ctx, "DROP TABLE "+pgx.Identifier{p.name}.Sanitize()); err != nil {
				return nil, fmt.Errorf("dropping %s: %w", p.name, err)
			}
		}
		t.Dropped = append(t.Dropped, RetiredPartition{Name: p.name, Month: p.from})
		names = append(names, p.name)
	}
	if t.RowsDeleted > 0 && !dryRun {
		l.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "retention: rows deleted",
			slog.String("table", t.Table), slog.Int64("rows", t.RowsDeleted),
			slog.String("emptied_partitions_dropped", strings.Join(names, ",")))
	}
	return touched, nil
}

// deleteQuarantined deletes the quarantined rows observed before cutoff.
func (l *Loader) deleteQuarantined(ctx context.Context, tx pgx.Tx, t *TableRetention, cutoff time.Time, dryRun bool) error {
	query := `SELECT count(*) FROM quarantine WHERE observed_at < $1`
	if !dryRun {
		query = `WITH d AS (DELETE FROM quarantine WHERE observed_at < $1 RETURNING 1) SELECT count(*) FROM d`
	}
	if err := tx.QueryRow(ctx, query, cutoff).Scan(&t.RowsDeleted); err != nil {
		return fmt.Errorf("deleting rows: %w", err)
	}
	if t.RowsDeleted > 0 && !dryRun {
		l.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "retention: rows deleted",
			slog.String("table", t.Table), slog.Int64("rows", t.RowsDeleted))
	}
	return nil
}
