package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/export"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/sandbox"
)

// duckdbAPI is @duckdb/node-api's entry point, which `make duckdb`
// installs; the tests read the lake back with it, a reader that shares no
// code with the writer.
func duckdbAPI(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../bin/tools/duckdb/node_modules/@duckdb/node-api/lib/index.js")
	require.NoError(t, err)
	if !fileExists(p) {
		t.Fatalf("DuckDB's node package is missing (%s): run `make duckdb` (make test does)", p)
	}
	return p
}

// duckdb runs each of sqls in DuckDB (testdata/duckq.mjs) and returns
// their rows.
func duckdb(t *testing.T, sqls ...string) [][]map[string]any {
	t.Helper()
	in, err := json.Marshal(sqls)
	require.NoError(t, err)
	cmd := exec.Command("node", "testdata/duckq.mjs")
	cmd.Env = append(os.Environ(), "DUCKDB_NODE_API="+duckdbAPI(t))
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "duckdb: %s", stderr.String())
	var out [][]map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out))
	return out
}

// lakeSpec collects a little of everything into monthly and yearly
// tables: links (by month), overview, history and keyword metrics (by
// year), and a matrix of a target set (by month).
const lakeSpec = `jobs:
  - name: lake
    targets: [{url: example.com, scope: ROOT_DOMAIN}, {url: n250.example, scope: ROOT_DOMAIN}%s]
    target_sets: [{name: rivals, scope: ROOT_DOMAIN, urls: [example.com, rival-a.example]}]
    endpoints:
      overview: {}
      summary: {limit: 3}
      links: {limit: 100, max_rows: 200}
      matrix: {limit: 100, max_rows: 100}
    keywords: {keywords: [seo, "café près de moi"], countries: [US]}
`

// lakeMonths are the months the lake's warehouse is loaded in, a run each.
var lakeMonths = []time.Time{
	time.Date(2026, 9, 15, 3, 0, 0, 0, time.UTC),
	time.Date(2026, 10, 15, 3, 0, 0, 0, time.UTC),
	time.Date(2026, 11, 15, 3, 0, 0, 0, time.UTC),
}

// lakeWarehouse is a warehouse loaded by a run in each of lakeMonths, and
// the sandbox (whose clock follows the runs) to run more.
type lakeWarehouse struct {
	env map[string]string
	now atomic.Pointer[time.Time]
}

func newLakeWarehouse(t *testing.T) *lakeWarehouse {
	t.Helper()
	const key = "lake-key"
	w := &lakeWarehouse{}
	w.now.Store(&lakeMonths[0])
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return *w.now.Load() }, APIKeys: []string{key}})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	w.env = map[string]string{"DATABASE_URL": pgtest.NewDB(t), "ETL_API_URL": srv.URL, "ETL_API_KEY": key}
	r := etl(t, w.env, "migrate", "up") // and the comments of the tables, which the export carries
	require.Equal(t, exitOK, r.code, r.stderr)
	for _, m := range lakeMonths {
		w.run(t, m, "")
	}
	return w
}

// run runs the job lake at now, with extra targets.
func (w *lakeWarehouse) run(t *testing.T, now time.Time, extraTargets string) {
	t.Helper()
	w.now.Store(&now)
	jobs := writeSpec(t, fmt.Sprintf(lakeSpec, extraTargets))
	r := etl(t, w.env, "run", "--jobs", jobs, "--job", "lake", "--now", now.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
}

// pgColumns lists the columns of table that an export writes: all but
// the generated ones, with their types.
func pgColumns(t *testing.T, conn *pgx.Conn, table string) (names, types []string) {
	t.Helper()
	rows, err := conn.Query(t.Context(), `
		SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
		ORDER BY a.attnum`, table)
	require.NoError(t, err)
	var n, ty string
	_, err = pgx.ForEachRow(rows, []any{&n, &ty}, func() error {
		names, types = append(names, n), append(types, ty)
		return nil
	})
	require.NoError(t, err)
	return names, types
}

// checksumSQL is a query of the row count and, per column, its count of
// non-NULL values and an order-independent checksum (the sum of the first
// 60 bits of the md5 of each value's text), in PostgreSQL's dialect
// (duck false) or DuckDB's. Each value is written as text the same way in
// both: timestamps as microseconds since the epoch, lists joined by 0x1f
// with their length.
func checksumSQL(from string, names, types []string, duck bool) string {
	parts := []string{"count(*)::text AS n"}
	for i, c := range names {
		q := `"` + c + `"`
		var text string
		switch {
		case types[i] == "timestamp with time zone" && duck:
			text = fmt.Sprintf("epoch_us(%s)::VARCHAR", q)
		case types[i] == "timestamp with time zone":
			text = fmt.Sprintf("(extract(epoch FROM %s) * 1000000)::bigint::text", q)
		case strings.HasSuffix(types[i], "[]") && duck:
			text = fmt.Sprintf("array_to_string(%s, chr(31)) || '#' || len(%s)::VARCHAR", q, q)
		case strings.HasSuffix(types[i], "[]"):
			text = fmt.Sprintf("array_to_string(%s, E'\\x1f') || '#' || cardinality(%s)::text", q, q)
		case duck:
			text = q + "::VARCHAR"
		default:
			text = q + "::text"
		}
		hash := fmt.Sprintf("('x' || substr(md5(%s), 1, 15))::bit(60)::bigint", text)
		if duck {
			hash = fmt.Sprintf("('0x' || substr(md5(%s), 1, 15))::BIGINT", text)
		}
		cast := "::text"
		if duck {
			cast = "::VARCHAR"
		}
		parts = append(parts, fmt.Sprintf("count(%s)%s AS %s, coalesce(sum(%s), 0)%s AS %s",
			q, cast, `"n_`+c+`"`, hash, cast, `"sum_`+c+`"`))
	}
	return "SELECT " + strings.Join(parts, ", ") + " FROM " + from
}

// requireLakeEqualsWarehouse reads every table of the lake in dir with
// DuckDB and requires its row count and every column's checksum to equal
// PostgreSQL's for the same table.
func requireLakeEqualsWarehouse(t *testing.T, dbURL, dir string) {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var sqls, tables []string
	var want []map[string]any
	for _, table := range export.Tables() {
		names, types := pgColumns(t, conn, table)
		rows, err := conn.Query(ctx, checksumSQL(pgx.Identifier{table}.Sanitize(), names, types, false))
		require.NoError(t, err)
		got, err := pgx.CollectExactlyOneRow(rows, pgx.RowToMap)
		require.NoError(t, err)
		if got["n"] == "0" {
			// No partition, no file: the job collects nothing of it.
			files, err := filepath.Glob(filepath.Join(dir, table, "*", "*.parquet"))
			require.NoError(t, err)
			require.Empty(t, files, "table %s is empty", table)
			continue
		}
		want, tables = append(want, got), append(tables, table)
		// hive_partitioning off: the columns compared are the files' own.
		sqls = append(sqls, checksumSQL(fmt.Sprintf("read_parquet('%s/%s/**/*.parquet', hive_partitioning = false)", dir, table), names, types, true))
	}
	got := duckdb(t, sqls...)
	require.Contains(t, tables, "backlinks")
	for i, table := range tables {
		require.Len(t, got[i], 1)
		require.Equal(t, want[i], got[i][0], "table %s: DuckDB's counts and checksums of the lake (+) differ from PostgreSQL's (-)", table)
	}
}

// lakeFiles maps every file under dir (relative, slash-separated) to its
// SHA-256 and modification time.
func lakeFiles(t *testing.T, dir string) (sums map[string]string, mtimes map[string]time.Time) {
	t.Helper()
	sums, mtimes = map[string]string{}, map[string]time.Time{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		h := sha256.Sum256(data)
		sums[filepath.ToSlash(rel)] = hex.EncodeToString(h[:])
		mtimes[filepath.ToSlash(rel)] = st.ModTime()
		return nil
	}))
	return sums, mtimes
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestExportLakeEqualsWarehouseAndIsIncremental: an export of a warehouse
// with three months of data writes a Hive-style folder per partition
// (monthly and yearly tables) and the dimensions, which DuckDB reads back
// with the row counts and column checksums of PostgreSQL, pruning by
// folder; the files are zstd-compressed with statistics, UTC timestamps
// and the warehouse's comments. A second export writes no file; after a
// rerun that adds a target in November, only the files of partitions
// holding November (and the targets) are written again, and the lake
// still equals the warehouse.
func TestExportLakeEqualsWarehouseAndIsIncremental(t *testing.T) {
	t.Parallel()
	w := newLakeWarehouse(t)
	dir := t.TempDir()

	r := etl(t, w.env, "export", "--to", dir)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "partitions unchanged")
	sums, mtimes := lakeFiles(t, dir)
	for _, f := range []string{
		"backlinks/month=2026-09-01/part-0.parquet", "backlinks/month=2026-10-01/part-0.parquet", "backlinks/month=2026-11-01/part-0.parquet",
		"backlinks/_manifest.json", "backlink_overview/year=2026/part-0.parquet", "keyword_metrics/year=2026/part-0.parquet",
		"matrix/month=2026-11-01/part-0.parquet", "targets/part-0.parquet", "target_sets/part-0.parquet", "target_set_members/part-0.parquet",
	} {
		require.Contains(t, sums, f, "the lake's files: %v", keys(sums))
	}
	for _, f := range keys(sums) {
		require.NotContains(t, f, ".etl-tmp-", "a temporary file is left")
	}
	requireLakeEqualsWarehouse(t, w.env["DATABASE_URL"], dir)

	// The manifest lists each file with its rows and checksum.
	var m export.Manifest
	data, err := os.ReadFile(filepath.Join(dir, "backlinks", export.ManifestName))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &m))
	require.Equal(t, "month", m.Layout)
	require.Len(t, m.Files, 3)
	var rows int64
	for _, f := range m.Files {
		require.Equal(t, sums["backlinks/"+f.Path], f.SHA256, f.Path)
		rows += f.Rows
	}
	require.Equal(t, m.Rows, rows)

	// What the files say of themselves, as DuckDB reads it.
	links := filepath.Join(dir, "backlinks/month=2026-11-01/part-0.parquet")
	got := duckdb(t,
		fmt.Sprintf(`SELECT DISTINCT compression FROM parquet_metadata('%s') ORDER BY 1`, links),
		fmt.Sprintf(`SELECT count(*) AS n FROM parquet_metadata('%s') WHERE path_in_schema = 'target_id' AND stats_min IS NULL`, links),
		fmt.Sprintf(`SELECT logical_type FROM parquet_schema('%s') WHERE name = 'observed_at'`, links),
		fmt.Sprintf(`SELECT value::VARCHAR AS v FROM parquet_kv_metadata('%s') WHERE key::VARCHAR = 'comment.month'`, links),
		fmt.Sprintf(`SELECT DISTINCT typeof(month) AS t FROM read_parquet('%s/backlinks/*/*.parquet', hive_partitioning = true)`, dir),
		fmt.Sprintf(`SELECT typeof(observed_at) AS t FROM read_parquet('%s') LIMIT 1`, links),
		// Pruning: a filter on the partition folder reads one file of three.
		fmt.Sprintf(`EXPLAIN ANALYZE SELECT count(*) FROM read_parquet('%s/backlinks/*/*.parquet', hive_partitioning = true) WHERE month = DATE '2026-10-01'`, dir),
	)
	require.Equal(t, []map[string]any{{"compression": "ZSTD"}}, got[0])
	require.Equal(t, []map[string]any{{"n": "0"}}, got[1], "every row group has statistics of target_id")
	require.Contains(t, fmt.Sprint(got[2]), "isAdjustedToUTC=1")
	require.Contains(t, fmt.Sprint(got[3]), "first day of the month")
	require.Equal(t, []map[string]any{{"t": "DATE"}}, got[4], "the folders' month is the files' (a date)")
	require.Equal(t, []map[string]any{{"t": "TIMESTAMP WITH TIME ZONE"}}, got[5])
	require.Contains(t, fmt.Sprint(got[6]), "Scanning Files: 1/3")

	// The queries of docs/lake.md, on this lake.
	doc, err := os.ReadFile("../../docs/lake.md")
	require.NoError(t, err)
	query := string(doc)[strings.Index(string(doc), "-- links per month and target"):]
	query = query[:strings.Index(query, ";")]
	kv := string(doc)[strings.Index(string(doc), "-- a table's comment and a column's"):]
	kv = kv[:strings.Index(kv, ";")]
	inLake := strings.NewReplacer("'lake/", "'"+dir+"/")
	got = duckdb(t, inLake.Replace(query), "EXPLAIN ANALYZE "+inLake.Replace(query), inLake.Replace(kv))
	require.Len(t, got[0], 4, "docs/lake.md's query: two targets, two months")
	require.Contains(t, fmt.Sprint(got[1]), "Scanning Files: 2/3", "docs/lake.md says the query reads two files of three")
	require.Len(t, got[2], 2, "docs/lake.md's comments")

	// A second export, nothing changed: no file written.
	r = etl(t, w.env, "export", "--to", dir)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, ": 0 files written (0 rows, 0 B)")
	sums2, mtimes2 := lakeFiles(t, dir)
	require.Equal(t, sums, sums2)
	require.Equal(t, mtimes, mtimes2, "an export with nothing changed writes no file")

	// A rerun in November with one more target: only what holds November
	// changes.
	w.run(t, lakeMonths[2].Add(time.Hour), ", {url: n40.example, scope: ROOT_DOMAIN}")
	r = etl(t, w.env, "export", "--to", dir)
	require.Equal(t, exitOK, r.code, r.stderr)
	sums3, mtimes3 := lakeFiles(t, dir)
	var rewritten []string
	for _, f := range keys(sums3) {
		if !mtimes3[f].Equal(mtimes[f]) {
			rewritten = append(rewritten, f)
		}
	}
	require.Equal(t, []string{
		"backlink_history/_manifest.json", "backlink_history/year=2026/part-0.parquet",
		"backlink_overview/_manifest.json", "backlink_overview/year=2026/part-0.parquet",
		"backlinks/_manifest.json", "backlinks/month=2026-11-01/part-0.parquet",
		"targets/_manifest.json", "targets/part-0.parquet",
	}, rewritten)
	requireLakeEqualsWarehouse(t, w.env["DATABASE_URL"], dir)
}

// TestKilledExportsLeaveTheFilesOfACleanExport kills `etl export`
// (SIGKILL) at a random batch of rows, once or twice per trial, with
// row groups and batches small enough that the kill lands inside a file
// as often as between two, then exports again to the end: the folder
// must hold exactly the files of a clean export, byte for byte, no
// temporary file, and DuckDB must read the warehouse's rows.
func TestKilledExportsLeaveTheFilesOfACleanExport(t *testing.T) {
	t.Parallel()
	bin := etlBinary(t)
	w := newLakeWarehouse(t)
	clean := t.TempDir()
	r := etl(t, w.env, "export", "--to", clean, "--row-group-rows", "40", "--fetch-rows", "30")
	require.Equal(t, exitOK, r.code, r.stderr)
	want, _ := lakeFiles(t, clean)

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	args := []string{"--log-format", "json", "--log-level", "debug", "export", "--row-group-rows", "40", "--fetch-rows", "30"}
	// The batches of a whole export, counted on a run of its own.
	count := startETL(t, bin, w.env, append(args, "--to", t.TempDir())...)
	total := 0
	for line := range count.lines {
		if strings.Contains(line, `"export: batch read"`) {
			total++
		}
	}
	code, _ := count.wait()
	require.Equal(t, exitOK, code)
	require.Greater(t, total, 20, "batches of an export")

	for trial := range 2 {
		dir := t.TempDir()
		kills := 1 + rng.IntN(2)
		for k := range kills {
			at := 1 + rng.IntN(total-1)
			p := startETL(t, bin, w.env, append(args, "--to", dir)...)
			seen, killed := 0, false
			for line := range p.lines {
				if !killed && strings.Contains(line, `"export: batch read"`) {
					if seen++; seen == at {
						require.NoError(t, p.cmd.Process.Kill())
						killed = true
					}
				}
			}
			_ = p.cmd.Wait()
			t.Logf("trial %d, attempt %d: killed at batch %d of %d (killed: %v)", trial, k+1, at, total, killed)
		}
		// What a reader sees after the kills: every file by its final name
		// whole, as a clean export wrote it (temporary files aside).
		left, _ := lakeFiles(t, dir)
		for f, sum := range left {
			if strings.HasSuffix(f, ".parquet") {
				require.Equal(t, want[f], sum, "trial %d: %s is not whole after the kill", trial, f)
			}
		}
		code, stderr := startETL(t, bin, w.env, append(args, "--to", dir)...).wait()
		require.Equal(t, exitOK, code, stderr)
		got, _ := lakeFiles(t, dir)
		// The manifests say when each file was written: compare the
		// Parquet files byte for byte, and the manifests' names.
		for _, sums := range []map[string]string{want, got} {
			for f := range sums {
				if strings.HasSuffix(f, export.ManifestName) {
					sums[f] = "manifest"
				}
			}
		}
		require.Equal(t, want, got, "trial %d: the lake differs from a clean export's", trial)
		requireLakeEqualsWarehouse(t, w.env["DATABASE_URL"], dir)
	}
}

// TestRetentionExportsWhatItDrops: with `retention: {export_to: DIR}`,
// retention writes each partition to the lake before it drops it (the
// files hold the rows the warehouse held), and a partition that cannot be
// exported is not dropped.
func TestRetentionExportsWhatItDrops(t *testing.T) {
	t.Parallel()
	w := newLakeWarehouse(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, w.env["DATABASE_URL"])
	require.NoError(t, err)
	defer conn.Close(context.Background())
	count := func(table string) int64 {
		var n int64
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n))
		return n
	}
	partitions := func() int64 {
		return count(`pg_inherits WHERE inhparent = 'backlinks'::regclass`)
	}
	old := count(`backlinks WHERE month < '2026-11-01'`)
	require.Positive(t, old)
	require.EqualValues(t, 3, partitions())
	spec := func(dir string) string {
		return writeSpec(t, fmt.Sprintf(lakeSpec, "")+fmt.Sprintf("retention: {keep_months: 1, export_to: %q}\n", dir))
	}
	now := lakeMonths[2].Format(time.RFC3339)

	// A lake that cannot be written (its folder is a file): nothing dropped.
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	r := etl(t, w.env, "retention", "--jobs", spec(filepath.Join(blocker, "lake")), "--now", now)
	require.NotEqual(t, exitOK, r.code)
	require.Contains(t, r.stderr, "before dropping backlinks_p202609")
	require.EqualValues(t, 3, partitions(), "a partition that did not export is not dropped")
	require.Equal(t, old, count(`backlinks WHERE month < '2026-11-01'`))

	// Exported before: retention writes those files no more.
	dir := t.TempDir()
	r = etl(t, w.env, "export", "--to", dir, "--tables", "backlinks", "--until", "2026-10")
	require.Equal(t, exitOK, r.code, r.stderr)
	_, before := lakeFiles(t, dir)
	r = etl(t, w.env, "retention", "--jobs", spec(dir), "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	_, after := lakeFiles(t, dir)
	for _, f := range []string{"backlinks/month=2026-09-01/part-0.parquet", "backlinks/month=2026-10-01/part-0.parquet"} {
		require.Contains(t, before, f)
		require.Equal(t, before[f], after[f], "%s was exported before and is unchanged: not written again", f)
	}
	require.Contains(t, r.stdout, "backlinks: dropped backlinks_p202609, backlinks_p202610")
	require.EqualValues(t, 1, partitions())
	got := duckdb(t, fmt.Sprintf(`SELECT count(*)::VARCHAR AS n FROM read_parquet('%s/backlinks/*/*.parquet')`, dir))
	require.Equal(t, []map[string]any{{"n": fmt.Sprint(old)}}, got[0], "the lake holds the rows retention dropped")
	var m export.Manifest
	data, err := os.ReadFile(filepath.Join(dir, "backlinks", export.ManifestName))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &m))
	require.Len(t, m.Files, 2)
	require.EqualValues(t, old, m.Rows)

	// A later export keeps the dropped months' files in the manifest and
	// adds November's.
	r = etl(t, w.env, "export", "--to", dir, "--tables", "backlinks")
	require.Equal(t, exitOK, r.code, r.stderr)
	data, err = os.ReadFile(filepath.Join(dir, "backlinks", export.ManifestName))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &m))
	require.Len(t, m.Files, 3)
	require.EqualValues(t, old+count("backlinks"), m.Rows)
}

// TestExportRefusesBadFlags: etl export says what is wrong with its flags
// before it connects, quotes what it was given, exits 2 (usage) and
// writes nothing.
func TestExportRefusesBadFlags(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	afile := filepath.Join(t.TempDir(), "afile\x1b[31m")
	require.NoError(t, os.WriteFile(afile, nil, 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no folder", []string{"export"}, "--to is required: the folder to write the lake to"},
		{"bad month", []string{"export", "--to", t.TempDir(), "--since", "2026-13"}, `--since "2026-13": want a month, YYYY-MM`},
		{"unknown table", []string{"export", "--to", t.TempDir(), "--tables", "backlinkz\x1b[31m"}, `--tables: unknown table "backlinkz\x1b[31m"`},
		{"until before since", []string{"export", "--to", t.TempDir(), "--since", "2026-10", "--until", "2026-08"}, "--until 2026-08 is before --since 2026-10"},
		{"a file", []string{"export", "--to", afile}, "--to " + jobspec.Quote(afile) + " is not a folder"},
		{"below a file", []string{"export", "--to", filepath.Join(afile, "lake")}, "--to " + jobspec.Quote(filepath.Join(afile, "lake")) + " is not a folder: " + jobspec.Quote(afile) + " is a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := etl(t, env, tc.args...)
			require.Equal(t, exitUsage, r.code, r.stderr)
			require.Contains(t, r.stderr, tc.want)
			require.NotContains(t, r.stderr, "\x1b[31m", "a value from the command line shows escaped")
			require.Empty(t, r.stdout)
		})
	}
}

// TestFailedExportSaysWhatItWrote: an export that fails prints no
// summary of an export that worked (no "exported to", no "no rows yet"
// for the table it failed on), only what it wrote before the error, and
// exits 1.
func TestFailedExportSaysWhatItWrote(t *testing.T) {
	t.Parallel()
	w := newLakeWarehouse(t)
	dir := t.TempDir()
	// backlink_overview, the first table, cannot get its year folder.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "backlink_overview"), nil, 0o644))
	r := etl(t, w.env, "export", "--to", dir)
	require.Equal(t, exitFailed, r.code, r.stderr)
	require.Contains(t, r.stderr, "export backlink_overview")
	require.Contains(t, r.stderr, "not a directory")
	require.Empty(t, r.stdout, "nothing was written: nothing to say on stdout")

	// The first table goes, the second fails: the summary says what was
	// written before the error, and names no table as empty.
	require.NoError(t, os.Remove(filepath.Join(dir, "backlink_overview")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "backlink_history"), nil, 0o644))
	r = etl(t, w.env, "export", "--to", dir)
	require.Equal(t, exitFailed, r.code, r.stderr)
	require.Contains(t, r.stderr, "export backlink_history")
	require.True(t, strings.HasPrefix(r.stdout, "export to "+jobspec.Quote(dir)+" failed after 1 file written ("), r.stdout)
	require.Contains(t, r.stdout, "  backlink_overview: 1 written (")
	require.NotContains(t, r.stdout, "exported to")
	require.NotContains(t, r.stdout, "no rows yet")
	require.NotContains(t, r.stdout, "backlink_history")
}

// TestExportLimitsTheHeap: etl export runs under a soft limit on the Go
// heap (what keeps its peak RSS flat and under 100 MB: make bench, arm X)
// and puts the limit back after; a GOMEMLIMIT of the user's is left
// alone. Not parallel: the limit is the process's.
func TestExportLimitsTheHeap(t *testing.T) {
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "no limit before")
	restore := exportMemoryLimit(func(string) string { return "" })
	require.Equal(t, int64(exportHeapLimit), debug.SetMemoryLimit(-1))
	restore()
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "the limit is put back")

	restore = exportMemoryLimit(func(k string) string { return map[string]string{"GOMEMLIMIT": "off"}[k] })
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "the user's GOMEMLIMIT wins")
	restore()
}
