package export_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/export"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/load"
)

func TestMain(m *testing.M) {
	pgtest.Layout = load.DistributeDatabase // with TEST_CITUS_URL: make test-citus
	pgtest.Main(m)
}

var month = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// fillLinks writes n synthetic links of one target into the November
// partition of backlinks: every column type of the table (text, bigint,
// boolean, timestamps, dates), some NULLs.
func fillLinks(tb testing.TB, pool *pgxpool.Pool, n int) {
	tb.Helper()
	ctx := tb.Context()
	loader, err := load.New(load.Config{Pool: pool})
	require.NoError(tb, err)
	target, err := loader.Target(ctx, "example.com", catalog.RootDomain)
	require.NoError(tb, err)
	ep, _ := catalog.Lookup("links")
	require.NoError(tb, loader.EnsurePartitions(ctx, ep, []time.Time{month}))
	_, err = pool.Exec(ctx, `
		INSERT INTO backlinks (target_id, month, observed_at, source_url, target_url, anchor, image_url, source_title,
			page_score, domain_score, external_links_count, first_seen_at, is_nofollow, lang)
		SELECT $1, $2, $3::timestamptz, 'https://src' || (i % 5000) || '.example/page/' || i, 'https://example.com/p' || (i % 300),
			'anchor ' || (i % 1000), '', CASE WHEN i % 7 = 0 THEN NULL ELSE 'Title ' || (i % 2000) END,
			i % 100, (i * 7) % 100, i % 250, $3::timestamptz - make_interval(days => i % 900), i % 3 = 0, 'en'
		FROM generate_series(1, $4) i`, target, month, month.Add(50*time.Hour), n)
	require.NoError(tb, err)
}

// TestExportReleasesEveryArrowBuffer: an export releases every buffer it
// takes from the Arrow allocator, over several row groups and batches.
func TestExportReleasesEveryArrowBuffer(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	fillLinks(t, pool, 2500)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	x, err := export.New(export.Config{Pool: pool, Allocator: mem, RowGroupRows: 1000, FetchRows: 300})
	require.NoError(t, err)
	rep, err := x.Export(t.Context(), export.Options{Dir: t.TempDir(), Tables: []string{"backlinks"}})
	require.NoError(t, err)
	files, rows, _, _ := rep.Totals()
	require.Equal(t, 1, files)
	require.EqualValues(t, 2500, rows)
}

// TestExportOptionsAreChecked: bad options get an error naming what is
// wrong.
func TestExportOptionsAreChecked(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	x, err := export.New(export.Config{Pool: pool})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		opts export.Options
		want string
	}{
		{"no folder", export.Options{}, "export: the destination folder is empty"},
		{"unknown table", export.Options{Dir: t.TempDir(), Tables: []string{"backlinkz"}}, `export: unknown table "backlinkz" (known: backlink_overview,`},
		{"until before since", export.Options{Dir: t.TempDir(), Since: month, Until: month.AddDate(0, -1, 0)}, "export: until (2026-10) is before since (2026-11)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := x.Export(t.Context(), tc.opts)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err = export.New(export.Config{Pool: pool, RowGroupRows: -1})
	require.EqualError(t, err, "export: row group rows must be at least 1, got -1")
}

// TestOneExportAtATimeToAFolder: while one export to a folder runs (its
// advisory lock held), another to the same folder stops with a message.
func TestOneExportAtATimeToAFolder(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	dir := t.TempDir()
	conn, err := pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(t.Context(), `SELECT pg_advisory_lock(hashtextextended('etl export ' || $1, 0))`, dir)
	require.NoError(t, err)
	x, err := export.New(export.Config{Pool: pool})
	require.NoError(t, err)
	_, err = x.Export(t.Context(), export.Options{Dir: dir, Tables: []string{"targets"}})
	require.ErrorContains(t, err, fmt.Sprintf("another export to %q is running", dir))
	_, err = conn.Exec(t.Context(), `SELECT pg_advisory_unlock_all()`)
	require.NoError(t, err)
	_, err = x.Export(t.Context(), export.Options{Dir: dir, Tables: []string{"targets"}})
	require.NoError(t, err)
}

// TestExportFilesFollowTheUmask: the Parquet files and manifests an
// export writes are 0666 less the umask, its folders 0777 less it (as cp
// and mkdir -p make them), so that readers running as other users
// (DuckDB, Spark, Trino) can read the lake. Not parallel: the umask is
// the process's.
func TestExportFilesFollowTheUmask(t *testing.T) {
	pool := pgtest.NewPool(t)
	fillLinks(t, pool, 10)
	x, err := export.New(export.Config{Pool: pool})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "lake")
	old := syscall.Umask(0o027)
	rep, err := x.Export(t.Context(), export.Options{Dir: dir, Tables: []string{"backlinks", "targets"}})
	syscall.Umask(old)
	require.NoError(t, err)
	files, _, _, _ := rep.Totals()
	require.Equal(t, 2, files)
	modes := map[string]os.FileMode{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		modes[filepath.ToSlash(rel)] = st.Mode()
		return err
	}))
	require.Equal(t, map[string]os.FileMode{
		".":                          fs.ModeDir | 0o750,
		"backlinks":                  fs.ModeDir | 0o750,
		"backlinks/month=2026-11-01": fs.ModeDir | 0o750,
		"backlinks/month=2026-11-01/part-0.parquet": 0o640,
		"backlinks/_manifest.json":                  0o640,
		"targets":                                   fs.ModeDir | 0o750,
		"targets/part-0.parquet":                    0o640,
		"targets/_manifest.json":                    0o640,
	}, modes)
}

// TestExportLocksTheRealFolder: an export through a symbolic link to a
// folder takes the lock of the folder's real path, so that it waits for
// (here: refuses to run beside) an export to the folder by its own name,
// and records and reports the real path; so does retention's BeforeDrop.
func TestExportLocksTheRealFolder(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	fillLinks(t, pool, 10)
	base := t.TempDir()
	real := filepath.Join(base, "real")
	require.NoError(t, os.Mkdir(real, 0o755))
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(real, link))
	conn, err := pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(t.Context(), `SELECT pg_advisory_lock(hashtextextended('etl export ' || $1, 0))`, filepath.Join(real, "lake"))
	require.NoError(t, err)
	x, err := export.New(export.Config{Pool: pool})
	require.NoError(t, err)
	for _, dir := range []string{filepath.Join(link, "lake"), filepath.Join(base, "link", ".", "lake")} {
		_, err = x.Export(t.Context(), export.Options{Dir: dir, Tables: []string{"targets"}})
		require.ErrorContains(t, err, fmt.Sprintf("another export to %q is running", filepath.Join(real, "lake")))
	}
	require.NoDirExists(t, filepath.Join(real, "lake"), "nothing is written before the lock is taken")

	// Retention's hook waits for the same lock.
	tx, err := pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(t.Context(), `SET LOCAL lock_timeout = '50ms'`)
	require.NoError(t, err)
	var part string
	require.NoError(t, tx.QueryRow(t.Context(), `SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'backlinks'::regclass`).Scan(&part))
	err = export.BeforeDrop(filepath.Join(link, "lake"), nil)(t.Context(), tx, "backlinks", part)
	require.ErrorContains(t, err, "lock timeout")
	require.NoError(t, tx.Rollback(t.Context()))

	_, err = conn.Exec(t.Context(), `SELECT pg_advisory_unlock_all()`)
	require.NoError(t, err)
	rep, err := x.Export(t.Context(), export.Options{Dir: filepath.Join(link, "lake"), Tables: []string{"targets"}})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(real, "lake"), rep.Dir)
	var dest string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT DISTINCT dest FROM export_files`).Scan(&dest))
	require.Equal(t, filepath.Join(real, "lake"), dest)
}

// TestExportsOfOneStateAreTheSameBytes: exports of the same rows are the
// same file, byte for byte, also where a column holds too many distinct
// values for one dictionary page (source_url, unique per row here, past
// arrow's 1 MiB dictionary page in every row group), where arrow/go would
// fall back to plain encoding midway and write the column chunk's
// encoding statistics in a Go map's random order.
func TestExportsOfOneStateAreTheSameBytes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	fillLinks(t, pool, 90000)
	x, err := export.New(export.Config{Pool: pool, RowGroupRows: 30000})
	require.NoError(t, err)
	sums := map[string][]int{}
	for i := range 8 {
		dir := t.TempDir()
		_, err := x.Export(t.Context(), export.Options{Dir: dir, Tables: []string{"backlinks"}})
		require.NoError(t, err)
		data, err := os.ReadFile(filepath.Join(dir, "backlinks", "month=2026-11-01", "part-0.parquet"))
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		sums[hex.EncodeToString(sum[:])] = append(sums[hex.EncodeToString(sum[:])], i)
	}
	require.Len(t, sums, 1, "8 exports of one state: the exports holding each SHA-256")
}

// BenchmarkExportLinks exports a month of BENCH_ROWS synthetic links
// (default 100000) to Parquet; make bench's arm X measures the real
// thing with etl export in a process of its own.
func BenchmarkExportLinks(b *testing.B) {
	n := 100_000
	if v := os.Getenv("BENCH_ROWS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	pool := pgtest.NewPool(b)
	fillLinks(b, pool, n)
	x, err := export.New(export.Config{Pool: pool})
	require.NoError(b, err)
	b.ResetTimer()
	for i := range b.N {
		_, err := x.Export(b.Context(), export.Options{Dir: fmt.Sprintf("%s/%d", b.TempDir(), i), Tables: []string{"backlinks"}})
		require.NoError(b, err)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
