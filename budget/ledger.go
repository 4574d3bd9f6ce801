package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
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
type Ledger struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

// New returns a Ledger over pool; now is the clock that says which day and
// month a request counts in (default time.Now).
func New(pool *pgxpool.Pool, now func() time.Time) *Ledger {
	if now == nil {
		now = time.Now
	}
	return &Ledger{pool: pool, now: now}
}

// Account is what a run spends against: its id, its job and the caps.
type Account struct {
	RunID int64
	Job   string
	Caps  Caps
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

// Reservation is units set aside for one request.
type Reservation struct {
	ID int64
	// Lines is the most lines the request may now return: Ask.Lines, or
	// fewer when the budget could not afford them all.
	Lines int
	// Units is the reserved worst case.
	Units int64
	keys  []string
}

// ExhaustedError says a cap cannot pay for the next request.
type ExhaustedError struct {
	Cap         string // "per_run", "job monthly", "daily" or "monthly"
	Limit, Used int64
	Need        int64 // units the smallest request would cost
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("budget exhausted: the %s cap of %d units has %d left, and the next request costs at least %d",
		e.Cap, e.Limit, max(e.Limit-e.Used, 0), e.Need)
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
		{"per_run", "run:" + strconv.FormatInt(a.RunID, 10), a.Caps.PerRun},
	}
	slices.SortFunc(s, func(x, y Scope) int { return strings.Compare(x.Key, y.Key) })
	return s
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
// own that locks the counters of every scope the request counts in. When a
// cap cannot pay it, Reserve shrinks a per-line request (Ask.Shrink) to the
// lines the tightest cap affords, or returns an *ExhaustedError and
// reserves nothing.
func (l *Ledger) Reserve(ctx context.Context, a Account, ask Ask) (Reservation, error) {
	at := l.now()
	price := ask.Endpoint.Price
	lines := ask.Lines
	if price.Per != catalog.PerLine {
		lines = 0
	}
	scopes := Scopes(a, at)
	keys := make([]string, len(scopes))
	for i, s := range scopes {
		keys[i] = s.Key
	}
	var res Reservation
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO budget_usage (key) SELECT k FROM unnest($1::text[]) k ORDER BY k ON CONFLICT DO NOTHING`, keys); err != nil {
			return err
		}
		used, err := lockCounters(ctx, tx, keys)
		if err != nil {
			return err
		}
		// The tightest cap decides.
		var tight *Scope
		left := int64(-1)
		for i, s := range scopes {
			if s.Cap <= 0 {
				continue
			}
			if l := max(s.Cap-used[s.Key], 0); tight == nil || l < left {
				tight, left = &scopes[i], l
			}
		}
		lines, ok := Afford(price, lines, ask.Shrink, left)
		if !ok {
			return &ExhaustedError{Cap: tight.Name, Limit: tight.Cap, Used: used[tight.Key], Need: price.Units}
		}
		units := price.Worst(lines)
		if err := tx.QueryRow(ctx, `
			INSERT INTO unit_ledger (run_id, job, endpoint, target, reserved, reserved_at)
			VALUES (nullif($1, 0), $2, $3, $4, $5, $6) RETURNING ledger_id`,
			a.RunID, a.Job, ask.Endpoint.Name, ask.Target, units, at).Scan(&res.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE budget_usage SET used = used + $2 WHERE key = ANY($1)`, keys, units); err != nil {
			return err
		}
		res.Lines, res.Units, res.keys = lines, units, keys
		return nil
	})
	if err != nil {
		var ex *ExhaustedError
		if errors.As(err, &ex) {
			return Reservation{}, ex
		}
		return Reservation{}, fmt.Errorf("budget: reserving %s for %s: %w", ask.Endpoint.Name, ask.Target, err)
	}
	return res, nil
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
			WHERE ledger_id = $1 AND spent IS NULL`, r.ID, spent, l.now())
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
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

// StartRun records a run of job and returns its id.
func (l *Ledger) StartRun(ctx context.Context, job, trigger string) (int64, error) {
	var id int64
	if err := l.pool.QueryRow(ctx, `INSERT INTO runs (job, trigger, started_at) VALUES ($1, $2, $3) RETURNING run_id`,
		job, trigger, l.now()).Scan(&id); err != nil {
		return 0, fmt.Errorf("budget: recording the run of %s: %w", job, err)
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
	// "job example run 12".
	Scope string
	// Cap is the scope's cap; 0 when there is none.
	Cap  int64
	Used int64
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
		err := l.pool.QueryRow(ctx, `SELECT coalesce(max(run_id), 0) FROM runs WHERE job = $1 AND trigger <> 'probe'`, j).Scan(&runID)
		if err != nil {
			return nil, fmt.Errorf("budget: latest run of %s: %w", j, err)
		}
		uses = append(uses, Use{Scope: "job " + j + " " + month, Cap: caps[j].JobMonthly})
		keys = append(keys, key(Account{Job: j}, "job monthly"))
		if runID != 0 {
			uses = append(uses, Use{Scope: fmt.Sprintf("job %s run %d (latest)", j, runID), Cap: caps[j].PerRun})
			keys = append(keys, key(Account{RunID: runID}, "per_run"))
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
