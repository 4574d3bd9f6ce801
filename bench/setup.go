package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/pgcluster"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/migrations"
	"github.com/seoetl/etl/sandbox"
)

// now pins the sandbox clock and `etl run --now`: the sandbox's data are a
// function of its day, and the rows' month is the month of now.
const now = "2026-11-21T03:00:00Z"

// apiKey is the sandbox's key.
const apiKey = sandbox.DefaultAPIKey

// serverSettings are the bench cluster's settings over pgcluster's. A
// throwaway cluster turns durability off for the tests' speed; the bench
// turns it back on (PostgreSQL's defaults), as a warehouse runs. Autovacuum
// is off so that it never runs during a timed arm: the arms that need a
// vacuumed table (P1u) vacuum it before the clock starts.
var serverSettings = map[string]string{
	"fsync":              "on",
	"synchronous_commit": "on",
	"full_page_writes":   "on",
	"autovacuum":         "off",
}

// env is what every arm works with.
type env struct {
	cfg    config
	log    *slog.Logger
	month  time.Time
	ep     *catalog.Endpoint
	fields []string // the CSV's columns: the links fields in catalog order

	cluster *pgcluster.Cluster
	dbURL   string
	pool    *pgxpool.Pool
	loader  *load.Loader
	psql    string // the psql binary
	pgVer   string
	apiURL  string
	sandbox *sandbox.Server // counts the E2E arm's requests
	dir     string          // the saved CSV files

	csv      savedCSV // n<N>.example
	targetID int64
	keys     int64  // distinct natural keys of the CSV
	checksum string // of the rows backlinks must hold (see rowsChecksum)

	citus citusEnv // the Citus arms' database (BENCH_CITUS_URL)
}

// savedCSV is a links CSV saved to a file.
type savedCSV struct {
	path  string
	rows  int64
	bytes int64
	pages int
}

// setUp starts PostgreSQL and the sandbox and saves the CSV; the returned
// function undoes it all.
func setUp(ctx context.Context, cfg config, log *slog.Logger) (*env, func() error, error) {
	e := &env{cfg: cfg, log: log}
	var undo []func() error
	tearDown := func() error {
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			errs = append(errs, undo[i]())
		}
		return errors.Join(errs...)
	}
	fail := func(err error) (*env, func() error, error) {
		return nil, nil, errors.Join(err, tearDown())
	}
	var ok bool
	if e.ep, ok = catalog.Lookup("links"); !ok {
		return nil, nil, errors.New("the catalog has no links endpoint")
	}
	e.fields = e.ep.FieldNames()
	t, _ := time.Parse(time.RFC3339, now)
	e.month = load.MonthStart(t)

	binDir := cfg.pgBin
	if binDir == "" {
		var err error
		if binDir, err = pgcluster.Binaries(); err != nil {
			return nil, nil, err
		}
	}
	e.psql = filepath.Join(binDir, "psql")
	if _, err := os.Stat(e.psql); err != nil {
		return nil, nil, fmt.Errorf("psql is not next to the server binaries in %s: %w", binDir, err)
	}
	c, err := pgcluster.Start(ctx, pgcluster.Options{BinDir: binDir, Settings: serverSettings, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	e.cluster = c
	undo = append(undo, c.Stop)
	if err := createDatabase(ctx, c.URL("postgres"), "bench"); err != nil {
		return fail(err)
	}
	e.dbURL = c.URL("bench")
	if err := migrations.Up(ctx, e.dbURL); err != nil {
		return fail(err)
	}
	pcfg, err := pgxpool.ParseConfig(e.dbURL)
	if err != nil {
		return fail(err)
	}
	pcfg.ConnConfig.RuntimeParams["timezone"] = "UTC" // rowsChecksum prints timestamps
	if e.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return fail(err)
	}
	undo = append(undo, func() error { e.pool.Close(); return nil })
	if err := e.pool.QueryRow(ctx, "SHOW server_version").Scan(&e.pgVer); err != nil {
		return fail(err)
	}

	if slices.ContainsFunc(cfg.arms, isCitusArm) {
		undoCitus, err := e.setUpCitus(ctx)
		undo = append(undo, undoCitus)
		if err != nil {
			return fail(err)
		}
	}

	sb, apiURL, stopSandbox, err := serveSandbox(ctx, log)
	if err != nil {
		return fail(err)
	}
	e.sandbox, e.apiURL = sb, apiURL
	undo = append(undo, stopSandbox)

	if e.dir, err = os.MkdirTemp("", "etl-bench-"); err != nil {
		return fail(err)
	}
	undo = append(undo, func() error { return os.RemoveAll(e.dir) })
	// The history arms alone need no CSV of BENCH_ROWS (H saves its own).
	if slices.ContainsFunc(cfg.arms, func(a string) bool { return a != armHistory && a != armBackfill }) {
		if e.csv, err = e.saveCSV(ctx, cfg.rows); err != nil {
			return fail(err)
		}
	}
	return e, tearDown, nil
}

func createDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// serveSandbox serves the sandbox in this process, with the API's default
// limits (10 requests a second, 10 in flight) and the sandbox's default
// bound of limit (pages of at most 10,000 lines), on a free port.
func serveSandbox(ctx context.Context, log *slog.Logger) (*sandbox.Server, string, func() error, error) {
	return serveSandboxWith(ctx, log, sandbox.Config{})
}

// serveSandboxWith serves a sandbox of cfg, pinned at now with the bench's
// key, on a free port.
func serveSandboxWith(ctx context.Context, log *slog.Logger, cfg sandbox.Config) (*sandbox.Server, string, func() error, error) {
	t, _ := time.Parse(time.RFC3339, now)
	cfg.Now, cfg.APIKeys, cfg.Logger = func() time.Time { return t }, []string{apiKey}, slog.New(slog.DiscardHandler)
	srv, err := sandbox.New(cfg)
	if err != nil {
		return nil, "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- sandbox.Serve(sctx, ln, srv) }()
	u := "http://" + ln.Addr().String()
	log.LogAttrs(ctx, slog.LevelInfo, "sandbox listening", slog.String("url", u))
	return srv, u, func() error { cancel(); return <-served }, nil
}

// targetURL is the sandbox target with exactly rows links.
func targetURL(rows int) string { return fmt.Sprintf("n%d.example", rows) }

// saveCSV fetches every page of the links of n<rows>.example as `etl run`
// does (extract's client; format=csv; the catalog's fields; limit, offset)
// and saves them as one CSV with one header.
func (e *env) saveCSV(ctx context.Context, rows int) (savedCSV, error) {
	began := time.Now()
	s := savedCSV{path: filepath.Join(e.dir, fmt.Sprintf("links-%s.csv", targetURL(rows)))}
	client, err := extract.New(extract.Config{BaseURL: e.apiURL, APIKey: apiKey})
	if err != nil {
		return s, err
	}
	f, err := os.Create(s.path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var header string
	page := min(e.cfg.limit, sandbox.DefaultMaxLimit) // the most the sandbox serves a request
	for offset := 0; ; offset += page {
		q := url.Values{}
		q.Set("url", targetURL(rows))
		q.Set("scope", string(catalog.RootDomain))
		q.Set("fields", strings.Join(e.fields, ","))
		q.Set("limit", strconv.Itoa(page))
		q.Set("offset", strconv.Itoa(offset))
		q.Set("format", "csv")
		resp, err := client.Do(ctx, extract.Request{Endpoint: e.ep, Params: q})
		if err != nil {
			return s, err
		}
		got, n, err := copyPage(w, resp.Body, &header)
		resp.Body.Close()
		if err != nil {
			return s, fmt.Errorf("page at offset %d: %w", offset, err)
		}
		s.rows += got
		s.bytes += n
		s.pages++
		if got < int64(page) {
			break
		}
	}
	if err := w.Flush(); err != nil {
		return s, err
	}
	if err := f.Close(); err != nil {
		return s, err
	}
	if s.rows != int64(rows) {
		return s, fmt.Errorf("the sandbox sent %d links of %s, want exactly %d", s.rows, targetURL(rows), rows)
	}
	e.log.LogAttrs(ctx, slog.LevelInfo, "CSV saved", slog.String("file", s.path), slog.Int64("rows", s.rows),
		slog.Int64("bytes", s.bytes), slog.Int("pages", s.pages), slog.Duration("took", time.Since(began).Round(time.Millisecond)))
	return s, nil
}

// copyPage copies a CSV page to w: with its header when *header is empty
// (and sets it), else without it (which must equal *header). It returns the
// data rows and the bytes written.
func copyPage(w io.Writer, body io.Reader, header *string) (int64, int64, error) {
	br := bufio.NewReaderSize(body, 64<<10)
	h, err := br.ReadString('\n')
	if err != nil {
		return 0, 0, fmt.Errorf("reading the header: %w", err)
	}
	var written int64
	if *header == "" {
		*header = h
		n, err := io.WriteString(w, h)
		if err != nil {
			return 0, 0, err
		}
		written += int64(n)
	} else if h != *header {
		return 0, 0, fmt.Errorf("the header %q differs from the first page's %q", strings.TrimSpace(h), strings.TrimSpace(*header))
	}
	var rc rowCounter
	n, err := io.Copy(io.MultiWriter(w, &rc), br)
	written += n
	if err != nil {
		return 0, written, err
	}
	if rc.partial {
		return 0, written, errors.New("the page does not end with a line end")
	}
	return rc.rows, written, nil
}

// rowCounter counts the CSV rows written to it: line ends outside quotes
// (a doubled quote inside a quoted cell toggles twice).
type rowCounter struct {
	rows    int64
	quoted  bool
	partial bool // bytes since the last row's end
}

func (c *rowCounter) Write(p []byte) (int, error) {
	for _, b := range p {
		switch {
		case b == '"':
			c.quoted = !c.quoted
		case b == '\n' && !c.quoted:
			c.rows++
			c.partial = false
			continue
		}
		c.partial = true
	}
	return len(p), nil
}
