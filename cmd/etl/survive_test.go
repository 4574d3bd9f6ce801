package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
)

// etlBinary builds the etl command into a temporary directory.
func etlBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "etl")
	out, err := exec.Command(goTool(), "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "building etl: %s", out)
	return bin
}

// etlProcess is `etl ARGS` started as a process of its own.
type etlProcess struct {
	cmd    *exec.Cmd
	lines  chan string // stderr, line by line; closed at its end
	stdout strings.Builder
}

func startETL(t *testing.T, bin string, env map[string]string, args ...string) *etlProcess {
	t.Helper()
	p := &etlProcess{cmd: exec.Command(bin, args...), lines: make(chan string, 1024)}
	p.cmd.Env = os.Environ()
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout = &p.stdout
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	return p
}

// wait drains stderr and waits for the process; it returns the exit code
// (-1 when killed) and stderr.
func (p *etlProcess) wait() (int, string) {
	var stderr strings.Builder
	for l := range p.lines {
		stderr.WriteString(l + "\n")
	}
	_ = p.cmd.Wait()
	return p.cmd.ProcessState.ExitCode(), stderr.String()
}

// killAfterPages SIGKILLs p once its log (at --log-level debug) says it
// loaded n pages, unless it ends before; it returns the pages it saw
// loaded.
func (p *etlProcess) killAfterPages(t *testing.T, n int) int {
	t.Helper()
	seen := 0
	for l := range p.lines {
		if strings.Contains(l, `"msg":"page loaded"`) {
			if seen++; seen == n {
				require.NoError(t, p.cmd.Process.Kill())
				break
			}
		}
	}
	return seen
}

// factHashes digests every fact table and the quarantine, every column of
// every row.
func factHashes(t *testing.T, dbURL string) map[string]string {
	t.Helper()
	tables := []string{"quarantine"}
	for _, ep := range catalog.All() {
		tables = append(tables, ep.Table)
	}
	return tableHashes(t, dbURL, tables...)
}

// tableHashes digests each of the tables, every column of every row.
func tableHashes(t *testing.T, dbURL string, tables ...string) map[string]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	out := map[string]string{}
	for _, table := range tables {
		var h string
		var n int64
		require.NoError(t, conn.QueryRow(ctx, fmt.Sprintf(
			`SELECT md5(coalesce(string_agg(r::text, E'\n' ORDER BY r::text), '')), count(*) FROM %s r`, table)).Scan(&h, &n))
		out[table] = fmt.Sprintf("%s (%d rows)", h, n)
	}
	return out
}

func ledgerUnits(t *testing.T, dbURL string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`).Scan(&n))
	return n
}

// The job of the crash tests: paged lists with many small pages, so that a
// kill lands in the middle of the run, and single-request tasks.
const surviveSpec = `jobs:
  - name: survive
    targets:
      - {url: n700.example, scope: ROOT_DOMAIN}
      - {url: n450.example, scope: ROOT_DOMAIN}
    endpoints:
      overview: {}
      links: {limit: 40}
      ref-domains: {limit: 25}
      summary: {limit: 6}
    keywords: {keywords: [seo, backlinks], countries: [US, DE]}
`

// TestKilledRunsResumeToTheTablesOfACleanRun kills `etl run` (SIGKILL) at
// random points, once or twice per trial, then runs it again to the end.
// Every fact table must then equal a clean run's, the ledger must never be
// below what the sandbox charged, and the resumed runs must not pay again
// for the pages that committed before a kill: at most the pages in flight
// at each kill are paid twice.
func TestKilledRunsResumeToTheTablesOfACleanRun(t *testing.T) {
	t.Parallel()
	const key, now, concurrency = "sk-survive", "2026-11-21T03:00:00Z", 4
	bin := etlBinary(t)
	sb, apiURL := sandboxFor(t, key)
	jobs := writeSpec(t, surviveSpec)
	args := []string{"--log-format", "json", "--log-level", "debug", "run", "--jobs", jobs, "--now", now,
		"--concurrency", fmt.Sprint(concurrency)}
	env := func(db string) map[string]string {
		return map[string]string{"DATABASE_URL": db, "ETL_API_URL": apiURL, "ETL_API_KEY": key}
	}
	pages := func(stderr string) int { return strings.Count(stderr, `"msg":"page loaded"`) }

	cleanDB := pgtest.NewDB(t)
	code, stderr := startETL(t, bin, env(cleanDB), args...).wait()
	require.Equal(t, exitOK, code, stderr)
	want := factHashes(t, cleanDB)
	cleanUnits := sb.Usage(key).UnitsSpent
	cleanPages := pages(stderr)
	require.Greater(t, cleanPages, 30, "the job must have enough pages to be killed in the middle")
	// The dearest page: links at 40 lines.
	worstPage := int64(40) * catalogPrice(t, "links")

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d; a clean run loads %d pages for %d units", seed, cleanPages, cleanUnits)
	for trial := range 3 {
		db := pgtest.NewDB(t)
		before := sb.Usage(key).UnitsSpent
		kills, finished := 1+rng.IntN(2), false
		loaded := 0
		for k := range kills {
			// Kill once the k-th attempt has loaded a random number of
			// pages: at a random point of the page or pages then in flight.
			after := 1 + rng.IntN(max(cleanPages-loaded-1, 1))
			p := startETL(t, bin, env(db), args...)
			seen := p.killAfterPages(t, after)
			code, _ := p.wait()
			loaded += seen
			t.Logf("trial %d, attempt %d: killed after %d pages (exit %d)", trial, k+1, seen, code)
			if code == exitOK { // it committed its last pages before the kill
				finished = true
				break
			}
		}
		if !finished {
			code, stderr := startETL(t, bin, env(db), args...).wait()
			require.Equal(t, exitOK, code, stderr)
		}
		require.Equal(t, want, factHashes(t, db), "trial %d: the tables differ from a clean run's", trial)

		charged := sb.Usage(key).UnitsSpent - before
		require.GreaterOrEqual(t, ledgerUnits(t, db), charged, "trial %d: the ledger counts less than the sandbox charged", trial)
		require.LessOrEqual(t, charged, cleanUnits+int64(kills*concurrency)*worstPage,
			"trial %d: the resumed runs paid again for pages that had committed", trial)

		var runs, attempts int
		conn, err := pgx.Connect(t.Context(), db)
		require.NoError(t, err)
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*), max(attempts) FROM runs WHERE status = 'succeeded'`).Scan(&runs, &attempts))
		require.NoError(t, conn.Close(t.Context()))
		require.Equal(t, 1, runs, "trial %d: one run, resumed", trial)
		// What the run says it loaded per table counts each committed row
		// once over its attempts: on an empty warehouse, every row of a
		// table was inserted by it.
		inserted := map[string]int64{}
		conn, err = pgx.Connect(t.Context(), db)
		require.NoError(t, err)
		rows, err := conn.Query(t.Context(), `SELECT table_name, inserted, updated, unchanged, quarantined, rows FROM run_tables`)
		require.NoError(t, err)
		for rows.Next() {
			var name string
			var ins, upd, unch, quar, n int64
			require.NoError(t, rows.Scan(&name, &ins, &upd, &unch, &quar, &n))
			require.Equal(t, n, ins+upd+unch+quar, "trial %d: %s", trial, name)
			inserted[name] = ins
		}
		require.NoError(t, rows.Err())
		for name := range inserted {
			var n int64
			require.NoError(t, conn.QueryRow(t.Context(), fmt.Sprintf(`SELECT count(*) FROM %s`, name)).Scan(&n))
			require.Equal(t, n, inserted[name], "trial %d: %s: inserted, over the attempts, is what the table holds", trial, name)
		}
		require.NoError(t, conn.Close(t.Context()))
		t.Logf("trial %d: %d kills, the sandbox charged %d units (clean run: %d), the run took %d attempts", trial, kills, charged, cleanUnits, attempts)
	}
}

func catalogPrice(t *testing.T, name string) int64 {
	t.Helper()
	ep, ok := catalog.Lookup(name)
	require.True(t, ok)
	return ep.Price.Units
}
