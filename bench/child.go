package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/pipeline"
)

// childMode is the first argument that makes the bench binary the P1 arm:
// it loads a saved CSV with pipeline.LoadCSV in a process of its own, so
// that the parent reads the pipeline's peak RSS from wait4's rusage.
const childMode = "p1"

// childResult is what the child prints on stdout, as JSON.
type childResult struct {
	Seconds   float64 `json:"seconds"` // LoadCSV alone, without start-up
	Pages     int     `json:"pages"`
	Rows      int64   `json:"rows"`
	Rejected  int64   `json:"rejected"`
	Inserted  int64   `json:"inserted"`
	Updated   int64   `json:"updated"`
	Unchanged int64   `json:"unchanged"`
}

// childMain runs the P1 arm: bench p1 -db URL -file CSV -target ID -month
// YYYY-MM-DD -page N [-cpuprofile F] [-memprofile F].
func childMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(childMode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbURL := fs.String("db", "", "warehouse URL")
	file := fs.String("file", "", "links CSV to load")
	target := fs.Int64("target", 0, "target_id of the rows")
	month := fs.String("month", "", "month of the rows, YYYY-MM-DD")
	page := fs.Int("page", 0, "rows per transaction (a run's page)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the load here")
	memProfile := fs.String("memprofile", "", "write an allocation profile of the load here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, err := time.Parse(time.DateOnly, *month)
	if err != nil {
		return fmt.Errorf("-month: %w", err)
	}
	ep, ok := catalog.Lookup("links")
	if !ok {
		return errors.New("the catalog has no links endpoint")
	}
	pool, err := pgxpool.New(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	f, err := os.Open(*file)
	if err != nil {
		return err
	}
	defer f.Close()
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
	}
	began := time.Now()
	res, err := pipeline.LoadCSV(ctx, f, pipeline.LoadCSVConfig{Pool: pool, Endpoint: ep, TargetID: *target, Month: m, PageRows: *page})
	took := time.Since(began)
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	if *memProfile != "" {
		pf, err := os.Create(*memProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.Lookup("allocs").WriteTo(pf, 0); err != nil {
			return err
		}
	}
	return json.NewEncoder(stdout).Encode(childResult{Seconds: took.Seconds(), Pages: res.Pages, Rows: res.Rows,
		Rejected: res.Rejected, Inserted: res.Load.Inserted, Updated: res.Load.Updated, Unchanged: res.Load.Unchanged})
}
