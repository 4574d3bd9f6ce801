package budget

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/plain"
)

// Caps bound the units spent; 0 means no cap. Days and months are UTC.
type Caps struct {
	// PerRun caps one run of a job.
	PerRun int64
	// JobMonthly caps a job in a calendar month.
	JobMonthly int64
	// Daily and Monthly cap the whole installation (every job) in a day
	// and in a calendar month.
	Daily   int64
	Monthly int64
}

// Ledger keeps the unit ledger and the usage counters in PostgreSQL. It is
// safe for concurrent use, and several processes may share one database.
//
// It also keeps, in memory, its own reservations in flight (reserved and
// not yet finished: see Finish), so that a request that does not fit
// while they are in flight waits for them rather than give up.
type Ledger struct {
	pool *pgxpool.Pool
	now  func() time.Time

	mu sync.Mutex
	// held are the reservations in flight by claim; inflight sums their
	// units per budget_usage key.
	held     map[Claim]Reservation
	inflight map[string]int64
	// finished is closed, and replaced, whenever a reservation finishes:
	// it wakes the Reserves waiting for room.
	finished chan struct{}
	// waiting, when set (by tests), is called each time Reserve starts to
	// wait.
	waiting func()
}

// New returns a Ledger over pool; now is the clock that says which day and
// month a request counts in (default time.Now).
func New(pool *pgxpool.Pool, now func() time.Time) *Ledger {
	if now == nil {
		now = time.Now
	}
	return &Ledger{pool: pool, now: now, held: map[Claim]Reservation{}, inflight: map[string]int64{},
		finished: make(chan struct{})}
}

// Account is what a run spends against: its id, its job and the caps.
type Account struct {
	RunID int64
	// Window is the run's per_run cap window: 1 for a new run, one more
	// each time a run that a cap, the API's 403 or failed tasks stopped is
	// continued (runs.cap_window), so each continuation may spend per_run
	// anew. A run resumed after a crash or an interrupt keeps its window.
	// 0 counts as 1.
	Window int
	Job    string
	Caps   Caps
}

// Ask is one request to reserve units for.
type Ask struct {
	Endpoint *catalog.Endpoint
	// Target says what the request is about, for the ledger.
	Target string
	// Lines is the most lines the request may return: its limit, or the
	// endpoint's bound where it takes none. Ignored for per-request prices.
	Lines int
	// Shrink allows a per-line request to be cut to the lines the budget
	// affords (the caller then sends that limit); without it, the whole
	// worst case must fit.
	Shrink bool
}

// Reservation is units set aside for one request. Once the request is
// over, pass it to Ledger.Finish.
type Reservation struct {
	// ID is the ledger row's ledger_id, for people: the row is found by
	// its Claim (a failover that lost commits hands ledger_ids out again).
	ID int64
	// Claim is the row's unit_ledger.claim.
	Claim Claim
	// Lines is the most lines the request may now return: Ask.Lines, or
	// fewer when the budget could not afford them all.
	Lines int
	// Units is the reserved worst case.
	Units int64
	keys  []string
	// row is what the ledger row says besides its units, to book it
	// again (Rebook).
	row ledgerRow
}

// ledgerRow is what a reservation's row of unit_ledger records of it.
type ledgerRow struct {
	runID                 int64
	job, endpoint, target string
	at                    time.Time
}

// Claim is the random id of a reservation's ledger row (unit_ledger.claim):
// the process that reserved it finds its own row by it, also after a
// failover that lost commits and handed the row's ledger_id to another.
type Claim [16]byte

// newClaim returns a random (version 4) UUID.
func newClaim() Claim {
	var c Claim
	_, _ = rand.Read(c[:]) // never fails (crypto/rand)
	c[6] = c[6]&0x0f | 0x40
	c[8] = c[8]&0x3f | 0x80
	return c
}

// ErrLost matches the error of settling a reservation whose ledger row
// the database no longer has: a failover lost the commit that booked it.
// The API may have charged it: book it again (Rebook), then settle.
var ErrLost = errors.New("the ledger row is lost")

// ExhaustedError says a cap cannot pay for the next request.
type ExhaustedError struct {
	Cap         string // "per_run", "job monthly", "daily" or "monthly"
	Limit, Used int64
	// Need is the units the smallest request the caller accepts would
	// cost: one line of a per-line request that may shrink, else the
	// whole worst case (Lines lines of Price, or the per-request price).
	Need int64
	// Endpoint and Target say what the request was for; Lines is how
	// many lines its worst case counts (0 for a per-request price), and
	// Shrink whether it could have been cut to fewer.
	Endpoint, Target string
	Price            catalog.Price
	Lines            int
	Shrink           bool
}

func (e *ExhaustedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "budget exhausted: the %s cap of %d units has %d left", e.Cap, e.Limit, max(e.Limit-e.Used, 0))
	what := "the next request"
	if e.Endpoint != "" {
		what = "the next request (" + e.Endpoint
		if e.Target != "" {
			what += " " + plain.Text(e.Target, 0)
		}
		what += ")"
	}
	each := fmt.Sprintf("%d units each", e.Price.Units)
	if e.Price.Units == 1 {
		each = "1 unit each"
	}
	switch {
	case e.Price.Per == catalog.PerLine && e.Shrink:
		fmt.Fprintf(&b, ", and %s costs at least %d (one line, at %s)", what, e.Need, each)
	case e.Price.Per == catalog.PerLine && e.Lines == 1:
		fmt.Fprintf(&b, ", and %s costs %d (one line, at %s)", what, e.Need, each)
	case e.Price.Per == catalog.PerLine && e.Lines > 0:
		fmt.Fprintf(&b, ", and %s may cost %d (up to %d lines at %s; it cannot be cut to fewer lines)", what, e.Need, e.Lines, each)
	default:
		fmt.Fprintf(&b, ", and %s costs %d", what, e.Need)
	}
	return b.String()
}

// ErrExhausted matches every *ExhaustedError with errors.Is.
var ErrExhausted = errors.New("budget exhausted")

// Is makes errors.Is(err, ErrExhausted) true.
func (e *ExhaustedError) Is(target error) bool { return target == ErrExhausted }

// Scope is one counter a request counts in (a key of budget_usage), with
// its cap (0: none).
type Scope struct {
	// Name is the cap's name: "daily", "job monthly", "monthly", "per_run".
	Name string
	// Key is the counter's key in budget_usage.
	Key string
	Cap int64
}

// Scopes returns the counters a request of account a made at time at
// counts in, in key order (the order their locks are taken in, so two
// transactions never wait for each other in a cycle).
func Scopes(a Account, at time.Time) []Scope {
	at = at.UTC()
	s := []Scope{
		{"daily", "day:" + at.Format(time.DateOnly), a.Caps.Daily},
		{"job monthly", "job:" + a.Job + ":" + at.Format("2006-01"), a.Caps.JobMonthly},
		{"monthly", "month:" + at.Format("2006-01"), a.Caps.Monthly},
		{"per_run", runKey(a.RunID, a.Window), a.Caps.PerRun},
	}
	slices.SortFunc(s, func(x, y Scope) int { return strings.Compare(x.Key, y.Key) })
	return s
}

// runKey is the per_run counter of a run's cap window: "run:12" for its
// first window (as before windows existed), "run:12/2" for the second.
func runKey(id int64, window int) string {
	k := "run:" + strconv.FormatInt(id, 10)
	if window > 1 {
		k += "/" + strconv.Itoa(window)
	}
	return k
}

// Used reads the counters of keys; a key never counted in is 0.
func (l *Ledger) Used(ctx context.Context, keys []string) (map[string]int64, error) {
	rows, err := l.pool.Query(ctx, `SELECT key, used FROM budget_usage WHERE key = ANY($1)`, keys)
	if err != nil {
		return nil, fmt.Errorf("budget: reading usage: %w", err)
	}
	used := map[string]int64{}
	var key string
	var u int64
	if _, err := pgx.ForEachRow(rows, []any{&key, &u}, func() error { used[key] = u; return nil }); err != nil {
		return nil, fmt.Errorf("budget: reading usage: %w", err)
	}
	return used, nil
}

// Reserve sets aside the worst case of one request, in a transaction of its
// own that locks the counters of every scope the request counts in.
//
// When a cap cannot pay it now, but could once the reservations of this
// Ledger in flight in that scope settled (even at 0), Reserve waits for
// one of them to finish (Finish) and tries again: bigger pages, fewer
// requests. Once none of its own is in flight there, it shrinks a
// per-line request (Ask.Shrink) to the lines the tightest cap affords, or
// returns an *ExhaustedError and reserves nothing. It gives up at once
// when the settled spend leaves no room for the smallest acceptable
// request: one line of a request that may shrink, else its worst case.
// Reservations of other processes (other Ledgers), and those a crashed
// process left unsettled, count as spent: Reserve never waits for them.
//
// A wait ends with ctx: Reserve then returns an error wrapping ctx.Err()
// and reserves nothing.
func (l *Ledger) Reserve(ctx context.Context, a Account, ask Ask) (Reservation, error) {
	for {
		res, wake, err := l.reserve(ctx, a, ask)
		if err != nil || wake == nil {
			return res, err
		}
		if l.waiting != nil {
			l.waiting()
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return Reservation{}, fmt.Errorf("budget: waiting for room to reserve %s for %s: %w", ask.Endpoint.Name, plain.Text(ask.Target, 0), ctx.Err())
		}
	}
}

// reserve is one try of Reserve. It returns a channel to wait on instead
// of a reservation when the request should wait for this Ledger's own
// reservations in flight: it is closed when one of them finishes.
func (l *Ledger) reserve(ctx context.Context, a Account, ask Ask) (Reservation, <-chan struct{}, error) {
	r := newRequest(a, ask, l.now())
	var res Reservation
	var wake <-chan struct{}
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) (err error) {
		wake, err = l.reserveIn(ctx, tx, a, r, &res)
		return err
	})
	if err != nil {
		l.Finish(res)
		var ex *ExhaustedError
		if errors.As(err, &ex) {
			return Reservation{}, nil, ex
		}
		return Reservation{}, nil, fmt.Errorf("budget: reserving %s for %s: %w", ask.Endpoint.Name, plain.Text(ask.Target, 0), err)
	}
	return res, wake, nil
}

// request is one try of Reserve: what it asks, when, the counters it
// counts in (scopes, and their keys), the endpoint's price, the lines
// its worst case counts (0 for a per-request price), that worst case and
// need, the smallest acceptable request: one line of a per-line request
// that may shrink, else the worst case.
type request struct {
	ask         Ask
	at          time.Time
	scopes      []Scope
	keys        []string
	price       catalog.Price
	lines       int
	worst, need int64
}

// newRequest returns the request of ask of account a at time at.
func newRequest(a Account, ask Ask, at time.Time) request {
	r := request{ask: ask, at: at, scopes: Scopes(a, at), price: ask.Endpoint.Price, lines: ask.Lines}
	if r.price.Per != catalog.PerLine {
		r.lines = 0
	}
	r.worst = r.price.Worst(r.lines)
	r.need = r.worst
	if r.price.Per == catalog.PerLine && ask.Shrink {
		r.need = min(r.price.Units, r.worst)
	}
	r.keys = make([]string, len(r.scopes))
	for i, s := range r.scopes {
		r.keys[i] = s.Key
	}
	return r
}

// exhausted is the error of cap s, whose counter holds used, that cannot
// pay r.
func (r request) exhausted(s Scope, used int64) *ExhaustedError {
	return &ExhaustedError{Cap: s.Name, Limit: s.Cap, Used: used, Need: r.need,
		Endpoint: r.ask.Endpoint.Name, Target: r.ask.Target, Price: r.price, Lines: r.lines,
		Shrink: r.ask.Shrink && r.price.Per == catalog.PerLine}
}

// reserveIn is the transaction of one try of Reserve: it locks r's
// counters and, when the caps afford r (or r cut to fewer lines),
// writes its reservation into res and holds it. When r should wait for
// reservations of this Ledger in flight instead, it returns the channel
// closed when one of them finishes.
func (l *Ledger) reserveIn(ctx context.Context, tx pgx.Tx, a Account, r request, res *Reservation) (<-chan struct{}, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO budget_usage (key) SELECT k FROM unnest($1::text[]) k ORDER BY k ON CONFLICT DO NOTHING`, r.keys); err != nil {
		return nil, err
	}
	used, err := lockCounters(ctx, tx, r.keys)
	if err != nil {
		return nil, err
	}
	// Read under the counters' locks: every reservation of this Ledger
	// that the counters hold is in inflight (it is added before its
	// transaction commits), so used - own never counts one of ours in
	// flight as spent, and Reserve never gives up for want of room
	// that they may free. (It counts too little while one that has
	// settled awaits its Finish: then Reserve waits, and that Finish
	// wakes it.)
	own, finished := l.ownInflight(r.scopes)
	tight, left, wait, err := r.fit(used, own)
	if err != nil {
		return nil, err
	}
	if wait {
		return finished, nil
	}
	lines, ok := Afford(r.price, r.lines, r.ask.Shrink, left)
	if !ok {
		return nil, r.exhausted(*tight, used[tight.Key])
	}
	return nil, l.record(ctx, tx, a, r, lines, res)
}

// ownInflight returns the units of this Ledger's reservations in flight
// in each of scopes, and the channel closed when one of them finishes.
func (l *Ledger) ownInflight(scopes []Scope) ([]int64, <-chan struct{}) {
	own := make([]int64, len(scopes))
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range scopes {
		own[i] = l.inflight[s.Key]
	}
	return own, l.finished
}

// fit weighs r against its caps, whose counters hold used, of which own
// are this Ledger's reservations in flight. The tightest cap decides how
// far to shrink: fit returns it and the room it leaves (-1 and nil when
// no cap is set). A cap the worst case does not fit binds: fit returns
// an *ExhaustedError when even its settled spend leaves no room, and
// wait while requests of ours are in flight in it.
func (r request) fit(used map[string]int64, own []int64) (tight *Scope, left int64, wait bool, err error) {
	left = -1
	for i, s := range r.scopes {
		if s.Cap <= 0 {
			continue
		}
		room := max(s.Cap-used[s.Key], 0)
		if tight == nil || room < left {
			tight, left = &r.scopes[i], room
		}
		if r.worst <= room {
			continue
		}
		if s.Cap-(used[s.Key]-own[i]) < r.need {
			return nil, 0, false, r.exhausted(s, used[s.Key])
		}
		if own[i] > 0 {
			wait = true
		}
	}
	return tight, left, wait, nil
}

// record writes the ledger row of r cut to lines and adds its units to
// r's counters, filling res, and holds res: in flight before it commits
// (see reserveIn); reserve drops it again if the commit fails.
func (l *Ledger) record(ctx context.Context, tx pgx.Tx, a Account, r request, lines int, res *Reservation) error {
	units := r.price.Worst(lines)
	res.Claim = newClaim()
	res.row = ledgerRow{runID: a.RunID, job: a.Job, endpoint: r.ask.Endpoint.Name, target: r.ask.Target, at: r.at}
	if err := tx.QueryRow(ctx, `
			INSERT INTO unit_ledger (run_id, job, endpoint, target, reserved, reserved_at, claim)
			VALUES (nullif($1, 0), $2, $3, $4, $5, $6, $7) RETURNING ledger_id`,
		a.RunID, a.Job, r.ask.Endpoint.Name, r.ask.Target, units, r.at, res.Claim).Scan(&res.ID); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE budget_usage SET used = used + $2 WHERE key = ANY($1)`, r.keys, units); err != nil {
		return err
	}
	res.Lines, res.Units, res.keys = lines, units, r.keys
	l.hold(*res)
	return nil
}

// hold counts r in flight.
func (l *Ledger) hold(r Reservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held[r.Claim] = r
	for _, k := range r.keys {
		l.inflight[k] += r.Units
	}
}

// Finish says the request of r is over, whether its page committed (and
// Settle with it) or not: r is no longer in flight, and Reserves waiting
// for room try again. Call it exactly once per Reservation, after the
// transaction that settles it ends (or once the request failed): until
// then, requests of this Ledger that do not fit may wait for r. A
// reservation that was never settled keeps counting as spent. Finish of a
// zero Reservation, or of one finished already, does nothing.
func (l *Ledger) Finish(r Reservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	held, ok := l.held[r.Claim]
	if !ok || r.Claim == (Claim{}) {
		return
	}
	delete(l.held, r.Claim)
	for _, k := range held.keys {
		if l.inflight[k] -= held.Units; l.inflight[k] == 0 {
			delete(l.inflight, k)
		}
	}
	close(l.finished)
	l.finished = make(chan struct{})
}

// lockCounters locks the usage counters of keys until tx ends and returns
// what they hold. Always in key order: two transactions locking the same
// counters in different orders would deadlock.
func lockCounters(ctx context.Context, tx pgx.Tx, keys []string) (map[string]int64, error) {
	rows, err := tx.Query(ctx, `SELECT key, used FROM budget_usage WHERE key = ANY($1) ORDER BY key FOR UPDATE`, keys)
	if err != nil {
		return nil, err
	}
	used := map[string]int64{}
	var key string
	var u int64
	if _, err := pgx.ForEachRow(rows, []any{&key, &u}, func() error { used[key] = u; return nil }); err != nil {
		return nil, err
	}
	return used, nil
}

// Afford returns the lines a request of at most lines lines may ask for
// when left units remain under the tightest cap (negative: no cap): all of
// them when its worst case fits; as many as fit for a per-line request
// that may shrink; false when not one line, or not the request, fits. A
// worst case past what an int64 counts (Price.Worst saturates) fits no
// cap, however large.
func Afford(p catalog.Price, lines int, shrink bool, left int64) (int, bool) {
	switch worst := p.Worst(lines); {
	case left < 0 || (worst <= left && worst < math.MaxInt64):
		return lines, true
	case p.Per != catalog.PerLine || !shrink || left < p.Units:
		return 0, false
	}
	return int(left / p.Units), true
}

// Settle records what the request of r cost, inside tx: the caller's page
// transaction, so the units commit with the rows they bought (or not at
// all, and then the reservation stands). It releases the difference from
// the counters; call it last in tx, as it locks them until commit. A nil tx
// settles in a transaction of its own.
func (l *Ledger) Settle(ctx context.Context, tx pgx.Tx, r Reservation, spent int64) error {
	if spent < 0 {
		return fmt.Errorf("budget: settling ledger row %d at %d units", r.ID, spent)
	}
	settle := func(tx pgx.Tx) error {
		// An answer dearer than its reservation (the API sent more lines
		// than asked) was charged all the same: the ledger records what it
		// cost, past the cap if need be, never less.
		tag, err := tx.Exec(ctx, `UPDATE unit_ledger SET spent = $2, reserved = greatest(reserved, $2), settled_at = $3
			WHERE claim = $1 AND spent IS NULL`, r.Claim, spent, l.now())
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			var found bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM unit_ledger WHERE claim = $1)`, r.Claim).Scan(&found); err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("%w: ledger row %d (%d units reserved for %s %s) is not in the database: a failover lost the commit that booked it",
					ErrLost, r.ID, r.Units, r.row.endpoint, r.row.target)
			}
			return fmt.Errorf("ledger row %d is settled already", r.ID)
		}
		if spent != r.Units {
			// Locked first, as Reserve locks them: an UPDATE alone locks
			// rows in the order it finds them.
			if _, err := lockCounters(ctx, tx, r.keys); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE budget_usage SET used = used + $2 WHERE key = ANY($1)`, r.keys, spent-r.Units)
		}
		return err
	}
	var err error
	if tx != nil {
		err = settle(tx)
	} else {
		err = pgx.BeginFunc(ctx, l.pool, settle)
	}
	if err != nil {
		return fmt.Errorf("budget: settling: %w", err)
	}
	return nil
}

// Settled reports whether r has been settled, read through q (a
// connection, a transaction or a pool): after a commit whose answer was
// lost with its connection, it says whether the transaction that settled
// r committed. A row the database no longer has (see ErrLost) is not
// settled.
func (l *Ledger) Settled(ctx context.Context, q Querier, r Reservation) (bool, error) {
	var settled bool
	err := q.QueryRow(ctx, `SELECT spent IS NOT NULL FROM unit_ledger WHERE claim = $1`, r.Claim).Scan(&settled)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("budget: reading ledger row %d: %w", r.ID, err)
	}
	return settled, nil
}

// Querier is a connection, a transaction or a pool.
type Querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

// RowState is what the database holds of a reservation's ledger row.
type RowState int

// The states of a ledger row.
const (
	// RowLost: the database has no row of the claim (a failover lost the
	// commit that booked it).
	RowLost RowState = iota
	// RowBooked: the row is there, not settled.
	RowBooked
	// RowSettled: the row is there and settled.
	RowSettled
)

// States reads what the database holds of the ledger rows of claims.
func (l *Ledger) States(ctx context.Context, q Querier, claims []Claim) (map[Claim]RowState, error) {
	out := make(map[Claim]RowState, len(claims))
	for _, c := range claims {
		out[c] = RowLost
	}
	rows, err := q.Query(ctx, `SELECT claim, spent IS NOT NULL FROM unit_ledger WHERE claim = ANY($1)`, claims)
	if err != nil {
		return nil, fmt.Errorf("budget: reading the ledger rows of this process: %w", err)
	}
	var c Claim
	var settled bool
	if _, err := pgx.ForEachRow(rows, []any{&c, &settled}, func() error {
		out[c] = RowBooked
		if settled {
			out[c] = RowSettled
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("budget: reading the ledger rows of this process: %w", err)
	}
	return out, nil
}

// Rebook books r again, in tx, when the database lost its ledger row (a
// failover lost the commit that booked it: see ErrLost): a row with r's
// claim, at its reservation, unsettled, and its units in the counters of
// its scopes again, past a cap if need be, since the request was sent and
// the API may have charged it. The row gets a new ledger_id, which the
// returned Reservation carries; its claim is r's, so Finish and Settle
// work with either. A row that is there is left alone (false).
func (l *Ledger) Rebook(ctx context.Context, tx pgx.Tx, r Reservation) (Reservation, bool, error) {
	if r.Claim == (Claim{}) || r.row.job == "" {
		return r, false, fmt.Errorf("budget: ledger row %d cannot be booked again: it is not a reservation of this process", r.ID)
	}
	var id int64
	err := tx.QueryRow(ctx, `
		INSERT INTO unit_ledger (run_id, job, endpoint, target, reserved, reserved_at, claim)
		VALUES (nullif($1, 0), $2, $3, $4, $5, $6, $7) ON CONFLICT (claim) DO NOTHING RETURNING ledger_id`,
		r.row.runID, r.row.job, r.row.endpoint, r.row.target, r.Units, r.row.at, r.Claim).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false, nil
	}
	if err == nil {
		_, err = tx.Exec(ctx, `INSERT INTO budget_usage (key) SELECT k FROM unnest($1::text[]) k ORDER BY k ON CONFLICT DO NOTHING`, r.keys)
	}
	if err == nil {
		_, err = lockCounters(ctx, tx, r.keys)
	}
	if err == nil {
		_, err = tx.Exec(ctx, `UPDATE budget_usage SET used = used + $2 WHERE key = ANY($1)`, r.keys, r.Units)
	}
	if err != nil {
		return r, false, fmt.Errorf("budget: booking ledger row %d again: %w", r.ID, err)
	}
	r.ID = id
	return r, true, nil
}

// StartRun records a run of job and returns its id.
func (l *Ledger) StartRun(ctx context.Context, job, trigger string) (int64, error) {
	var id int64
	if err := l.pool.QueryRow(ctx, `INSERT INTO runs (job, trigger, started_at) VALUES ($1, $2, $3) RETURNING run_id`,
		job, trigger, l.now()).Scan(&id); err != nil {
		return 0, fmt.Errorf("budget: recording the run of %s: %w", plain.Text(job, 0), err)
	}
	return id, nil
}

// FinishRun records how run id ended; its units are the ledger's.
func (l *Ledger) FinishRun(ctx context.Context, id int64, status string, rows int64, runErr string) error {
	_, err := l.pool.Exec(ctx, `
		UPDATE runs SET status = $2, finished_at = $3, rows = $4, error = nullif($5, ''),
		       units = (SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger WHERE run_id = $1)
		WHERE run_id = $1`, id, status, l.now(), rows, runErr)
	if err != nil {
		return fmt.Errorf("budget: recording the end of run %d: %w", id, err)
	}
	return nil
}

// RunUnits is what the ledger says run id spent: settled requests at what
// they cost, unsettled ones at their reservation.
func (l *Ledger) RunUnits(ctx context.Context, id int64) (int64, error) {
	var n int64
	err := l.pool.QueryRow(ctx, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger WHERE run_id = $1`, id).Scan(&n)
	return n, err
}

// Use is the spend in one cap scope.
type Use struct {
	// Scope names it: "installation 2026-11-21", "job example 2026-11",
	// "job example run 12". Its job's name is as in the spec: show it
	// with Shown.
	Scope string
	// Job is the job whose cap it is; "" for the installation's.
	Job string
	// Cap is the scope's cap; 0 when there is none.
	Cap  int64
	Used int64
}

// Shown is Scope with its job's name as show shows it (a name that could
// mislead, such as one holding a right-to-left override, quoted and
// escaped; etl's shownName).
func (u Use) Shown(show func(string) string) string {
	if u.Job == "" {
		return u.Scope
	}
	return "job " + show(u.Job) + strings.TrimPrefix(u.Scope, "job "+u.Job)
}

// Left is what the cap still allows; -1 without a cap.
func (u Use) Left() int64 {
	if u.Cap == 0 {
		return -1
	}
	return max(u.Cap-u.Used, 0)
}

// Usage reports the spend against each cap at the ledger's current time:
// the installation today and this month, and each job this month and in
// its latest run. caps maps job names to their caps; the installation's
// caps are read from any of them (every job carries them).
func (l *Ledger) Usage(ctx context.Context, jobs []string, caps map[string]Caps) ([]Use, error) {
	at := l.now().UTC()
	var install Caps
	for _, c := range caps {
		install = c
		break
	}
	day, month := at.Format(time.DateOnly), at.Format("2006-01")
	uses := []Use{
		{Scope: "installation " + day, Cap: install.Daily},
		{Scope: "installation " + month, Cap: install.Monthly},
	}
	key := func(a Account, name string) string {
		for _, s := range Scopes(a, at) {
			if s.Name == name {
				return s.Key
			}
		}
		panic("budget: no scope " + name)
	}
	keys := []string{key(Account{}, "daily"), key(Account{}, "monthly")}
	for _, j := range jobs {
		var runID int64
		var window int
		err := l.pool.QueryRow(ctx, `SELECT run_id, cap_window FROM runs WHERE job = $1 AND trigger <> 'probe'
			ORDER BY run_id DESC LIMIT 1`, j).Scan(&runID, &window)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("budget: latest run of %s: %w", plain.Text(j, 0), err)
		}
		uses = append(uses, Use{Scope: "job " + j + " " + month, Job: j, Cap: caps[j].JobMonthly})
		keys = append(keys, key(Account{Job: j}, "job monthly"))
		if runID != 0 {
			scope := fmt.Sprintf("job %s run %d (latest)", j, runID)
			if window > 1 {
				scope = fmt.Sprintf("job %s run %d, cap window %d (latest)", j, runID, window)
			}
			uses = append(uses, Use{Scope: scope, Job: j, Cap: caps[j].PerRun})
			keys = append(keys, key(Account{RunID: runID, Window: window}, "per_run"))
		}
	}
	used, err := l.Used(ctx, keys)
	if err != nil {
		return nil, err
	}
	for i := range uses {
		uses[i].Used = used[keys[i]]
	}
	return uses, nil
}
