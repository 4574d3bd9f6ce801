package load

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
)

// Config configures a Loader.
type Config struct {
	// Pool connects to the warehouse (required).
	Pool *pgxpool.Pool
	// Partitions, when set, is where partition creation takes its
	// connection (EnsurePartitions): a pool apart from Pool, whose
	// connections the caller may open ahead and keep, so that a page
	// never meets a server with no connection left to make its partition
	// on. Default: a new connection for each creation.
	Partitions *pgxpool.Pool
	// Logger receives a line per partition created; default discards.
	Logger *slog.Logger
}

// Loader writes batches into the warehouse. It is safe for concurrent use.
type Loader struct {
	cfg Config
	// seen holds the partitions (table and first month) this loader has
	// made or waited for under the partition lock (EnsurePartitions);
	// see synced.
	seen sync.Map
	// citus says whether the warehouse has the citus extension (see
	// onCitus), once asked (citusKnown).
	citusMu    sync.Mutex
	citusKnown bool
	citus      bool
}

// citusProbe are the settings of a page's transaction on Citus that leave
// the planners of the coordinator and of the workers (SET LOCAL reaches
// them with citus.propagate_set_commands) no join of the staged rows with
// the fact table but a nested loop: a probe of the primary key per
// staged row (see Page.classify).
var citusProbe = []string{
	"SET LOCAL citus.propagate_set_commands = 'local'",
	"SET LOCAL enable_hashjoin = off",
	"SET LOCAL enable_mergejoin = off",
}

// onCitus reports whether the warehouse is a Citus coordinator (the citus
// extension is created in its database): then a page's compare and insert
// take the shapes Citus runs (moveSQL). It asks on the page's own
// transaction tx: a page waiting for a connection of the pool, while
// pages hold all of them, would wait forever.
func (l *Loader) onCitus(ctx context.Context, tx pgx.Tx) (bool, error) {
	l.citusMu.Lock()
	defer l.citusMu.Unlock()
	if !l.citusKnown {
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')`).Scan(&l.citus); err != nil {
			return false, fmt.Errorf("load: is the warehouse on Citus: %w", err)
		}
		l.citusKnown = true
	}
	return l.citus, nil
}

// synced reports whether the loader has waited, under the partition lock,
// for the partition of ep's table that holds month m: only then may a
// page that finds it attached route rows to it. A transaction that
// attaches a partition is visible (pg_inherits shows it) a moment before
// it sends the cache invalidations that tell other connections their
// table's partitions changed, and it sends them before it releases its
// locks. A page that saw the partition in that moment, and routed rows
// through a connection whose cached list of partitions predates it,
// failed with "no partition of relation ... found for row". Waiting once
// for the partition lock (which the attaching transaction held until its
// invalidations were out) closes that moment.
func (l *Loader) synced(ep *catalog.Endpoint, m time.Time) bool {
	_, ok := l.seen.Load(seenKey(ep, m))
	return ok
}

// seenKey names the partition of ep's table that holds month m in
// Loader.seen.
func seenKey(ep *catalog.Endpoint, m time.Time) string {
	from, _ := LayoutOf(ep).Span(m)
	return ep.Table + "/" + from.Format(time.DateOnly)
}

// New returns a Loader.
func New(cfg Config) (*Loader, error) {
	if cfg.Pool == nil {
		return nil, errors.New("load: Config.Pool is nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Loader{cfg: cfg}, nil
}

// Target returns the target_id of (url, scope), creating the row if needed.
func (l *Loader) Target(ctx context.Context, url string, scope catalog.Scope) (int64, error) {
	var id int64
	// DO UPDATE (a no-op) rather than DO NOTHING, so RETURNING also gives
	// the id of a row another transaction inserted a moment ago.
	err := l.cfg.Pool.QueryRow(ctx, `
		INSERT INTO targets (url, scope) VALUES ($1, $2)
		ON CONFLICT (url, scope) DO UPDATE SET url = EXCLUDED.url
		RETURNING target_id`, url, string(scope)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("load: target %q %s: %w", url, scope, err)
	}
	return id, nil
}

// TargetSet returns the set_id of the target set (name, scope, urls) and
// the target_id of each of its urls, creating the rows if needed.
func (l *Loader) TargetSet(ctx context.Context, name string, scope catalog.Scope, urls []string) (int64, map[string]int64, error) {
	var setID int64
	targets := make(map[string]int64, len(urls))
	err := pgx.BeginFunc(ctx, l.cfg.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `
			INSERT INTO target_sets (name, scope, urls) VALUES ($1, $2, $3)
			ON CONFLICT (name, scope, urls) DO UPDATE SET name = EXCLUDED.name
			RETURNING set_id`, name, string(scope), urls).Scan(&setID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			WITH t AS (
				INSERT INTO targets (url, scope) SELECT u, $2 FROM unnest($1::text[]) u
				ON CONFLICT (url, scope) DO UPDATE SET url = EXCLUDED.url
				RETURNING url, target_id),
			m AS (
				INSERT INTO target_set_members (set_id, position, target_id)
				SELECT $3, u.position, t.target_id FROM unnest($1::text[]) WITH ORDINALITY u(url, position) JOIN t USING (url)
				ON CONFLICT DO NOTHING)
			SELECT url, target_id FROM t`, urls, string(scope), setID)
		if err != nil {
			return err
		}
		var url string
		var id int64
		_, err = pgx.ForEachRow(rows, []any{&url, &id}, func() error {
			targets[url] = id
			return nil
		})
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("load: target set %q: %w", name, err)
	}
	return setID, targets, nil
}

// Batch is one record batch of an endpoint's rows with what the rows do not
// carry themselves.
type Batch struct {
	Endpoint *catalog.Endpoint
	// TargetID is the target of per-target endpoints.
	TargetID int64
	// Targets maps the values of Endpoint.TargetField to target ids, for
	// endpoints whose rows each say their target (comparison); TargetID is
	// not used then.
	Targets map[string]int64
	// SetID is the target set of per-set endpoints (matrix).
	SetID int64
	// Context holds the values of Endpoint.Context, in order.
	Context []any
	// Month is the month the rows describe, unless Endpoint.MonthField names
	// a row field that says it per row.
	Month time.Time
	// ObservedAt is when the rows were fetched.
	ObservedAt time.Time
	// Record holds the rows; columns are matched to fields by name.
	Record arrow.Record
}

// Result counts what a Load did.
type Result struct {
	Rows      int64 // rows in the batch
	Inserted  int64 // new rows
	Updated   int64 // existing rows whose values changed
	Unchanged int64 // rows equal to what the table held (and duplicates within the batch)
}

// Add sums two results.
func (r Result) Add(o Result) Result {
	return Result{r.Rows + o.Rows, r.Inserted + o.Inserted, r.Updated + o.Updated, r.Unchanged + o.Unchanged}
}

// Load stages b and upserts it inside tx: a page of one batch.
func (l *Loader) Load(ctx context.Context, tx pgx.Tx, b Batch) (Result, error) {
	p, err := l.NewPage(ctx, tx, b.Endpoint)
	if err != nil {
		return Result{}, err
	}
	if err := p.Stage(ctx, b); err != nil {
		return Result{}, err
	}
	return p.Upsert(ctx)
}

// Page gathers the batches of one API page in a staging table inside the
// caller's transaction, then upserts them together. The order matters for
// concurrency: staging takes no lock on the fact table, partitions are
// created (on another connection) before the upsert, and only the upsert
// locks the fact table, until the caller commits. So no transaction ever
// holds the fact table while it waits for a partition, which would deadlock
// with CREATE TABLE ... PARTITION OF (it locks the parent exclusively).
type Page struct {
	l    *Loader
	tx   pgx.Tx
	ep   *catalog.Endpoint
	rows int64
	// keys holds a hash of the natural key of every row staged, and dups
	// says two rows had the same hash: only then may the page hold a key
	// twice, and need de-duplicating (see Upsert).
	keys map[uint64]struct{}
	dups bool
	// FirstLoad says the table held no row of the page's target (or set)
	// and month before its task started (see Loader.Holds): then a batch
	// whose keys are new to the page is copied straight into the table,
	// with no staging and no upsert, unless a key is there after all.
	FirstLoad bool
	// direct counts the rows copied straight into the table.
	direct int64
	// ready is the first month of the partition the page found attached
	// (or made) for copying straight into it.
	ready time.Time
	// months holds the month of every row staged or copied: the upsert
	// names them to the planner as constants, so that it plans and locks
	// their partitions alone, never every partition of the table.
	months map[time.Time]struct{}
	// latest holds the newest month of each owner (target or set) among
	// the page's rows; for keyword metrics, owner 0 with latestKey, the
	// batch's context (keyword and country). See writeLatest.
	latest    map[int64]time.Time
	latestKey []any
}

// NewPage empties (creating it on first use) this connection's staging
// table of ep inside tx. The caller commits tx, so the rows can commit
// together with a checkpoint and the units spent.
//
// It also turns JIT compilation off for the rest of tx (SET LOCAL): the
// page's statements probe the fact table key by key, and for a page of
// 10,000 rows PostgreSQL's cost estimate passes jit_above_cost, so that
// each statement spent 15 to 20 ms compiling what then ran in 40.
func (l *Loader) NewPage(ctx context.Context, tx pgx.Tx, ep *catalog.Endpoint) (*Page, error) {
	for _, sql := range stageSQL(ep) {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return nil, fmt.Errorf("load %s: staging table: %w", ep.Table, err)
		}
	}
	return &Page{l: l, tx: tx, ep: ep, keys: map[uint64]struct{}{}, months: map[time.Time]struct{}{}, latest: map[int64]time.Time{}}, nil
}

// pageSeed seeds the hashes of Page.keys.
var pageSeed = maphash.MakeSeed()

// stageSQL creates the staging table with the fact table's columns spelled
// out (not LIKE, which would lock the fact table until commit), empties it
// and turns JIT off: three statements, sent one by one (Citus refuses
// several commands in one call).
func stageSQL(ep *catalog.Endpoint) []string {
	var cols []string
	for _, c := range Columns(ep) {
		cols = append(cols, pgx.Identifier{c.Name}.Sanitize()+" "+c.PGType)
	}
	cols = append(cols, "_ord bigint")
	if RowKey(ep) {
		// Computed once, as the rows are copied in, for every statement
		// that joins them to the fact table on its primary key.
		cols = append(cols, fmt.Sprintf("%s uuid GENERATED ALWAYS AS (%s) STORED", colRowKey, RowKeyExpr(ep)))
	}
	stage := pgx.Identifier{stageName(ep)}.Sanitize()
	return []string{
		fmt.Sprintf("CREATE TEMP TABLE IF NOT EXISTS %s (%s) ON COMMIT DELETE ROWS", stage, strings.Join(cols, ", ")),
		"TRUNCATE " + stage,
		"SET LOCAL jit = off",
	}
}

func stageName(ep *catalog.Endpoint) string { return "_stage_" + ep.Table }

// RecordReader is what Page.Copy reads: the records of one page, in
// order, then io.EOF.
type RecordReader interface {
	Next(ctx context.Context) (arrow.Record, error)
}

// Stage copies b's rows into the staging table, or on a first load
// (FirstLoad) straight into the fact table: Copy of one record.
func (p *Page) Stage(ctx context.Context, b Batch) error {
	b.Record.Retain() // Copy releases what it reads; the caller keeps its own
	return p.Copy(ctx, b, &oneRecord{rec: b.Record})
}

// oneRecord is a RecordReader of one record.
type oneRecord struct{ rec arrow.Record }

func (o *oneRecord) Next(context.Context) (arrow.Record, error) {
	rec := o.rec
	if rec == nil {
		return nil, io.EOF
	}
	o.rec = nil
	return rec, nil
}

// Copy copies every record r returns, each with b's constants, in one COPY
// into the staging table, or on a first load (FirstLoad) straight into the
// fact table. The records are read and encoded while COPY sends them, so
// that the client decodes a page (r's work) while the server writes what it
// was sent. Copy releases every record r returns.
//
// A first load copies into the fact table under a savepoint. When a key is there after all (an earlier page had it, or
// another loader stored it meanwhile: a unique violation), or comes twice
// in the page, it rolls back to the savepoint, leaves first loads off for
// the page, and stages the records instead: the upsert keeps the last row
// of each key.
func (p *Page) Copy(ctx context.Context, b Batch, r RecordReader) error {
	if b.Endpoint != p.ep {
		return fmt.Errorf("load %s: a batch of %s staged into its page", p.ep.Table, b.Endpoint.Name)
	}
	st := &copyStream{p: p, b: b, r: r, ord: p.rows}
	defer st.release()
	if p.FirstLoad && !p.dups && owner(p.ep) != "" && p.ep.MonthField == "" && p.ep.TargetField == "" {
		done, err := p.copyDirect(ctx, st)
		if err != nil || done {
			return err
		}
		st.replay()
	}
	cols := append(columnNames(Columns(p.ep)), "_ord")
	copied, err := copyRows(ctx, p.tx, stageName(p.ep), cols, st)
	if err != nil {
		return fmt.Errorf("load %s: copy: %w", p.ep.Table, err)
	}
	if copied != st.rows {
		return fmt.Errorf("load %s: copied %d rows of %d", p.ep.Table, copied, st.rows)
	}
	p.rows += st.rows
	return nil
}

// copyStream hands COPY the records of one Copy call as sources, noting
// each record's months and keys for the page as it first reads it, and
// keeps them so that a first load that fails can stage them again.
type copyStream struct {
	p     *Page
	b     Batch
	r     RecordReader
	ord   int64 // _ord of the next row
	rows  int64 // rows handed out
	noOrd bool  // sources without _ord: straight into the fact table
	// direct aborts the copy at a key the page already had (errRepeated),
	// and keeps the records read (kept) for replay.
	direct bool
	kept   []arrow.Record
	next   int          // the kept record to hand out next (after replay)
	cur    arrow.Record // outside a direct copy, the record read last: released at the next
	eof    bool         // r returned io.EOF
}

// errRepeated aborts a first load's copy at a key the page already had.
var errRepeated = errors.New("load: a key twice in the page")

// source returns the next non-empty record as a source; io.EOF after the
// last.
func (st *copyStream) source(ctx context.Context) (*source, error) {
	for {
		rec, fresh, err := st.read(ctx)
		if err != nil {
			return nil, err
		}
		if rec.NumRows() == 0 {
			continue
		}
		b := st.b
		b.Record = rec
		src, err := newSource(b, st.ord)
		if err != nil {
			return nil, err
		}
		src.noOrd = st.noOrd
		if fresh {
			if err := st.p.note(src); err != nil {
				return nil, err
			}
			if !st.p.dups {
				if st.p.dups, err = src.hashKeys(st.p.keys); err != nil {
					return nil, err
				}
				if st.p.dups && st.direct {
					return nil, errRepeated
				}
			}
		}
		st.ord += int64(src.n)
		st.rows += int64(src.n)
		return src, nil
	}
}

// read returns the next record, and whether it is read for the first
// time: a kept one (replay), else r's next, which a direct copy keeps and
// any other holds until the next is read.
func (st *copyStream) read(ctx context.Context) (arrow.Record, bool, error) {
	if st.next < len(st.kept) {
		st.next++
		return st.kept[st.next-1], false, nil
	}
	if st.eof {
		return nil, false, io.EOF
	}
	rec, err := st.r.Next(ctx)
	if err != nil {
		if errors.Is(err, io.EOF) {
			st.eof = true
		}
		return nil, false, err
	}
	if st.direct {
		st.kept = append(st.kept, rec)
		st.next++
		return rec, true, nil
	}
	if st.cur != nil {
		st.cur.Release() // the copy has sent every row of it
	}
	st.cur = rec
	return rec, true, nil
}

// replay hands out the kept records again, from the first: a failed first
// load stages them.
func (st *copyStream) replay() {
	st.next, st.ord, st.rows, st.noOrd, st.direct = 0, st.p.rows, 0, false, false
}

func (st *copyStream) release() {
	for _, rec := range st.kept {
		rec.Release()
	}
	st.kept = nil
	if st.cur != nil {
		st.cur.Release()
		st.cur = nil
	}
}

// note records the months and owners of src's rows (see Page.months and
// Page.latest). Rows of most endpoints share the batch's owner and month,
// which are then read once; the others (a month or a target per row) are
// small pages, read row by row.
func (p *Page) note(src *source) error {
	b := src.b
	if len(p.latestKey) == 0 && len(b.Context) > 0 {
		p.latestKey = b.Context
	}
	add := func(owner int64, m time.Time) {
		p.months[m] = struct{}{}
		if cur, ok := p.latest[owner]; !ok || m.After(cur) {
			p.latest[owner] = m
		}
	}
	if p.ep.MonthField == "" && p.ep.TargetField == "" {
		add(max(b.TargetID, b.SetID), MonthStart(b.Month))
		return nil
	}
	for i := range src.n {
		var id int64
		if src.owner != nil {
			o, err := src.owner(i)
			if err != nil {
				return err
			}
			id = o.(int64)
		}
		m, err := src.month(i)
		if err != nil {
			return err
		}
		add(id, m)
	}
	return nil
}

// copyDirect copies the stream straight into the fact table, its month's
// partition made first, under a savepoint: when a key is there after all
// (a unique violation) or comes twice (errRepeated), it rolls back to it,
// leaves first loads off for the page, and returns false, for the records
// to be staged.
//
// The copy names the partitioned table, not the month's partition: a
// partition detached by hand while the page ran then fails the copy
// rather than taking its rows out of the warehouse. Naming the partition
// would save the routing of each row, which measured within the noise (a
// binary COPY of 1,000,000 links: 8.8 to 10.7 s either way).
func (p *Page) copyDirect(ctx context.Context, st *copyStream) (bool, error) {
	lay := LayoutOf(p.ep)
	m, _ := lay.Span(st.b.Month)
	part := lay.PartitionName(p.ep.Table, m)
	attached := m.Equal(p.ready)
	if !attached {
		if err := p.tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass AND c.relname = $2)`, pgx.Identifier{p.ep.Table}.Sanitize(),
			part).Scan(&attached); err != nil {
			return false, fmt.Errorf("load %s: partition of %s: %w", p.ep.Table, m.Format("2006-01"), err)
		}
	}
	if !attached || !p.l.synced(p.ep, m) {
		if err := p.l.EnsurePartitions(ctx, p.ep, []time.Time{m}); err != nil {
			return false, err
		}
	}
	p.ready = m
	sp, err := p.tx.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("load %s: savepoint: %w", p.ep.Table, err)
	}
	st.noOrd, st.direct = true, true
	copied, err := copyRows(ctx, sp, p.ep.Table, columnNames(Columns(p.ep)), st)
	var pgErr *pgconn.PgError
	// check_violation "no partition of relation ... found for row": the
	// copy routed by a list of the table's partitions older than the
	// partition's attach, now and then under concurrent pages (seen in
	// TestAnalyticViews, 8 pages at once making a month's partitions).
	// Rolled back to the savepoint, which releases the copy's lock on the
	// table, the rows are staged and inserted by a statement that locks
	// it again, and reads its partitions afresh.
	stale := errors.As(err, &pgErr) && pgErr.Code == "23514" && strings.Contains(pgErr.Message, "no partition of relation")
	if errors.Is(err, errRepeated) || stale || errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		if rerr := sp.Rollback(ctx); rerr != nil {
			return false, fmt.Errorf("load %s: rolling back to the savepoint: %w", p.ep.Table, rerr)
		}
		p.FirstLoad = false
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("load %s: copy: %w", p.ep.Table, err)
	}
	if err := sp.Commit(ctx); err != nil {
		return false, fmt.Errorf("load %s: releasing the savepoint: %w", p.ep.Table, err)
	}
	if copied != st.rows {
		return false, fmt.Errorf("load %s: copied %d rows of %d", p.ep.Table, copied, st.rows)
	}
	p.direct += copied
	return true, nil
}

// Upsert creates the partitions the staged rows need and moves them into
// the fact table, then records the page's newest month of each owner
// (writeLatest). A page that is not a first load first reads which of its
// keys are new and which stored rows it changes (moveSQL.classify), then
// inserts the new and updates the changed, each only when there are any:
// a rerun that changes nothing ends after that read, having written and
// locked no row of the fact table. (INSERT ... ON CONFLICT DO UPDATE
// ... WHERE, the one statement it replaced, locks every conflicting row,
// which writes each row's heap page, and its WAL, even when the WHERE
// then leaves the row as it was.)
//
// Every statement on the fact table names the page's months as constants,
// so the planner prunes to their partitions at plan time: a page plans and
// locks the partitions of its own months (one, or two for a summary page
// across a new year), however many months the table holds.
func (p *Page) Upsert(ctx context.Context) (Result, error) {
	res, err := p.upsert(ctx)
	if err != nil {
		return Result{}, err
	}
	if err := p.writeLatest(ctx); err != nil {
		return Result{}, err
	}
	return res, nil
}

// upsert is Upsert up to writeLatest: it moves the staged rows into the
// fact table and counts what it did.
func (p *Page) upsert(ctx context.Context) (Result, error) {
	if p.rows == 0 {
		return Result{Rows: p.direct, Inserted: p.direct}, nil
	}
	if err := p.ensureStagedPartitions(ctx); err != nil {
		return Result{}, err
	}
	res := Result{Rows: p.rows + p.direct, Inserted: p.direct}
	sqls, citus, err := p.moveSQLs(ctx)
	if err != nil {
		return Result{}, err
	}
	// A first load without a key twice in the page inserts its rows
	// outright. Any other page first reads which of its keys are stored
	// and which stored rows it changes: a rerun that changes nothing ends
	// there, having written and locked nothing.
	fresh, changed := p.rows, make([]int64, len(sqls))
	if !p.FirstLoad || p.dups {
		if fresh, err = p.classify(ctx, sqls, citus, changed); err != nil {
			return Result{}, err
		}
	}
	var inserted int64
	if fresh > 0 {
		tag, err := p.tx.Exec(ctx, sqls[0].insert, simpleProtocol)
		if err != nil {
			return Result{}, fmt.Errorf("load %s: insert: %w", p.ep.Table, err)
		}
		inserted = tag.RowsAffected()
	}
	res.Inserted += inserted
	// Keys stored since they were counted (by another transaction, or by
	// an earlier page of a first load) are updated like the changed rows.
	if res.Updated, err = p.updateChanged(ctx, sqls, changed, inserted < fresh); err != nil {
		return Result{}, err
	}
	res.Unchanged = res.Rows - res.Inserted - res.Updated
	return res, nil
}

// simpleProtocol is how a page runs the statements that move its rows:
// their text names this page's months and owners, so a prepared
// statement would serve one page and crowd the connection's statement
// cache.
const simpleProtocol = pgx.QueryExecModeSimpleProtocol

// ensureStagedPartitions creates the partitions of the staged rows'
// months that are not attached yet. It asks every page rather than
// caching: a partition detached or dropped by a retention job must be
// noticed by a long-running scheduler.
func (p *Page) ensureStagedPartitions(ctx context.Context) error {
	lay := LayoutOf(p.ep)
	byName := map[string]time.Time{}
	for m := range p.months {
		byName[lay.PartitionName(p.ep.Table, m)] = m
	}
	rows, err := p.tx.Query(ctx, `
		SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass AND c.relname = ANY ($2)`,
		pgx.Identifier{p.ep.Table}.Sanitize(), slices.Collect(maps.Keys(byName)))
	if err != nil {
		return fmt.Errorf("load %s: partitions of the staged months: %w", p.ep.Table, err)
	}
	attached, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("load %s: partitions of the staged months: %w", p.ep.Table, err)
	}
	for _, name := range attached {
		if p.l.synced(p.ep, byName[name]) {
			delete(byName, name)
		}
	}
	return p.l.EnsurePartitions(ctx, p.ep, slices.Collect(maps.Values(byName)))
}

// moveSQLs returns the statements that move the page's rows, one set per
// owner of its rows, and whether the warehouse is on Citus.
func (p *Page) moveSQLs(ctx context.Context) ([]moveSQL, bool, error) {
	first, last := p.monthRange()
	owners, err := p.owners()
	if err != nil {
		return nil, false, err
	}
	citus, err := p.l.onCitus(ctx, p.tx)
	if err != nil {
		return nil, false, err
	}
	sqls := make([]moveSQL, len(owners))
	for i, o := range owners {
		sqls[i] = newMoveSQL(p.ep, p.dups, first, last, o, citus)
	}
	return sqls, citus, nil
}

// classify reads, owner by owner, which of the page's keys are stored and
// which stored rows the page changes: it returns how many staged rows are
// new and adds to changed[i] how many stored rows owner i's rows change.
func (p *Page) classify(ctx context.Context, sqls []moveSQL, citus bool, changed []int64) (int64, error) {
	if citus {
		// The page's statements that join the staged rows to the
		// fact table run as joins on the owner's shard (see
		// moveSQL): let the worker probe the table's primary key
		// per staged row there, as here, rather than read every
		// stored row of the owner's month for each page (a merge
		// join: 150 ms a page of 10,000 against 100,000 stored, 25
		// ms as a probe; the whole P1u of 200,000 links took 41 s).
		// For the rest of the page's transaction, on every node.
		for _, set := range citusProbe {
			if _, err := p.tx.Exec(ctx, set); err != nil {
				return 0, fmt.Errorf("load %s: %s: %w", p.ep.Table, set, err)
			}
		}
	}
	var fresh int64
	for i, sql := range sqls {
		f, c, err := p.classifyOwner(ctx, sql)
		if err != nil {
			return 0, err
		}
		fresh += f
		changed[i] += c
	}
	return fresh, nil
}

// classifyOwner runs one owner's statements of classify: it returns how
// many of the owner's staged rows are new and how many of its stored rows
// they change.
func (p *Page) classifyOwner(ctx context.Context, sql moveSQL) (fresh, changed int64, err error) {
	if sql.staged != "" {
		var n int64
		if err := p.tx.QueryRow(ctx, sql.staged, simpleProtocol).Scan(&n); err != nil {
			return 0, 0, fmt.Errorf("load %s: counting the staged rows: %w", p.ep.Table, err)
		}
		fresh += n // less those the join finds stored, below
	}
	rows, err := p.tx.Query(ctx, sql.classify, simpleProtocol)
	if err != nil {
		return 0, 0, fmt.Errorf("load %s: comparing the page with the table: %w", p.ep.Table, err)
	}
	var m *bool
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&m, &n}, func() error {
		switch {
		case m == nil:
			fresh += n
		case sql.staged != "":
			fresh -= n
		}
		if m != nil && *m {
			changed += n
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("load %s: comparing the page with the table: %w", p.ep.Table, err)
	}
	return fresh, changed, nil
}

// updateChanged runs the update of each owner whose rows change stored rows
// (changed[i]), or of every owner when raced (the insert inserted fewer
// rows than it counted new), and returns how many rows they updated. It
// indexes the staging table before the first.
func (p *Page) updateChanged(ctx context.Context, sqls []moveSQL, changed []int64, raced bool) (int64, error) {
	var updated int64
	indexed := false
	for i, sql := range sqls {
		if changed[i] == 0 && !raced {
			continue
		}
		if !indexed {
			if _, err := p.tx.Exec(ctx, sql.index); err != nil {
				return 0, fmt.Errorf("load %s: indexing the staging table: %w", p.ep.Table, err)
			}
			indexed = true
		}
		tag, err := p.tx.Exec(ctx, sql.update, simpleProtocol)
		if err != nil {
			return 0, fmt.Errorf("load %s: update: %w", p.ep.Table, err)
		}
		updated += tag.RowsAffected()
	}
	return updated, nil
}

// monthRange is the first and last month of the page's rows.
func (p *Page) monthRange() (first, last time.Time) {
	for m := range p.months {
		if first.IsZero() || m.Before(first) {
			first = m
		}
		if m.After(last) {
			last = m
		}
	}
	return first, last
}

// writeLatest records, in the page's transaction, the newest month of
// each owner of the page's rows in the table latest_months (keyword
// metrics: keyword_latest_months), unless a newer one is there: the
// *_latest views join it to the fact table, and so read the partition of
// each owner's latest month alone. A row already as new is only read,
// not locked, so reruns and older months (a backfill) write nothing there.
func (p *Page) writeLatest(ctx context.Context) error {
	if len(p.latest) == 0 {
		return nil
	}
	if owner(p.ep) == "" {
		var args []any
		var match []string
		cols := quoteAll(p.ep.Key)
		for i, k := range p.ep.Key {
			j := slices.IndexFunc(p.ep.Context, func(f catalog.Field) bool { return f.Name == k })
			if j < 0 || j >= len(p.latestKey) {
				return fmt.Errorf("load %s: the latest month is kept by context fields, and the key field %s is none", p.ep.Table, k)
			}
			args = append(args, p.latestKey[j])
			match = append(match, fmt.Sprintf("x.%s = $%d", cols[i], i+1))
		}
		args = append(args, p.latest[0])
		n := len(cols) + 1
		_, err := p.tx.Exec(ctx, fmt.Sprintf(`
			INSERT INTO %[1]s AS l (%[2]s, month) SELECT %[3]s
			WHERE NOT EXISTS (SELECT FROM %[1]s x WHERE %[4]s AND x.month >= $%[5]d)
			ON CONFLICT (%[2]s) DO UPDATE SET month = EXCLUDED.month WHERE l.month < EXCLUDED.month`,
			latestTable(p.ep), strings.Join(cols, ", "), placeholders(n), strings.Join(match, " AND "), n), args...)
		if err != nil {
			return fmt.Errorf("load %s: latest month: %w", p.ep.Table, err)
		}
		return nil
	}
	owners := slices.Sorted(maps.Keys(p.latest)) // one lock order for every page
	months := make([]time.Time, len(owners))
	for i, o := range owners {
		months[i] = p.latest[o]
	}
	_, err := p.tx.Exec(ctx, `
		INSERT INTO latest_months AS l (fact_table, owner_id, month)
		SELECT $1, v.owner_id, v.month FROM unnest($2::bigint[], $3::date[]) v (owner_id, month)
		WHERE NOT EXISTS (SELECT FROM latest_months x WHERE x.fact_table = $1 AND x.owner_id = v.owner_id AND x.month >= v.month)
		ORDER BY v.owner_id
		ON CONFLICT (fact_table, owner_id) DO UPDATE SET month = EXCLUDED.month WHERE l.month < EXCLUDED.month`,
		p.ep.Table, owners, months)
	if err != nil {
		return fmt.Errorf("load %s: latest month: %w", p.ep.Table, err)
	}
	return nil
}

func placeholders(n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("$%d", i+1)
	}
	return strings.Join(ps, ", ")
}

// Holds reports whether ep's table holds rows of owner (a target or set
// id) in month: if not, the pages of a task about them are first loads
// (Page.FirstLoad). The owner and month are constants of the statement,
// so it reads the month's partition alone.
func (l *Loader) Holds(ctx context.Context, ep *catalog.Endpoint, ownerID int64, month time.Time) (bool, error) {
	o := owner(ep)
	if o == "" {
		return true, nil
	}
	var holds bool
	err := l.cfg.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT FROM %s WHERE %s = %d AND month = %s)`,
		pgx.Identifier{ep.Table}.Sanitize(), pgx.Identifier{o}.Sanitize(), ownerID, dateLiteral(MonthStart(month))),
		pgx.QueryExecModeSimpleProtocol).Scan(&holds)
	if err != nil {
		return true, fmt.Errorf("load %s: rows of %d in %s: %w", ep.Table, ownerID, month.Format("2006-01"), err)
	}
	return holds, nil
}

// dateLiteral is m as an SQL date constant.
func dateLiteral(m time.Time) string { return "DATE '" + m.Format(time.DateOnly) + "'" }

// moveSQL holds the statements that move a page's staged rows into the
// fact table (Page.upsert): the last row of each key wins within the page,
// and a stored row is rewritten only when a value changed (so reruns write
// nothing) and the new observation is not older than the stored one (so a
// late commit of an older fetch never overwrites a newer one).
//
// The statements that read the fact table are made for one owner of the
// page's rows (a target, a set, or a keyword and country), and name it as
// a constant, as they name the page's months: the months prune the fact
// table to their partitions when it is planned, and the owner, its
// distribution column under Citus, makes the statement a router query of
// one shard there (here, one range of the primary key). They join the
// staged rows to the fact table on its primary key (ConflictKey: the
// staging table computes row_key as the table does, once, when the rows
// are copied). None joins the fact table by an outer join from the
// staging table, a local table under Citus, which Citus refuses ("cannot
// perform a lateral outer join when a distributed subquery references
// complex subqueries, CTEs or local tables").
type moveSQL struct {
	// classify counts the owner's staged keys by what the table holds of
	// them: m NULL (not stored), false (stored as staged) or true (a
	// stored row the page would rewrite); a read, which locks no row. Each
	// staged row probes the table by its primary key once (a scalar
	// subquery, run for each row with the row's key, grouped on so that it
	// runs once): whatever the planner guesses of the staging table, never
	// analyzed, and of a month's partition not analyzed yet, where naming
	// the owner makes it guess a row or two, the plan is an index probe
	// per staged row (as a join, it scanned the staging table once for
	// every stored row: minutes for a page of 10,000). On Citus, which
	// refuses that subquery, it is an inner join of the staged rows with
	// the owner's stored rows, which gives m false or true only, and the
	// keys not stored are those staged (staged) less those it counts: an
	// inner join, as Citus sends the staged rows to the owner's shard and
	// joins them there, where an outer join made it bring every stored row
	// of the owner's month to the coordinator (5 MB for 100,000 links, each
	// page). (Here, a join cannot be made to probe: the planner rescans the
	// owner's rows for each staged row when it guesses them few, even with
	// every other kind of join turned off; on a worker it knows the
	// partition, and citusProbe leaves it the probe.)
	classify string
	// staged counts the owner's staged keys (Citus alone; see classify).
	staged string
	// index indexes the staging table on the primary key, before the
	// first update of the connection's pages (then kept for its later
	// pages): where the planner guesses that the owner has a row or two
	// in the month's partition, the update reads each stored row of the
	// owner's month and probes the staged rows by it, rather than scanning
	// the staging table for each.
	index string
	// insert adds the rows whose key is not stored; ON CONFLICT DO
	// NOTHING, so a key another transaction stored meanwhile is left to
	// update. It reads the staging table alone, every owner's rows: each
	// row goes to its own owner's partition (under Citus, its shard). On
	// Citus it returns a column, so that the command tag counts the rows
	// inserted: without RETURNING, an INSERT ... SELECT that Citus pulls
	// to the coordinator counts every row it sent (seen on 13.2.2).
	insert string
	// update rewrites the owner's stored rows that differ (see above), and
	// only those: a row that does not change is not locked.
	update string
}

// pageOwner is one owner of a page's rows: the columns that name it and
// their values as SQL constants.
type pageOwner struct {
	cols, vals []string
}

// cond is the condition that rel's rows are the owner's.
func (o pageOwner) cond(rel string) string {
	conds := make([]string, len(o.cols))
	for i, c := range o.cols {
		conds[i] = fmt.Sprintf("%s.%s = %s", rel, pgx.Identifier{c}.Sanitize(), o.vals[i])
	}
	return strings.Join(conds, " AND ")
}

// newMoveSQL returns the statements of ep's pages whose rows' months lie
// from first to last, for the rows of owner. Only a page that may hold a
// key twice (dedupe) is sorted to keep the last row of each key; citus
// gives the shapes a Citus coordinator runs (see moveSQL).
func newMoveSQL(ep *catalog.Endpoint, dedupe bool, first, last time.Time, owner pageOwner, citus bool) moveSQL {
	table := pgx.Identifier{ep.Table}.Sanitize()
	all := strings.Join(quoteAll(columnNames(Columns(ep))), ", ")
	conflict := quoteAll(ConflictKey(ep))
	var set, stored, staged, on []string
	for _, c := range Columns(ep) {
		if isKey(ep, c.Name) {
			continue
		}
		q := pgx.Identifier{c.Name}.Sanitize()
		set = append(set, fmt.Sprintf("%s = s.%s", q, q))
		if c.Name != colObservedAt {
			stored = append(stored, "t."+q)
			staged = append(staged, "s."+q)
		}
	}
	for _, k := range conflict {
		on = append(on, fmt.Sprintf("t.%s = s.%s", k, k))
	}
	join := strings.Join(on, " AND ") +
		fmt.Sprintf(" AND t.month BETWEEN %s AND %s AND %s", dateLiteral(first), dateLiteral(last), owner.cond("t"))
	differs := fmt.Sprintf("(%s) IS DISTINCT FROM (%s) AND s.observed_at >= t.observed_at",
		strings.Join(stored, ", "), strings.Join(staged, ", "))
	src := pgx.Identifier{stageName(ep)}.Sanitize()
	if dedupe {
		keys := strings.Join(conflict, ", ")
		src = fmt.Sprintf("(SELECT DISTINCT ON (%s) * FROM %s ORDER BY %s, _ord DESC)", keys, src, keys)
	}
	sql := moveSQL{
		// m: NULL where the key is not stored, else whether the page
		// changes the stored row (never NULL: observed_at is NOT NULL).
		classify: fmt.Sprintf(`SELECT m, count(*) FROM (SELECT (SELECT %[1]s FROM %[2]s t WHERE %[3]s) AS m FROM %[4]s s WHERE %[5]s) c GROUP BY m`,
			differs, table, join, src, owner.cond("s")),
		index: fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s (%s)`, pgx.Identifier{stageName(ep) + "_key"}.Sanitize(),
			pgx.Identifier{stageName(ep)}.Sanitize(), strings.Join(conflict, ", ")),
		insert: fmt.Sprintf(`INSERT INTO %[1]s (%[2]s) SELECT %[2]s FROM %[3]s s ON CONFLICT DO NOTHING`, table, all, src),
		update: fmt.Sprintf(`UPDATE %[1]s t SET %[2]s FROM %[3]s s WHERE %[4]s AND %[5]s`,
			table, strings.Join(set, ", "), src, join, differs),
	}
	if citus {
		sql.staged = fmt.Sprintf(`SELECT count(*) FROM %s s WHERE %s`, src, owner.cond("s"))
		sql.classify = fmt.Sprintf(`SELECT %[1]s AS m, count(*) FROM %[4]s s JOIN %[2]s t ON %[3]s WHERE %[5]s GROUP BY m`,
			differs, table, join, src, owner.cond("s"))
		sql.insert += " RETURNING NULL"
	}
	return sql
}

// owners returns the owners of the page's rows, in one order for every
// page (so that pages lock rows in one order): the one target or set of
// most pages, each target of a page whose rows each name theirs
// (comparison), or for keyword metrics the keyword and country of the
// page.
func (p *Page) owners() ([]pageOwner, error) {
	if o := owner(p.ep); o != "" {
		ids := slices.Sorted(maps.Keys(p.latest))
		if len(ids) == 0 {
			return nil, fmt.Errorf("load %s: a page of no %s", p.ep.Table, o)
		}
		owners := make([]pageOwner, len(ids))
		for i, id := range ids {
			owners[i] = pageOwner{cols: []string{o}, vals: []string{strconv.FormatInt(id, 10)}}
		}
		return owners, nil
	}
	var own pageOwner
	for _, k := range p.ep.Key {
		j := slices.IndexFunc(p.ep.Context, func(f catalog.Field) bool { return f.Name == k })
		if j < 0 || j >= len(p.latestKey) {
			return nil, fmt.Errorf("load %s: the owner of a page is named by context fields, and the key field %s is none", p.ep.Table, k)
		}
		v, ok := p.latestKey[j].(string)
		if !ok {
			return nil, fmt.Errorf("load %s: the key field %s is %T, not text", p.ep.Table, k, p.latestKey[j])
		}
		own.cols, own.vals = append(own.cols, k), append(own.vals, textLiteral(v))
	}
	return []pageOwner{own}, nil
}

// textLiteral quotes s as an SQL string constant, right whatever
// standard_conforming_strings says: an escape string (E'...') with its
// backslashes and quotes doubled.
func textLiteral(s string) string {
	return "E'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

// EnsurePartitions creates the partitions of ep's table that hold months
// (see LayoutOf), unless they are attached already. It works on a
// connection of its own (from Config.Partitions, or a new one), never one
// of Pool: a page transaction waiting for its partitions holds a pool
// connection, and with every connection so held a pool-based creation
// would wait forever. Creation runs under a
// lock per table (lockPartitions), so concurrent loaders (in this process
// or others) never race on the catalog.
func (l *Loader) EnsurePartitions(ctx context.Context, ep *catalog.Endpoint, months []time.Time) error {
	lay := LayoutOf(ep)
	var spans []time.Time
	for _, m := range months {
		from, _ := lay.Span(m)
		if !slices.ContainsFunc(spans, from.Equal) {
			spans = append(spans, from)
		}
	}
	if len(spans) == 0 {
		return nil
	}
	slices.SortFunc(spans, time.Time.Compare)
	var conn *pgx.Conn
	if l.cfg.Partitions != nil {
		c, err := l.cfg.Partitions.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("load %s: connecting to create partitions: %w", ep.Table, err)
		}
		defer c.Release()
		conn = c.Conn()
	} else {
		c, err := pgx.ConnectConfig(ctx, l.cfg.Pool.Config().ConnConfig.Copy())
		if err != nil {
			return fmt.Errorf("load %s: connecting to create partitions: %w", ep.Table, err)
		}
		defer c.Close(context.WithoutCancel(ctx))
		conn = c
	}
	for _, m := range spans {
		if err := l.createPartition(ctx, conn, ep, lay, m); err != nil {
			return err
		}
		l.seen.Store(seenKey(ep, m), true)
	}
	return nil
}

func (l *Loader) createPartition(ctx context.Context, conn *pgx.Conn, ep *catalog.Endpoint, lay Layout, m time.Time) error {
	name := lay.PartitionName(ep.Table, m)
	from, to := lay.Span(m)
	bounds := fmt.Sprintf("FOR VALUES FROM ('%s') TO ('%s')", from.Format(time.DateOnly), to.Format(time.DateOnly))
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := lockPartitions(ctx, tx, ep.Table); err != nil {
			return fmt.Errorf("load %s: partition lock: %w", ep.Table, err)
		}
		var exists, attached bool
		if err := tx.QueryRow(ctx, `
			SELECT to_regclass($1) IS NOT NULL,
			       EXISTS (SELECT FROM pg_inherits WHERE inhrelid = to_regclass($1) AND inhparent = $2::regclass)`,
			pgx.Identifier{name}.Sanitize(), pgx.Identifier{ep.Table}.Sanitize()).Scan(&exists, &attached); err != nil {
			return fmt.Errorf("load %s: looking up partition %s: %w", ep.Table, name, err)
		}
		if attached {
			return nil
		}
		if exists {
			return fmt.Errorf("load %s: the table %s exists but is not a partition of %s (detached by a retention job?); "+
				"attach it again (ALTER TABLE %s ATTACH PARTITION %s %s) or drop it",
				ep.Table, name, ep.Table, ep.Table, name, bounds)
		}
		// Made apart, then attached: CREATE TABLE ... PARTITION OF locks
		// the parent ACCESS EXCLUSIVE, so it waits for every open
		// transaction that read the table (an analyst's report left open
		// blocks it, and the runs behind it, for as long as it stays
		// open) and queues every later reader behind it. ATTACH PARTITION
		// takes SHARE UPDATE EXCLUSIVE, which readers and loads do not
		// conflict with.
		qname, parent := pgx.Identifier{name}.Sanitize(), pgx.Identifier{ep.Table}.Sanitize()
		what := from.Format("2006-01")
		if lay.Months == 12 {
			what = from.Format("2006")
		}
		// One statement per call: Citus refuses several in one.
		for _, ddl := range []string{
			fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS)`, qname, parent),
			fmt.Sprintf(`COMMENT ON TABLE %s IS %s`, qname, literal(fmt.Sprintf("Rows of %s for %s.", ep.Table, what))),
			fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s %s`, parent, qname, bounds),
		} {
			if _, err := tx.Exec(ctx, ddl); err != nil {
				return fmt.Errorf("load %s: creating partition %s: %w", ep.Table, name, err)
			}
		}
		l.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "partition created",
			slog.String("table", ep.Table), slog.String("partition", name))
		return nil
	})
}

// lockPartitions takes, until tx ends, the lock under which the month
// partitions of table are made and retired: SHARE UPDATE EXCLUSIVE on the
// table, which conflicts with itself (two loaders never race on the
// catalog, nor a loader with retention) and not with reads or loads. It
// is not an advisory lock, which any role that can connect may take (an
// analyst holding the key would stall every run at its first page of a
// new month): this mode needs UPDATE, DELETE or TRUNCATE on the table,
// which etl_analyst has not.
func lockPartitions(ctx context.Context, tx pgx.Tx, table string) error {
	_, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{table}.Sanitize()+" IN SHARE UPDATE EXCLUSIVE MODE")
	return err
}

// source is one record with the batch's constants: what COPY sends of it
// (copyEncoder), and its rows' owners, months and keys.
type source struct {
	b     Batch
	owner func(i int) (any, error) // target_id or set_id; nil when the table has neither
	month func(i int) (time.Time, error)
	// key writes row i's key fields to a hash (see hashKeys).
	key   []func(h *maphash.Hash, i int)
	n     int
	ord   int64 // _ord of the first row: rows of one page are ordered across batches
	noOrd bool  // leave _ord out (a copy straight into the fact table)
}

func newSource(b Batch, ord int64) (*source, error) {
	ep := b.Endpoint
	if len(b.Context) != len(ep.Context) {
		return nil, fmt.Errorf("load %s: %d context values for %d context columns", ep.Table, len(b.Context), len(ep.Context))
	}
	s := &source{b: b, n: int(b.Record.NumRows()), ord: ord}
	byName := map[string]arrow.Array{}
	for i, f := range b.Record.Schema().Fields() {
		byName[f.Name] = b.Record.Column(i)
	}
	for _, k := range ep.Key {
		col, ok := byName[k]
		if !ok {
			s.key = append(s.key, func(h *maphash.Hash, _ int) { h.WriteByte(0) })
			continue
		}
		s.key = append(s.key, keyWriter(col))
	}
	switch owner(ep) {
	case colTargetID:
		id := any(b.TargetID) // boxed once, not per row
		s.owner = func(int) (any, error) { return id, nil }
		if ep.TargetField != "" {
			col, ok := byName[ep.TargetField].(*array.String)
			if !ok {
				return nil, fmt.Errorf("load %s: target field %s is missing or not text", ep.Table, ep.TargetField)
			}
			s.owner = func(i int) (any, error) {
				v := col.Value(i)
				id, ok := b.Targets[v]
				if !ok || col.IsNull(i) {
					return nil, fmt.Errorf("load %s: a row's %s %q is none of the request's targets", ep.Table, ep.TargetField, v)
				}
				return id, nil
			}
		}
	case colSetID:
		id := any(b.SetID)
		s.owner = func(int) (any, error) { return id, nil }
	}
	m := MonthStart(b.Month)
	s.month = func(int) (time.Time, error) { return m, nil }
	if ep.MonthField != "" {
		col, ok := byName[ep.MonthField].(*array.Date32)
		if !ok {
			return nil, fmt.Errorf("load %s: month field %s is missing or not a date", ep.Table, ep.MonthField)
		}
		s.month = func(i int) (time.Time, error) {
			if col.IsNull(i) {
				return time.Time{}, fmt.Errorf("load %s: row %d has no %s", ep.Table, i, ep.MonthField)
			}
			return MonthStart(col.Value(i).ToTime()), nil
		}
	}
	return s, nil
}

// hashKeys adds a hash of the natural key of every row of the batch to
// seen, and reports whether one was there already: two rows of the page
// may then share a key (or merely a hash).
func (s *source) hashKeys(seen map[uint64]struct{}) (bool, error) {
	var h maphash.Hash
	h.SetSeed(pageSeed)
	var buf [8]byte
	dup := false
	for i := range s.n {
		h.Reset()
		if s.owner != nil {
			id, err := s.owner(i)
			if err != nil {
				return false, err
			}
			binary.LittleEndian.PutUint64(buf[:], uint64(id.(int64)))
			h.Write(buf[:])
		}
		m, err := s.month(i)
		if err != nil {
			return false, err
		}
		binary.LittleEndian.PutUint64(buf[:], uint64(m.Unix()))
		h.Write(buf[:])
		for _, w := range s.key {
			w(&h, i)
		}
		k := h.Sum64()
		if _, ok := seen[k]; ok {
			dup = true
		}
		seen[k] = struct{}{}
	}
	return dup, nil
}

// keyWriter writes row i of col to a hash, with a byte that tells null
// from a value and ends a string.
func keyWriter(col arrow.Array) func(h *maphash.Hash, i int) {
	null := func(h *maphash.Hash, i int) bool {
		if col.IsNull(i) {
			h.WriteByte(0)
			return true
		}
		h.WriteByte(1)
		return false
	}
	switch c := col.(type) {
	case *array.String:
		return func(h *maphash.Hash, i int) {
			if !null(h, i) {
				h.WriteString(c.Value(i))
				h.WriteByte(0x1f)
			}
		}
	case *array.Int64:
		return func(h *maphash.Hash, i int) {
			if !null(h, i) {
				var b [8]byte
				binary.LittleEndian.PutUint64(b[:], uint64(c.Value(i)))
				h.Write(b[:])
			}
		}
	}
	// Any other type: its text, which is slower but exact.
	return func(h *maphash.Hash, i int) {
		if !null(h, i) {
			h.WriteString(col.ValueStr(i))
			h.WriteByte(0x1f)
		}
	}
}

// getter returns a function reading row i of col as a value pgx encodes
// (copyEncoder's way for the types it does not write itself).
func getter(col arrow.Array) (func(i int) any, error) {
	switch c := col.(type) {
	case *array.Int64:
		return nullable(c, c.Value), nil
	case *array.Int16:
		return nullable(c, c.Value), nil
	case *array.Binary:
		return nullable(c, c.Value), nil
	case *array.Float64:
		return nullable(c, c.Value), nil
	case *array.String:
		return nullable(c, c.Value), nil
	case *array.Boolean:
		return nullable(c, c.Value), nil
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		return nullable(c, func(i int) time.Time { return c.Value(i).ToTime(unit) }), nil
	case *array.Date32:
		return nullable(c, func(i int) time.Time { return c.Value(i).ToTime() }), nil
	case *array.List:
		offsets := c.Offsets()
		switch v := c.ListValues().(type) {
		case *array.String:
			return nullable(c, func(i int) []string {
				out := make([]string, 0, offsets[i+1]-offsets[i])
				for j := offsets[i]; j < offsets[i+1]; j++ {
					out = append(out, v.Value(int(j)))
				}
				return out
			}), nil
		case *array.Int64:
			return nullable(c, func(i int) []int64 {
				return append([]int64(nil), v.Int64Values()[offsets[i]:offsets[i+1]]...)
			}), nil
		}
		return nil, fmt.Errorf("unsupported list of %s", c.DataType().(*arrow.ListType).Elem())
	}
	return nil, fmt.Errorf("unsupported Arrow type %s", col.DataType())
}

// nullable reads row i with value, or nil (SQL NULL) where col is null.
func nullable[T any](col arrow.Array, value func(i int) T) func(i int) any {
	return func(i int) any {
		if col.IsNull(i) {
			return nil
		}
		return value(i)
	}
}
