package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgcluster"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/migrations"
)

// The Citus arms: P1 and P1u into a database of the Citus cluster whose
// coordinator BENCH_CITUS_URL names (go run ./internal/citusrun starts
// one on loopback), made on every node and distributed as etl migrate up
// does, beside the same arms on the bench's own PostgreSQL. Each run also
// records the CPU each node's PostgreSQL spent (the coordinator's and
// each worker's), and the report says how backlinks' rows spread over the
// workers' shards.
const (
	armP1Citus  = "P1c"
	armP1uCitus = "P1uc"
)

func isCitusArm(a string) bool { return a == armP1Citus || a == armP1uCitus }

// citusEnv is the Citus database of the Citus arms.
type citusEnv struct {
	dbURL    string
	pool     *pgxpool.Pool
	targetID int64
	// nodes are the cluster's nodes, the coordinator first: what their
	// CPU is read by.
	nodes []citusNode
}

type citusNode struct {
	name string // "coordinator", "worker 127.0.0.1:PORT"
	// postmaster is the node's postmaster pid, when it runs on this
	// machine (its CPU is read from /proc); 0 otherwise.
	postmaster int
}

// setUpCitus makes the Citus arms' database and returns what undoes it.
func (e *env) setUpCitus(ctx context.Context) (func() error, error) {
	name := fmt.Sprintf("bench_citus_%d", os.Getpid())
	dbURL, err := pgcluster.DatabaseLike(ctx, e.cfg.citusURL, name)
	undo := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if e.citus.pool != nil {
			e.citus.pool.Close()
		}
		return pgcluster.DropDatabaseLike(ctx, e.cfg.citusURL, name)
	}
	if err != nil {
		return undo, fmt.Errorf("BENCH_CITUS_URL: %w", err)
	}
	e.citus.dbURL = dbURL
	if err := migrations.Up(ctx, dbURL); err != nil {
		return undo, fmt.Errorf("migrating the Citus database: %w", err)
	}
	if err := load.DistributeDatabase(ctx, dbURL); err != nil {
		return undo, fmt.Errorf("distributing the Citus database: %w", err)
	}
	if e.citus.pool, err = pgxpool.New(ctx, dbURL); err != nil {
		return undo, err
	}
	rows, err := e.citus.pool.Query(ctx, `SELECT nodename, nodeport, groupid = 0 FROM pg_dist_node WHERE isactive ORDER BY groupid`)
	if err != nil {
		return undo, err
	}
	var host string
	var port int
	var coord bool
	_, err = pgx.ForEachRow(rows, []any{&host, &port, &coord}, func() error {
		n := citusNode{name: "coordinator"}
		if !coord {
			n.name = fmt.Sprintf("worker %s:%d", host, port)
		}
		n.postmaster = postmasterOf(ctx, e.cfg.citusURL, host, port)
		e.citus.nodes = append(e.citus.nodes, n)
		return nil
	})
	return undo, err
}

// prepareCitus makes the target and the month's partition in the Citus
// database, as prepare does in the bench's own.
func (e *env) prepareCitus(ctx context.Context) error {
	l, err := load.New(load.Config{Pool: e.citus.pool})
	if err != nil {
		return err
	}
	if e.citus.targetID, err = l.Target(ctx, targetURL(e.cfg.rows), catalog.RootDomain); err != nil {
		return err
	}
	return l.EnsurePartitions(ctx, e.ep, []time.Time{e.month})
}

// p1Citus is P1 into the Citus database, with the CPU each node spent.
func (e *env) p1Citus(ctx context.Context) (sample, error) {
	before := e.citusCPU()
	s, err := e.runChildOn(ctx, e.citus.dbURL, e.csv.path, e.citus.targetID, nil)
	if err != nil {
		return s, err
	}
	after := e.citusCPU()
	s.NodeCPU = map[string]float64{}
	for name, t := range after {
		s.NodeCPU[name] = round3(t - before[name])
	}
	return s, nil
}

// citusResetting is resetting on the Citus database.
func (e *env) citusResetting(stmts ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, st := range stmts {
			if _, err := e.citus.pool.Exec(ctx, st); err != nil {
				return fmt.Errorf("%s (Citus): %w", st, err)
			}
		}
		return nil
	}
}

// citusCPU returns the CPU seconds each node's PostgreSQL has used: its
// postmaster's, its children's that ended (which the postmaster reaped),
// and those of its children running now.
func (e *env) citusCPU() map[string]float64 {
	out := map[string]float64{}
	for _, n := range e.citus.nodes {
		if n.postmaster == 0 {
			continue
		}
		out[n.name] = processCPU(n.postmaster, true)
		entries, _ := os.ReadDir("/proc")
		for _, d := range entries {
			pid, err := strconv.Atoi(d.Name())
			if err != nil || parentOf(pid) != n.postmaster {
				continue
			}
			out[n.name] += processCPU(pid, false)
		}
	}
	return out
}

// spreadCitus says how backlinks' rows lie over the workers: rows and
// bytes of its shards per node.
func (e *env) spreadCitus(ctx context.Context) ([]string, error) {
	rows, err := e.citus.pool.Query(ctx, `
		SELECT nodename || ':' || nodeport, count(*), sum(shard_size)
		FROM citus_shards WHERE table_name::text LIKE 'backlinks%'
		GROUP BY 1 ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	var node string
	var shards, size int64
	var out []string
	_, err = pgx.ForEachRow(rows, []any{&node, &shards, &size}, func() error {
		out = append(out, fmt.Sprintf("%s: %d shards of backlinks, %.1f MB", node, shards, float64(size)/1e6))
		return nil
	})
	return out, err
}

// postmasterOf returns the pid of the postmaster of the node at host:port,
// read from its data folder's postmaster.pid, when this machine can read
// it; 0 when not.
func postmasterOf(ctx context.Context, coordinatorURL, host string, port int) int {
	conn, err := pgx.Connect(ctx, strings.Replace(coordinatorURL, hostPort(coordinatorURL), fmt.Sprintf("%s:%d", host, port), 1))
	if err != nil {
		return 0
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var dir string
	if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir); err != nil {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	return pid
}

// hostPort is the host:port of a postgres:// URL.
func hostPort(u string) string {
	rest := u[strings.Index(u, "@")+1:]
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// procStat returns the fields of /proc/PID/stat after the command's name.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

func parentOf(pid int) int {
	f := procStat(pid)
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// processCPU is the user and system CPU seconds of pid, with those of its
// reaped children when children is set (clock ticks of 1/100 s, Linux).
func processCPU(pid int, children bool) float64 {
	f := procStat(pid)
	if len(f) < 15 {
		return 0
	}
	fields := []int{11, 12} // utime, stime (fields 14 and 15 of stat)
	if children {
		fields = append(fields, 13, 14) // cutime, cstime
	}
	var ticks float64
	for _, i := range fields {
		v, _ := strconv.ParseFloat(f[i], 64)
		ticks += v
	}
	return ticks / 100
}

// citusNotes are the report's lines on the Citus arms: the median CPU of
// each node per arm, and how backlinks lies over the workers.
func (e *env) citusNotes(ctx context.Context, samples map[string][]sample) ([]string, error) {
	var notes []string
	for _, a := range []string{armP1Citus, armP1uCitus} {
		ss := samples[a]
		if len(ss) == 0 {
			continue
		}
		var parts []string
		for _, n := range e.citus.nodes {
			var v []float64
			for _, s := range ss {
				v = append(v, s.NodeCPU[n.name])
			}
			parts = append(parts, fmt.Sprintf("%s %.2f s", n.name, spreadOf(v).Median))
		}
		notes = append(notes, fmt.Sprintf("%s: PostgreSQL CPU per node (median): %s", a, strings.Join(parts, ", ")))
	}
	spread, err := e.spreadCitus(ctx)
	if err != nil {
		return nil, fmt.Errorf("the spread of backlinks over the workers: %w", err)
	}
	notes = append(notes, "Citus: backlinks after the last run: "+strings.Join(spread, "; "))
	return notes, nil
}
