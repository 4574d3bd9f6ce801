package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/load"
)

// arm is one way of loading the CSV.
type arm struct {
	name string
	what string // one line for the table
	// reset brings the database to the arm's starting state; untimed.
	reset func(ctx context.Context) error
	// run loads the CSV and times it.
	run func(ctx context.Context) (sample, error)
	// check fails when the arm's result is wrong; warmUp asks for the
	// checksum of the rows too. Untimed.
	check func(ctx context.Context, s sample, warmUp bool) error
}

// sample is one run of an arm.
type sample struct {
	Seconds float64 `json:"seconds"`
	// CPUSeconds is the user and system time of the arm's process (psql,
	// the P1 process, etl run): the client's share, PostgreSQL's not counted.
	CPUSeconds float64      `json:"cpu_seconds"`
	PeakRSSMB  float64      `json:"peak_rss_mb,omitempty"` // the P1 process, etl run
	Load       *childResult `json:"load,omitempty"`        // P1, P1u
	// NodeCPU is the CPU seconds each node of the Citus cluster spent in
	// the run (P1c, P1uc): the coordinator's and each worker's.
	NodeCPU map[string]float64 `json:"node_cpu_seconds,omitempty"`
	// Requests and Refused are what the sandbox was asked by E2E, and
	// refused of it (limits past its bound); APIBoundSeconds is the least
	// time they take at the API's account rate.
	Requests        int64   `json:"requests,omitempty"`
	Refused         int64   `json:"refused,omitempty"`
	APIBoundSeconds float64 `json:"api_bound_seconds,omitempty"`
}

// stage is the UNLOGGED staging table of B0 and B2, without indexes.
const stage = "bench_stage"

// prepare creates the target, the staging table and the month partition,
// and learns from psql's reading of the CSV what the loaded table must
// hold: its distinct natural keys and the checksum of its rows.
func (e *env) prepare(ctx context.Context) error {
	var err error
	if e.loader, err = load.New(load.Config{Pool: e.pool}); err != nil {
		return err
	}
	if e.targetID, err = e.loader.Target(ctx, targetURL(e.cfg.rows), catalog.RootDomain); err != nil {
		return err
	}
	// B1 and B2 cannot create a partition: every arm starts with the month
	// partition there and empty.
	if err := e.loader.EnsurePartitions(ctx, e.ep, []time.Time{e.month}); err != nil {
		return err
	}
	var cols []string
	for _, f := range e.ep.Fields {
		cols = append(cols, pgx.Identifier{f.Name}.Sanitize()+" "+f.Kind.PGType())
	}
	if _, err := e.pool.Exec(ctx, fmt.Sprintf("CREATE UNLOGGED TABLE %s (%s)", stage, strings.Join(cols, ", "))); err != nil {
		return err
	}
	if _, err := e.runPSQL(ctx, e.copyCmd(stage, e.csv.path)); err != nil {
		return err
	}
	var rows int64
	keys := strings.Join(quoteAll(e.ep.Key), ", ")
	if err := e.pool.QueryRow(ctx, fmt.Sprintf("SELECT (SELECT count(*) FROM %s), (SELECT count(*) FROM (SELECT DISTINCT %s FROM %s) k)",
		stage, keys, stage)).Scan(&rows, &e.keys); err != nil {
		return err
	}
	if rows != e.csv.rows {
		return fmt.Errorf("psql read %d rows from the CSV, the sandbox sent %d", rows, e.csv.rows)
	}
	// The rows our upsert must leave: one per natural key, with the run's
	// target and month.
	want := fmt.Sprintf("(SELECT DISTINCT ON (%s) %d::bigint AS target_id, '%s'::date AS month, %s FROM %s ORDER BY %s)",
		keys, e.targetID, e.month.Format(time.DateOnly), e.fieldList(), stage, keys)
	if e.checksum, err = e.rowsChecksum(ctx, want); err != nil {
		return err
	}
	e.log.LogAttrs(ctx, slog.LevelInfo, "expected result", slog.Int64("rows", rows), slog.Int64("distinct_keys", e.keys),
		slog.String("checksum", e.checksum))
	return nil
}

// arms returns the arms, in turn order.
func (e *env) arms() []arm {
	return slices.Concat(e.psqlArms(), e.loadArms(), e.citusArms(), []arm{e.e2eArm()})
}

// psqlArms are the baselines B0, B1 and B2: psql's \copy, with and
// without the upsert.
func (e *env) psqlArms() []arm {
	psqlArm := func(cmds ...string) func(context.Context) (sample, error) {
		return func(ctx context.Context) (sample, error) {
			return e.runPSQL(ctx, cmds...)
		}
	}
	return []arm{
		{
			name:  "B0",
			what:  `psql \copy into an UNLOGGED table without indexes`,
			reset: e.resetting("TRUNCATE " + stage),
			run:   psqlArm(e.copyCmd(stage, e.csv.path)),
			check: func(ctx context.Context, _ sample, _ bool) error {
				return e.checkCount(ctx, stage, e.csv.rows)
			},
		},
		{
			name: "B1",
			what: `psql \copy into backlinks (target_id, month, observed_at from column defaults)`,
			reset: e.resetting("TRUNCATE backlinks", fmt.Sprintf(
				"ALTER TABLE backlinks ALTER target_id SET DEFAULT %d, ALTER month SET DEFAULT '%s', ALTER observed_at SET DEFAULT now()",
				e.targetID, e.month.Format(time.DateOnly))),
			run: psqlArm(e.copyCmd("backlinks", e.csv.path)),
			check: func(ctx context.Context, _ sample, warmUp bool) error {
				if _, err := e.pool.Exec(ctx, "ALTER TABLE backlinks ALTER target_id DROP DEFAULT, ALTER month DROP DEFAULT, ALTER observed_at DROP DEFAULT"); err != nil {
					return err
				}
				return e.checkBacklinks(ctx, warmUp)
			},
		},
		{
			name:  "B2",
			what:  `B0, then DISTINCT ON the key and INSERT ... ON CONFLICT into backlinks`,
			reset: e.resetting("TRUNCATE backlinks", "TRUNCATE "+stage),
			run:   psqlArm(e.copyCmd(stage, e.csv.path), e.upsertSQL()),
			check: func(ctx context.Context, _ sample, warmUp bool) error {
				return e.checkBacklinks(ctx, warmUp)
			},
		},
	}
}

// loadArms are P1 and P1u: the P1 process's first load, and its load
// over the loaded table.
func (e *env) loadArms() []arm {
	p1 := func(ctx context.Context) (sample, error) { return e.runChild(ctx, e.csv.path, e.targetID, nil) }
	return []arm{
		{
			name:  "P1",
			what:  fmt.Sprintf("pipeline.LoadCSV: CSV -> Arrow -> COPY (straight into the table on a first load, else staging + upsert), pages of %d", e.cfg.limit),
			reset: e.resetting("TRUNCATE backlinks"),
			run:   p1,
			check: func(ctx context.Context, s sample, warmUp bool) error {
				if err := e.checkFirstLoad(s.Load, ""); err != nil {
					return err
				}
				return e.checkBacklinks(ctx, warmUp)
			},
		},
		{
			name: "P1u",
			what: "P1 over the loaded table (every row a conflict, unchanged)",
			reset: func(ctx context.Context) error {
				var n int64
				if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM backlinks").Scan(&n); err != nil {
					return err
				}
				if n != e.keys { // P1 did not just run
					if _, err := e.pool.Exec(ctx, "TRUNCATE backlinks"); err != nil {
						return err
					}
					if _, err := p1(ctx); err != nil {
						return err
					}
				}
				// As autovacuum leaves a table between two runs.
				return e.resetting("VACUUM ANALYZE backlinks")(ctx)
			},
			run: p1,
			check: func(ctx context.Context, s sample, warmUp bool) error {
				if err := e.checkReload(s.Load, ""); err != nil {
					return err
				}
				return e.checkBacklinks(ctx, warmUp)
			},
		},
	}
}

// citusArms are P1c and P1uc: P1 and P1u on the Citus cluster of
// BENCH_CITUS_URL.
func (e *env) citusArms() []arm {
	return []arm{
		{
			name:  "P1c",
			what:  "P1 into backlinks distributed on the Citus cluster of BENCH_CITUS_URL (the coordinator's COPY fans out by shard)",
			reset: e.citusResetting("TRUNCATE backlinks"),
			run:   e.p1Citus,
			check: func(ctx context.Context, s sample, warmUp bool) error {
				if err := e.checkFirstLoad(s.Load, " on Citus"); err != nil {
					return err
				}
				return e.checkBacklinksOn(ctx, e.citus.pool, e.citus.targetID, warmUp)
			},
		},
		{
			name: "P1uc",
			what: "P1u on the Citus cluster of BENCH_CITUS_URL",
			reset: func(ctx context.Context) error {
				var n int64
				if err := e.citus.pool.QueryRow(ctx, "SELECT count(*) FROM backlinks").Scan(&n); err != nil {
					return err
				}
				if n != e.keys {
					if err := e.citusResetting("TRUNCATE backlinks")(ctx); err != nil {
						return err
					}
					if _, err := e.p1Citus(ctx); err != nil {
						return err
					}
				}
				return e.citusResetting("VACUUM ANALYZE backlinks")(ctx)
			},
			run: e.p1Citus,
			check: func(ctx context.Context, s sample, warmUp bool) error {
				if err := e.checkReload(s.Load, " on Citus"); err != nil {
					return err
				}
				return e.checkBacklinksOn(ctx, e.citus.pool, e.citus.targetID, warmUp)
			},
		},
	}
}

// e2eArm is E2E: etl run from the sandbox over HTTP.
func (e *env) e2eArm() arm {
	return arm{
		name:  "E2E",
		what:  "etl run (bin/etl) of links: {} (pages at the API's bound of limit) from the sandbox over HTTP",
		reset: e.resetting("TRUNCATE backlinks"),
		run:   e.runETL,
		check: func(ctx context.Context, _ sample, warmUp bool) error {
			return e.checkBacklinks(ctx, warmUp)
		},
	}
}

// checkFirstLoad fails when l, the P1 process's load into an empty table
// (where: "" or " on Citus"), did not read every row of the CSV and insert
// one per natural key, rejecting none.
func (e *env) checkFirstLoad(l *childResult, where string) error {
	if l.Rows != e.csv.rows || l.Rejected != 0 || l.Inserted != e.keys {
		return fmt.Errorf("LoadCSV%s read %d rows (%d rejected) and inserted %d, want %d rows, none rejected, %d inserted",
			where, l.Rows, l.Rejected, l.Inserted, e.csv.rows, e.keys)
	}
	return nil
}

// checkReload fails when l, the P1 process's load over the loaded table
// (where: "" or " on Citus"), did not read every row of the CSV, or
// rejected, inserted or updated any.
func (e *env) checkReload(l *childResult, where string) error {
	if l.Rows != e.csv.rows || l.Rejected != 0 || l.Inserted != 0 || l.Updated != 0 {
		return fmt.Errorf("LoadCSV over the loaded table%s read %d rows (%d rejected), inserted %d and updated %d, want %d rows, none rejected, inserted or updated",
			where, l.Rows, l.Rejected, l.Inserted, l.Updated, e.csv.rows)
	}
	return nil
}

// resetting returns a reset that runs stmts, then a CHECKPOINT so that no
// arm pays for the dirty buffers of the one before.
func (e *env) resetting(stmts ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, s := range append(stmts, "CHECKPOINT") {
			if _, err := e.pool.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	}
}

// copyCmd is psql's \copy of the CSV into table's field columns. Text
// cells are never NULL (FORCE_NOT_NULL), as transform reads them: an empty
// cell is the empty string; an empty cell of another type is NULL in both.
func (e *env) copyCmd(table, path string) string {
	var text []string
	for _, f := range e.ep.Fields {
		if f.Kind == catalog.Text {
			text = append(text, pgx.Identifier{f.Name}.Sanitize())
		}
	}
	return fmt.Sprintf(`\copy %s (%s) FROM '%s' WITH (FORMAT csv, HEADER true, DELIMITER ';', FORCE_NOT_NULL (%s))`,
		table, e.fieldList(), strings.ReplaceAll(path, "'", "''"), strings.Join(text, ", "))
}

// upsertSQL is B2's move from the staging table into backlinks: one row
// per natural key (the CSV has no duplicate key, so which one is moot), and
// our upsert's conflict clause (load.upsertSQL): update only when a value
// changed and the observation is not older.
func (e *env) upsertSQL() string {
	var set, oldVals, newVals []string
	for _, f := range e.ep.Fields {
		q := pgx.Identifier{f.Name}.Sanitize()
		if isKeyField(e.ep, f.Name) {
			continue
		}
		set = append(set, fmt.Sprintf("%s = EXCLUDED.%s", q, q))
		oldVals = append(oldVals, "t."+q)
		newVals = append(newVals, "EXCLUDED."+q)
	}
	set = append(set, "observed_at = EXCLUDED.observed_at")
	keys := strings.Join(quoteAll(e.ep.Key), ", ")
	return fmt.Sprintf(`INSERT INTO backlinks AS t (target_id, month, observed_at, %[1]s)
SELECT DISTINCT ON (%[2]s) %[3]d, '%[4]s'::date, now(), %[1]s FROM %[5]s ORDER BY %[2]s
ON CONFLICT (%[6]s) DO UPDATE SET %[7]s
WHERE (%[8]s) IS DISTINCT FROM (%[9]s) AND EXCLUDED.observed_at >= t.observed_at`,
		e.fieldList(), keys, e.targetID, e.month.Format(time.DateOnly), stage,
		strings.Join(quoteAll(load.ConflictKey(e.ep)), ", "), strings.Join(set, ", "),
		strings.Join(oldVals, ", "), strings.Join(newVals, ", "))
}

func isKeyField(ep *catalog.Endpoint, name string) bool {
	for _, k := range ep.Key {
		if k == name {
			return true
		}
	}
	return false
}

func (e *env) fieldList() string { return strings.Join(quoteAll(e.fields), ", ") }

func quoteAll(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = pgx.Identifier{n}.Sanitize()
	}
	return q
}

// rowsChecksum is an order-independent checksum of relation's rows: their
// target, month and fields (not observed_at, which differs from run to
// run), each row's text hashed and the hashes summed.
func (e *env) rowsChecksum(ctx context.Context, relation string) (string, error) {
	return e.rowsChecksumOn(ctx, e.pool, relation)
}

// rowsChecksumOn is rowsChecksum in the database of pool.
func (e *env) rowsChecksumOn(ctx context.Context, pool *pgxpool.Pool, relation string) (string, error) {
	var sum string
	err := pool.QueryRow(ctx, fmt.Sprintf(
		"SELECT count(*) || ':' || coalesce(sum(('x' || left(md5(ROW(target_id, month, %s)::text), 15))::bit(60)::bigint), 0) FROM %s r",
		e.fieldList(), relation)).Scan(&sum)
	return sum, err
}

func (e *env) checkCount(ctx context.Context, table string, want int64) error {
	return checkCountOn(ctx, e.pool, table, want)
}

func checkCountOn(ctx context.Context, pool *pgxpool.Pool, table string, want int64) error {
	var n int64
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("%s holds %d rows, want %d", table, n, want)
	}
	return nil
}

// checkBacklinks checks that backlinks holds one row per distinct key of
// the CSV, and with withSum that they are the rows psql reads from it.
func (e *env) checkBacklinks(ctx context.Context, withSum bool) error {
	return e.checkBacklinksOn(ctx, e.pool, e.targetID, withSum)
}

// checkBacklinksOn is checkBacklinks in the database of pool, whose
// target of the CSV is targetID.
func (e *env) checkBacklinksOn(ctx context.Context, pool *pgxpool.Pool, targetID int64, withSum bool) error {
	if err := checkCountOn(ctx, pool, "backlinks", e.keys); err != nil {
		return fmt.Errorf("%w (the distinct natural keys of the CSV)", err)
	}
	if !withSum {
		return nil
	}
	// The checksum names the target: the same id in both databases.
	if targetID != e.targetID {
		return fmt.Errorf("the target is %d there and %d here: the checksums would differ", targetID, e.targetID)
	}
	sum, err := e.rowsChecksumOn(ctx, pool, "backlinks")
	if err != nil {
		return err
	}
	if sum != e.checksum {
		return fmt.Errorf("the rows of backlinks differ from the CSV's as psql reads it: checksum %s, want %s", sum, e.checksum)
	}
	return nil
}

// runPSQL runs psql with each of cmds (-c) in one session and returns how
// long the process took and the CPU it used.
func (e *env) runPSQL(ctx context.Context, cmds ...string) (sample, error) {
	args := []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", e.dbURL}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	cmd := exec.CommandContext(ctx, e.psql, args...)
	// Timestamps without a zone are UTC, as transform reads them.
	cmd.Env = append(withoutEnv("PG"), "PGTZ=UTC", "PGCLIENTENCODING=UTF8")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	began := time.Now()
	err := cmd.Run()
	s := sample{Seconds: time.Since(began).Seconds(), CPUSeconds: cpuSeconds(cmd.ProcessState)}
	if err != nil {
		return s, fmt.Errorf("psql: %w\n%s", err, tail(out.String(), 20))
	}
	return s, nil
}

// cpuSeconds is the user and system time of an exited process.
func cpuSeconds(ps *os.ProcessState) float64 {
	if ps == nil {
		return 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds()
}

// runChild runs the P1 arm in a process of its own: the bench binary in
// child mode, loading file as targetID's rows. extra are more flags.
func (e *env) runChild(ctx context.Context, file string, targetID int64, extra []string) (sample, error) {
	return e.runChildOn(ctx, e.dbURL, file, targetID, extra)
}

// runChildOn is runChild into the database of dbURL.
func (e *env) runChildOn(ctx context.Context, dbURL, file string, targetID int64, extra []string) (sample, error) {
	self, err := os.Executable()
	if err != nil {
		return sample{}, err
	}
	args := append([]string{childMode, "-db", dbURL, "-file", file, "-target", fmt.Sprint(targetID),
		"-month", e.month.Format(time.DateOnly), "-page", fmt.Sprint(e.cfg.limit)}, extra...)
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = withoutEnv("PG")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	u, err := runMeasured(cmd, e.dir)
	s := sample{Seconds: u.Seconds, CPUSeconds: u.CPUSeconds}
	if err != nil {
		return s, fmt.Errorf("P1 process: %w\n%s", err, tail(stderr.String(), 20))
	}
	s.PeakRSSMB = u.PeakRSSMB
	var res childResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return s, fmt.Errorf("P1 process: reading its result %q: %w", stdout.String(), err)
	}
	s.Load = &res
	return s, nil
}

// runETL is the E2E arm: `etl run` of a job loading the links of the
// target from the sandbox, without a limit: in pages as large as the API
// allows (the sandbox's default bound, learned by the warm-up run and
// remembered in api_bounds), counting the requests the sandbox was asked.
func (e *env) runETL(ctx context.Context) (sample, error) {
	jobs := filepath.Join(e.dir, "jobs.yaml")
	spec := fmt.Sprintf("jobs:\n  - name: bench\n    targets: [{url: %s, scope: ROOT_DOMAIN}]\n    endpoints: {links: {}}\n",
		targetURL(e.cfg.rows))
	if err := os.WriteFile(jobs, []byte(spec), 0o600); err != nil {
		return sample{}, err
	}
	cmd := exec.CommandContext(ctx, e.cfg.etl, "--log-format", "json", "run", "--jobs", jobs, "--job", "bench", "--now", now)
	cmd.Env = append(withoutEnv("PG", "DATABASE_URL=", "ETL_"), "DATABASE_URL="+e.dbURL, "ETL_API_URL="+e.apiURL, "ETL_API_KEY="+apiKey)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	before := e.sandbox.Usage(apiKey)
	u, err := runMeasured(cmd, e.dir)
	s := sample{Seconds: u.Seconds, CPUSeconds: u.CPUSeconds}
	if err != nil {
		return s, fmt.Errorf("etl run: %w\nstdout:\n%s\nstderr:\n%s", err, tail(stdout.String(), 20), tail(stderr.String(), 20))
	}
	s.PeakRSSMB = u.PeakRSSMB
	after := e.sandbox.Usage(apiKey)
	s.Refused = after.FailedRequests - before.FailedRequests
	s.Requests = after.Requests - before.Requests + s.Refused
	s.APIBoundSeconds = float64(s.Requests) / catalog.AccountRequestsPerSecond
	return s, nil
}

// withoutEnv is this process's environment without the variables whose
// names start with one of prefixes.
func withoutEnv(prefixes ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		drop := false
		for _, p := range prefixes {
			drop = drop || strings.HasPrefix(kv, p)
		}
		if !drop {
			env = append(env, kv)
		}
	}
	return env
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
