package dbconn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
)

// SpareConns is how many connections of a Runner's pool the pages in
// flight leave to the work between pages (reservations, checkpoints, an
// account's token): at least one, so that a page that holds a connection
// and needs another for a moment (a token renewal) always gets one.
const SpareConns = 2

// PagesInFlight is how many pages a Runner of the given concurrency has
// in flight at most: each is a request sent and its load, on a database
// connection taken before the request. Never more than the API lets one
// account have in flight (catalog.AccountConcurrentRequests): a task past
// them could only wait for a turn, holding nothing useful.
func PagesInFlight(concurrency int) int {
	return max(min(concurrency, catalog.AccountConcurrentRequests), 1)
}

// Conns counts the database connections a Runner opens on the warehouse's
// server.
type Conns struct {
	// Concurrency is the concurrency asked for (Config.Concurrency).
	Concurrency int
	// Pages is the pages in flight (PagesInFlight): each holds a
	// connection of the pool from before its request is sent until its
	// rows commit.
	Pages int
	// Spare is the pool's connections beside the pages'.
	Spare int
	// Partitions is the connections partition creation works on, in a
	// pool apart (Config.Partitions).
	Partitions int
	// Locks is the connections that hold job locks, one per job running
	// at once, outside the pools.
	Locks int
}

// NeedConns is what a Runner of the given concurrency needs to run jobs
// jobs at once (1 for etl run and etl backfill; a scheduler's scheduled
// jobs).
func NeedConns(concurrency, jobs int) Conns {
	return Conns{Concurrency: concurrency, Pages: PagesInFlight(concurrency), Spare: SpareConns, Partitions: 1, Locks: max(jobs, 1)}
}

// Within cuts c's pages in flight so that it opens at most max
// connections in all (a bound the user sets, such as pool_max_conns in
// the database's URL). It reports false, changing nothing, when not even
// one page fits: c then needs at least c.Total() - c.Pages + 1.
func (c Conns) Within(max int) (Conns, bool) {
	others := c.Total() - c.Pages
	if max-others < 1 {
		return c, false
	}
	c.Pages = min(c.Pages, max-others)
	return c, true
}

// Pool is the size of the Runner's pool (Config.Pool): its pages and the
// spare connections.
func (c Conns) Pool() int { return c.Pages + c.Spare }

// Total is every connection the Runner opens.
func (c Conns) Total() int { return c.Pool() + c.Partitions + c.Locks }

func (c Conns) String() string {
	locks := "1 holds the job's lock"
	if c.Locks > 1 {
		locks = fmt.Sprintf("%d hold the locks of the jobs", c.Locks)
	}
	pages := fmt.Sprintf("%d pages in flight", c.Pages)
	if c.Pages == 1 {
		pages = "1 page in flight"
	}
	return fmt.Sprintf("%s, %d spare, %d makes partitions, %s", pages, c.Spare, c.Partitions, locks)
}

// Room is what a PostgreSQL server lets a role open, besides what other
// clients hold, as read at one moment (ReadRoom).
type Room struct {
	// MaxConnections is the server's max_connections.
	MaxConnections int
	// Reserved is the slots of max_connections the role may not take:
	// superuser_reserved_connections, and PostgreSQL 16's
	// reserved_connections unless the role is a member of
	// pg_use_reserved_connections; 0 for a superuser.
	Reserved int
	// InUse is the client connections open on the server.
	InUse int
	// RoleLimit is the role's CONNECTION LIMIT and RoleInUse its
	// connections; DBLimit and DBInUse the same for the database. A limit
	// of -1 is none (and a superuser has none).
	RoleLimit, RoleInUse int
	DBLimit, DBInUse     int
}

// Allows is how many connections the server lets the role open now, and
// what bounds them: the server's free slots, or the role's or the
// database's connection limit.
func (r Room) Allows() (int, string) {
	n := r.MaxConnections - r.Reserved - r.InUse
	why := fmt.Sprintf("max_connections is %d", r.MaxConnections)
	if r.Reserved > 0 {
		why += fmt.Sprintf(", %d of them reserved for superusers", r.Reserved)
	}
	why += fmt.Sprintf(", and %d are in use by other clients (schedulers, runs, analysts)", r.InUse)
	if r.RoleLimit >= 0 && r.RoleLimit-r.RoleInUse < n {
		n = r.RoleLimit - r.RoleInUse
		why = fmt.Sprintf("the role's CONNECTION LIMIT is %d, and it has %d open", r.RoleLimit, r.RoleInUse)
	}
	if r.DBLimit >= 0 && r.DBLimit-r.DBInUse < n {
		n = r.DBLimit - r.DBInUse
		why = fmt.Sprintf("the database's CONNECTION LIMIT is %d, and %d are open to it", r.DBLimit, r.DBInUse)
	}
	return max(n, 0), why
}

// ReadRoom reads what the server behind conn lets its role open, not
// counting conn itself.
//
// pg_stat_activity hides the kind of other roles' sessions from a role
// without pg_read_all_stats: a hidden session connected to a database
// counts as a client connection (a parallel worker of another role's
// query is counted too: the count errs on the safe side).
func ReadRoom(ctx context.Context, conn *pgx.Conn) (Room, error) {
	var r Room
	const client = `(a.backend_type = 'client backend' OR (a.backend_type IS NULL AND a.datid IS NOT NULL AND a.usesysid IS NOT NULL))
		AND a.pid <> pg_backend_pid()`
	var super, useReserved bool
	var suReserved, reserved int
	err := conn.QueryRow(ctx, `
		SELECT current_setting('max_connections')::int,
		       current_setting('superuser_reserved_connections')::int,
		       coalesce(current_setting('reserved_connections', true), '0')::int,
		       r.rolsuper,
		       CASE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = 'pg_use_reserved_connections')
		            THEN pg_has_role(session_user, 'pg_use_reserved_connections', 'MEMBER') ELSE false END,
		       r.rolconnlimit, d.datconnlimit,
		       (SELECT count(*) FROM pg_stat_activity a WHERE `+client+`),
		       (SELECT count(*) FROM pg_stat_activity a WHERE a.usesysid = r.oid AND `+client+`),
		       (SELECT count(*) FROM pg_stat_activity a WHERE a.datid = d.oid AND `+client+`)
		FROM pg_roles r, pg_database d
		WHERE r.rolname = session_user AND d.datname = current_database()`).Scan(
		&r.MaxConnections, &suReserved, &reserved, &super, &useReserved, &r.RoleLimit, &r.DBLimit, &r.InUse, &r.RoleInUse, &r.DBInUse)
	if err != nil {
		return Room{}, fmt.Errorf("reading the server's connection limits: %w", err)
	}
	if super {
		// Superusers may take the reserved slots, and no CONNECTION LIMIT
		// applies to them.
		r.RoleLimit, r.DBLimit = -1, -1
		return r, nil
	}
	r.Reserved = suReserved
	if !useReserved {
		r.Reserved += reserved
	}
	return r, nil
}

// ConnsError says the server cannot serve the connections a Runner needs.
type ConnsError struct {
	Need Conns
	Room Room
	// Opened, when the room looked large enough but the server refused a
	// connection all the same (another client took the last ones), is how
	// many of Need the server gave before it refused; Err is its refusal.
	Opened int
	Err    error
	// Flag names the concurrency in the message: "concurrency" unless
	// set (the command line sets "--concurrency").
	Flag string
}

func (e *ConnsError) Error() string {
	allows, why := e.Room.Allows()
	flag := e.Flag
	if flag == "" {
		flag = "concurrency"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d needs %d database connections (%s)", flag, e.Need.Concurrency, e.Need.Total(), e.Need)
	switch {
	case e.Err != nil && e.Room.MaxConnections == 0:
		fmt.Fprintf(&b, ", and the server has none to give: %v; close idle sessions, or raise max_connections", e.Err)
		return b.String()
	case e.Err != nil:
		fmt.Fprintf(&b, ", and the server refused one after %d were open: %v (it allowed %d a moment before: %s; another client took them since)",
			e.Opened, e.Err, allows, why)
	default:
		fmt.Fprintf(&b, ", but the server allows %d more: %s", allows, why)
	}
	switch fit := allows - (e.Need.Total() - e.Need.Pages); {
	case fit < 1:
		fmt.Fprintf(&b, "; not even %s 1 fits: close idle sessions, or raise max_connections", flag)
	case fit < e.Need.Pages:
		fmt.Fprintf(&b, "; %s %d fits, or close idle sessions, or raise max_connections", flag, fit)
	default:
		b.WriteString("; try again, or close idle sessions, or raise max_connections")
	}
	return b.String()
}

// ErrNoRoom is matched (errors.Is) by every *ConnsError.
var ErrNoRoom = errors.New("the database cannot serve the connections asked for")

// Is makes errors.Is(err, ErrNoRoom) true.
func (e *ConnsError) Is(target error) bool { return target == ErrNoRoom }

// Unwrap returns the server's refusal, if any.
func (e *ConnsError) Unwrap() error { return e.Err }

// Pools are the warehouse connections of a Runner (Config.Pool and
// Config.Partitions), opened ahead and kept while they are open: a run
// that starts has every connection its pages need, whatever other clients
// open meanwhile.
type Pools struct {
	Pool       *pgxpool.Pool
	Partitions *pgxpool.Pool
	Need       Conns
}

// OpenPools checks that the server can serve need (a *ConnsError when it
// cannot: before anything is asked of the API) and opens its pools with
// every connection in them (the job locks are taken by each run). cfg is
// the warehouse's; it is not changed.
func OpenPools(ctx context.Context, cfg *pgxpool.Config, need Conns) (*Pools, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "53300" {
		return nil, &ConnsError{Need: need, Err: err} // the server has no slot left at all
	}
	if err != nil {
		return nil, err
	}
	room, err := ReadRoom(ctx, conn)
	_ = conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	if allows, _ := room.Allows(); allows < need.Total() {
		return nil, &ConnsError{Need: need, Room: room}
	}
	p := &Pools{Need: need}
	// MinConns: the pool keeps its connections open (and opens them again
	// when one is lost).
	main, part := cfg.Copy(), cfg.Copy()
	main.MaxConns, main.MinConns = int32(need.Pool()), int32(need.Pool())
	part.MaxConns, part.MinConns = int32(need.Partitions), int32(need.Partitions)
	if p.Pool, err = pgxpool.NewWithConfig(ctx, main); err != nil {
		return nil, err
	}
	if p.Partitions, err = pgxpool.NewWithConfig(ctx, part); err != nil {
		p.Pool.Close()
		return nil, err
	}
	opened := 0
	for _, pool := range []*pgxpool.Pool{p.Pool, p.Partitions} {
		n, err := fill(ctx, pool)
		opened += n
		if err != nil {
			p.Close()
			if ctx.Err() == nil && Unavailable(err, nil) {
				return nil, &ConnsError{Need: need, Room: room, Opened: opened, Err: err}
			}
			return nil, err
		}
	}
	return p, nil
}

// fill opens every connection of pool (at most MaxConns) and leaves them
// idle in it; it returns how many it opened.
func fill(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var held []*pgxpool.Conn
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return len(held), err
		}
		held = append(held, c)
	}
	return len(held), nil
}

// Close closes the pools.
func (p *Pools) Close() {
	p.Pool.Close()
	p.Partitions.Close()
}
