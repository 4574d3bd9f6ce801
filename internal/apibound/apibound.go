package apibound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/migrations"
)

// Config is how the bounds reach the database.
type Config struct {
	// Pool holds api_bounds.
	Pool *pgxpool.Pool
	// Retry runs a statement again while the database cannot serve
	// (the runner's, which notes the failure for its failover check).
	Retry  func(ctx context.Context, what string, do func(context.Context) error) error
	Now    func() time.Time
	Logger *slog.Logger
}

// Bounds are the bounds of a run, as it knows them: read from
// api_bounds once, then kept up to date as its tasks learn. Every task of
// the run that asks the same API the same operation shares one apiBound,
// so a bound one task learns is the next request of every other.
type Bounds struct {
	mu sync.Mutex
	m  map[boundKey]*apiBound
}

// boundKey names a bound: the API's origin, the operation (a catalog
// endpoint or listing operation) and the parameter (limit, size).
type boundKey struct{ api, operation, param string }

// Of returns a task's hold of the bound of param on operation of the API
// at origin api: each task takes one of its own (see Use).
func (bs *Bounds) Of(cfg Config, api, operation, param string) *Use {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.m == nil {
		bs.m = map[boundKey]*apiBound{}
	}
	k := boundKey{api, operation, param}
	b, ok := bs.m[k]
	if !ok {
		b = &apiBound{key: k, cfg: cfg}
		bs.m[k] = b
	}
	return &Use{b: b}
}

// Use is one task's hold of an apiBound, which says to the bound
// whose requests were refused: a value found by halving is recorded only
// when a task that a refusal of the search met is served it (see
// apiBound.refused).
type Use struct {
	b *apiBound
	// own is the task's own limit, below the bound, while a known bound
	// was refused to it past offset 0 (see refusedAt); 0: none.
	own int
}

// Get returns the value the task asks (0: none known): the bound, or the
// task's own value below it.
func (u *Use) Get(ctx context.Context) (int, error) {
	n, err := u.b.get(ctx)
	if u.own > 0 && (n == 0 || u.own < n) {
		n = u.own
	}
	return n, err
}

func (u *Use) Refused(ctx context.Context, asked, named int) (int, error) {
	return u.b.refused(ctx, u, asked, named)
}

// RefusedAt is refused for a request that asked from offset. A known
// bound refused past offset 0 without a smaller one named may be refused
// for offset + limit, not for limit: an API that serves only the first
// lines of a list (a window, as search engines keep: Elasticsearch's
// max_result_window) refuses there what it serves at offset 0. The task
// then halves a value of its own, asked by it alone and never recorded,
// so that its pages near the window do not lower every task's bound (and
// api_bounds) ever after; at 1 it fails alone. A bound not known yet is
// searched for as refused does, whatever the offset: the run's first
// answer may come from a page of the task at offset 0, so its probe of
// the bound is asked past it (see runTask).
func (u *Use) RefusedAt(ctx context.Context, asked, named int, offset int64) (int, error) {
	if offset > 0 && (named == 0 || named >= asked) && u.b.knownBelow(asked) {
		if asked <= 1 {
			return 0, fmt.Errorf("the API refused every %s of %s from offset %d, down to 1", u.b.key.param, u.b.key.operation, offset)
		}
		u.own = asked / 2
		return u.own, nil
	}
	return u.b.refused(ctx, u, asked, named)
}

func (u *Use) Accepted(ctx context.Context, asked int) error { return u.b.accepted(ctx, u, asked) }

func (u *Use) Learn(ctx context.Context, accepted, refused int, how string) error {
	return u.b.learn(ctx, accepted, refused, how)
}

// apiBound is one bound as a run knows it. It is safe for concurrent use.
type apiBound struct {
	key boundKey
	cfg Config

	mu   sync.Mutex
	read bool // api_bounds was read
	// value is the value to ask: the bound known, or the candidate of a
	// search by halving under way; 0: none known (the caller probes).
	value int
	// above is the smallest value refused since value was last
	// recorded: a search by halving is under way; 0: none.
	above int
	// prior is the value to ask before the search under way began, and
	// searchers the tasks whose requests its refusals met.
	prior     int
	searchers map[*Use]bool
}

// get returns the value to ask (0: none known), reading api_bounds the
// first time.
func (b *apiBound) get(ctx context.Context) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.read {
		return b.value, nil
	}
	var n int
	err := b.cfg.Retry(ctx, "reading an API bound", func(ctx context.Context) error {
		return b.cfg.Pool.QueryRow(ctx, `SELECT accepted FROM api_bounds WHERE api = $1 AND operation = $2 AND param = $3`,
			b.key.api, b.key.operation, b.key.param).Scan(&n)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return 0, fmt.Errorf("reading the largest %s of %s the API accepts: %w", b.key.param, b.key.operation, migrations.NotMigrated(err))
	default:
		b.value = n
	}
	b.read = true
	return b.value, nil
}

// refused says the API refused asked, a request of task u; named is the
// bound its refusal states below asked (0: none). It returns the value to
// ask next: the bound named (recorded at once), or half of asked
// (recorded once the API serves it to a task a refusal of this search
// met, see accepted: that task asks again what it was refused, with a
// smaller limit alone, where another task's request tells nothing of
// why it was refused). A refusal of a value above the one to ask now
// (another task asked before the bound was lowered) changes nothing.
//
// A refusal of 1 is an error: no value is left to try. It also says the
// API refused that request for something else than the size of its limit
// (a window of offset and limit, a parameter it words with the word
// limit): the search ends with nothing learned, and every task asks the
// value known before it again, rather than pages of 1 ever after.
func (b *apiBound) refused(ctx context.Context, u *Use, asked, named int) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.read = true // what the API said now outranks what api_bounds says
	if b.value > 0 && asked > b.value {
		return b.value, nil
	}
	if asked <= 1 {
		if b.above != 0 {
			b.value = b.prior
			b.endSearch()
		}
		return 0, fmt.Errorf("the API refused every %s of %s, down to 1", b.key.param, b.key.operation)
	}
	if named > 0 && named < asked {
		b.value = named
		b.endSearch()
		return named, b.record(ctx, named, asked, "named")
	}
	if b.above == 0 {
		b.prior, b.searchers = b.value, map[*Use]bool{}
	}
	b.searchers[u] = true
	b.value = asked / 2
	if b.above == 0 || asked < b.above {
		b.above = asked
	}
	return b.value, nil
}

// knownBelow reports whether a bound is known (no search by halving under
// way) and asked is not above it: a refusal of asked speaks of the
// request, not of a bound that a task asking above it learned late.
func (b *apiBound) knownBelow(asked int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read && b.value > 0 && b.above == 0 && asked <= b.value
}

// endSearch ends the search by halving under way, if any; b.mu is held.
func (b *apiBound) endSearch() { b.above, b.prior, b.searchers = 0, 0, nil }

// accepted says the API served asked to task u: when a search by halving
// is under way, asked is its candidate and a refusal of the search met
// u, the candidate is the bound, recorded with the smallest value
// refused.
func (b *apiBound) accepted(ctx context.Context, u *Use, asked int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.above == 0 || asked != b.value || !b.searchers[u] {
		return nil
	}
	above := b.above
	b.endSearch()
	return b.record(ctx, asked, above, "probed")
}

// learn records that the API serves at most accepted where refused was
// asked, as how says (named, probed), and asks accepted from now on.
func (b *apiBound) learn(ctx context.Context, accepted, refused int, how string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.read, b.value = true, accepted
	b.endSearch()
	return b.record(ctx, accepted, refused, how)
}

// record writes the bound to api_bounds; b.mu is held.
func (b *apiBound) record(ctx context.Context, accepted, refused int, how string) error {
	var ref *int
	if refused > accepted {
		ref = &refused
	}
	err := b.cfg.Retry(ctx, "recording an API bound", func(ctx context.Context) error {
		_, err := b.cfg.Pool.Exec(ctx, `
			INSERT INTO api_bounds (api, operation, param, accepted, refused, how, learned_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (api, operation, param) DO UPDATE SET accepted = EXCLUDED.accepted, refused = EXCLUDED.refused,
				how = EXCLUDED.how, learned_at = EXCLUDED.learned_at`,
			b.key.api, b.key.operation, b.key.param, accepted, ref, how, b.cfg.Now())
		return err
	})
	if err != nil {
		return fmt.Errorf("recording the largest %s of %s the API accepts: %w", b.key.param, b.key.operation, migrations.NotMigrated(err))
	}
	b.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "learned the largest value the API accepts",
		slog.String("operation", b.key.operation), slog.String("param", b.key.param), slog.Int(b.key.param, accepted),
		slog.Int("refused", refused), slog.String("how", how))
	return nil
}

// LimitRefused handles a request of a task that learns its bound of limit
// (lb, nil for one that does not) and failed with err after asking asked
// from offset:
// when the API refused the limit, the bound is lowered (see
// apiBound.refused) and LimitRefused reports true, the request to be asked
// again; an error when no limit is left to try.
func LimitRefused(ctx context.Context, lb *Use, err error, asked int, offset int64) (bool, error) {
	if lb == nil || err == nil {
		return false, nil
	}
	named, ok := extract.LimitRefused(err, asked)
	if !ok {
		return false, nil
	}
	if _, rerr := lb.RefusedAt(ctx, asked, named, offset); rerr != nil {
		return false, fmt.Errorf("%w: %w", rerr, err)
	}
	return true, nil
}

// FirstSizeProbe is the size the first page of a listings pull asks for
// when no bound of size is known: the largest the spec's int32 allows
// (listing calls cost no units), so that the API's refusal names its
// bound, or the largest page it serves is found by halving.
func FirstSizeProbe() int {
	p, _ := catalog.GetLocations.Param("size")
	return p.Max
}

// Limits reads the bounds of limit api_bounds knows of the API at origin
// api, by operation (with api "": the smallest learned from any API).
func Limits(ctx context.Context, q Querier, api string) (map[string]int, error) {
	known := map[string]int{}
	rows, err := q.Query(ctx, `SELECT operation, min(accepted) FROM api_bounds
		WHERE param = 'limit' AND ($1 = '' OR api = $1) GROUP BY operation`, api)
	if err != nil {
		return nil, fmt.Errorf("reading the bounds of limit the API accepts: %w", migrations.NotMigrated(err))
	}
	var op string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&op, &n}, func() error { known[op] = n; return nil }); err != nil {
		return nil, fmt.Errorf("reading the bounds of limit the API accepts: %w", migrations.NotMigrated(err))
	}
	return known, nil
}

// Querier is a pool or a transaction.
type Querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}
