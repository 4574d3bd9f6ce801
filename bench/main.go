// Command bench is `make bench`: it times the pipeline side by side with
// psql's COPY on the same bytes, against one throwaway PostgreSQL, and
// measures the pipeline's peak memory at N and 4N rows (issue 7).
//
// It starts a throwaway cluster (internal/pgcluster), migrates a database,
// serves the sandbox in this process, and saves the links CSV of the target
// n<N>.example once to a file, fetched page by page as `etl run` fetches it
// (extract's client, format=csv, the catalog's field list) and
// concatenated under one header. Then it times these arms on that file:
//
//	B0   psql \copy into an UNLOGGED staging table without indexes (the floor)
//	B1   psql \copy straight into the partitioned backlinks table
//	B2   B0, then DISTINCT ON the natural key and INSERT ... ON CONFLICT into
//	     backlinks, with our upsert's SET and WHERE (the floor for our semantics)
//	P1   pipeline.LoadCSV (transform's CSV decoder, Arrow, load's COPY staging
//	     and upsert) in pages of BENCH_LIMIT rows, a process of its own
//	P1u  P1 again over the populated table (the conflict path)
//	P1c  P1 on a Citus cluster (BENCH_CITUS_URL), with each node's CPU
//	P1uc P1u there (citus.go)
//	E2E  `etl run` (bin/etl) from the sandbox over HTTP, of links without a
//	     limit: pages at the API's bound of limit, learned in the warm-up
//	     run; its requests are counted at the sandbox and its time set
//	     against the API bound (requests / 10 per second)
//	H    history: P1 and P1u of BENCH_HISTORY_ROWS links with 1, then 120
//	     months stored (history.go)
//	HB   history: the last month's run (buying its tasks again, as
//	     --refetch) after a backfill of 179 months of summary and keyword
//	     metrics, per page, against the same run on a warehouse of that
//	     month alone (history.go)
//	X    export: `etl export` of a month of N links (then 4N) to Parquet,
//	     rows/s, peak RSS and the file's size against the CSV's (export.go)
//
// Each arm runs once to warm up, then BENCH_REPS times, the arms taking
// turns. Before each run, untimed: the tables are emptied (TRUNCATE), P1u's
// table is filled and vacuumed, and a CHECKPOINT is taken. After each run it
// checks the result and fails loudly on a wrong one: backlinks must hold
// exactly the distinct natural keys of the CSV, and after each warm-up its
// rows (all columns but observed_at) must match those psql's COPY reads
// from the CSV, by an order-independent checksum.
//
// It prints a table of medians with min and max (seconds, rows/s, MB/s of
// CSV bytes), the throughput ratios P1/B1, P1/B2, P1u/B2 and E2E/P1, E2E
// against the API bound, the peak RSS of P1 at N and 4N rows, and writes
// them to bench/results.json.
//
// Environment: BENCH_ROWS (N, default 1000000), BENCH_LIMIT (page size,
// default 10000), BENCH_REPS (default 3), BENCH_RSS4 (0 skips the 4N run),
// BENCH_ARMS (a comma-separated subset, default all), BENCH_PROFILE (a
// folder: CPU and allocation profiles of one extra P1 and P1u run),
// BENCH_HISTORY_ROWS (the links of arm H, default 100000), BENCH_HISTORY_FILL
// (the links of each older month arm H stores, default BENCH_HISTORY_ROWS),
// BENCH_CITUS_URL (a Citus coordinator: adds the arms P1c and P1uc, P1 and
// P1u into a database of that cluster distributed as etl migrate up does;
// citus.go), PG_BIN (PostgreSQL's binaries). Flags: -etl (the etl binary, default bin/etl),
// -out (default bench/results.json).
//
// The binary has two more modes, for the processes it measures: `bench p1
// ...` is the P1 process (child.go), and `bench rss FILE CMD [ARG...]`
// runs CMD and writes its peak RSS, CPU and wall time to FILE (rss.go):
// every measured process (P1, E2E, X) runs under it, so that its peak RSS
// is its own, not the bench's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if len(os.Args) > 1 && os.Args[1] == rssMode {
		code, err := rssMain(ctx, os.Args[2:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench %s: %v\n", rssMode, err)
		}
		os.Exit(code)
	}
	var err error
	if len(os.Args) > 1 && os.Args[1] == childMode {
		err = childMain(ctx, os.Args[2:], os.Stdout, os.Stderr)
	} else {
		err = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// config is what the environment and flags ask for.
type config struct {
	rows  int  // N: links of the target n<N>.example
	limit int  // rows per page, as `etl run` pages
	reps  int  // timed runs of each arm
	rss4  bool // also measure P1's peak RSS at 4N rows
	// historyRows and historyFill are arm H's links, and the links of
	// each older month it stores.
	historyRows, historyFill int
	arms                     []string // the arms to run, in turn order
	profile                  string   // folder for P1's profiles; "" for none
	pgBin                    string   // PostgreSQL binaries; "" to find them
	etl                      string   // the etl binary
	out                      string   // results JSON
	citusURL                 string   // BENCH_CITUS_URL: a Citus coordinator for P1c and P1uc
}

var allArms = []string{"B0", "B1", "B2", "P1", "P1u", armP1Citus, armP1uCitus, "E2E", armHistory, armBackfill, armExport}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	c := config{pgBin: getenv("PG_BIN"), profile: getenv("BENCH_PROFILE")}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.etl, "etl", "bin/etl", "the etl binary the E2E arm runs (make bench builds it)")
	fs.StringVar(&c.out, "out", "bench/results.json", "where to write the results")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var errs []error
	envInt := func(name string, def, lo, hi int) int {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(strings.ReplaceAll(v, "_", ""))
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("%s must be a whole number between %d and %d, got %q", name, lo, hi, v))
		}
		return n
	}
	// The sandbox sizes n<N>.example up to 20,000,000, and 4N must fit.
	c.rows = envInt("BENCH_ROWS", 1_000_000, 1, 20_000_000)
	c.limit = envInt("BENCH_LIMIT", 10_000, 1, 1_000_000)
	c.reps = envInt("BENCH_REPS", 3, 1, 100)
	c.rss4 = envInt("BENCH_RSS4", 1, 0, 1) == 1
	c.historyRows = envInt("BENCH_HISTORY_ROWS", 100_000, 1, 20_000_000)
	c.historyFill = envInt("BENCH_HISTORY_FILL", c.historyRows, 0, 20_000_000)
	if c.rss4 && c.rows > 5_000_000 {
		errs = append(errs, fmt.Errorf("BENCH_ROWS above 5000000 needs BENCH_RSS4=0: the sandbox has no target of more than 20000000 links, got %d", c.rows))
	}
	c.citusURL = getenv("BENCH_CITUS_URL")
	c.arms = allArms
	if c.citusURL == "" {
		c.arms = slices.DeleteFunc(slices.Clone(allArms), isCitusArm)
	}
	if v := getenv("BENCH_ARMS"); v != "" {
		c.arms = nil
		for _, a := range strings.Split(v, ",") {
			a = strings.TrimSpace(a)
			i := slices.IndexFunc(allArms, func(b string) bool { return strings.EqualFold(a, b) })
			if i < 0 {
				errs = append(errs, fmt.Errorf("BENCH_ARMS: unknown arm %q (the arms are %s)", a, strings.Join(allArms, ", ")))
				continue
			}
			c.arms = append(c.arms, allArms[i])
		}
		slices.SortFunc(c.arms, func(a, b string) int { return slices.Index(allArms, a) - slices.Index(allArms, b) })
		c.arms = slices.Compact(c.arms)
		if c.citusURL == "" && slices.ContainsFunc(c.arms, isCitusArm) {
			errs = append(errs, errors.New("BENCH_ARMS: P1c and P1uc run on a Citus cluster: set BENCH_CITUS_URL to its coordinator (go run ./internal/citusrun prints one)"))
		}
	}
	return c, errors.Join(errs...)
}
