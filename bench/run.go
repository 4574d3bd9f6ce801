package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/seoetl/etl/catalog"
)

// run is the whole bench: set up, warm up, the timed turns, the 4N memory
// run, the optional profiles, the report.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	cfg, err := parseConfig(args, os.Getenv, stderr)
	if err != nil {
		return err
	}
	if cfg.etl, err = filepath.Abs(cfg.etl); err != nil {
		return err
	}
	if _, err := os.Stat(cfg.etl); err != nil {
		return fmt.Errorf("the E2E arm runs %s: %w (make build makes it, or pass -etl)", cfg.etl, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	started := time.Now()
	e, tearDown, err := setUp(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tearDown()) }()
	// prepare first: the arms' statements name the target it creates.
	if slices.ContainsFunc(cfg.arms, func(n string) bool { return n != armHistory && n != armBackfill }) {
		if err := e.prepare(ctx); err != nil {
			return fmt.Errorf("preparing: %w", err)
		}
	}
	if slices.ContainsFunc(cfg.arms, isCitusArm) {
		if err := e.prepareCitus(ctx); err != nil {
			return fmt.Errorf("preparing the Citus database: %w", err)
		}
	}
	var arms []arm
	for _, a := range e.arms() {
		if slices.Contains(cfg.arms, a.name) {
			arms = append(arms, a)
		}
	}
	samples := map[string][]sample{}
	for round := 0; round <= cfg.reps; round++ { // round 0 warms up
		for _, a := range arms {
			s, err := e.runArm(ctx, a, round)
			if err != nil {
				return err
			}
			if round > 0 {
				samples[a.name] = append(samples[a.name], s)
			}
		}
	}

	rep := e.newReport(started, arms, samples)
	if slices.ContainsFunc(cfg.arms, isCitusArm) {
		notes, err := e.citusNotes(ctx, samples)
		if err != nil {
			return err
		}
		rep.Notes = append(rep.Notes, notes...)
	}
	if hasArm(cfg.arms, armHistory) || hasArm(cfg.arms, armBackfill) {
		if rep.History, err = e.history(ctx); err != nil {
			return err
		}
		rep.Notes = append(rep.Notes, historyNotes...)
	}
	if hasArm(cfg.arms, armExport) {
		if rep.Export, err = e.exportArm(ctx); err != nil {
			return err
		}
		rep.Notes = append(rep.Notes, exportNote)
	}
	if cfg.rss4 && slices.Contains(cfg.arms, "P1") {
		if rep.PeakRSS.At4N, err = e.peakRSS4N(ctx); err != nil {
			return fmt.Errorf("P1 at 4N rows: %w", err)
		}
		rep.PeakRSS.Ratio = finite(ratio(rep.PeakRSS.At4N, rep.PeakRSS.AtN))
	}
	if cfg.profile != "" {
		if err := e.profile(ctx, cfg.profile); err != nil {
			return fmt.Errorf("profiling P1: %w", err)
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("profiles of one extra P1 and P1u run (not timed): %s/p1{,u}.{cpu,mem}.prof", cfg.profile))
	}
	rep.finish()
	rep.print(stdout)
	if err := rep.write(cfg.out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwritten to %s\n", cfg.out)
	return nil
}

// runArm resets, runs (timed) and checks one arm.
func (e *env) runArm(ctx context.Context, a arm, round int) (sample, error) {
	label := "warm-up"
	if round > 0 {
		label = fmt.Sprintf("rep %d/%d", round, e.cfg.reps)
	}
	if err := a.reset(ctx); err != nil {
		return sample{}, fmt.Errorf("%s %s: reset: %w", a.name, label, err)
	}
	s, err := a.run(ctx)
	if err != nil {
		return s, fmt.Errorf("%s %s: %w", a.name, label, err)
	}
	if err := a.check(ctx, s, round == 0); err != nil {
		return s, fmt.Errorf("%s %s: WRONG RESULT: %w", a.name, label, err)
	}
	attrs := []slog.Attr{slog.String("arm", a.name), slog.String("run", label),
		slog.Float64("seconds", round3(s.Seconds)), slog.Float64("rows/s", round3(float64(e.csv.rows)/s.Seconds)),
		slog.Float64("cpu_seconds", round3(s.CPUSeconds))}
	if s.PeakRSSMB > 0 {
		attrs = append(attrs, slog.Float64("peak_rss_mb", round3(s.PeakRSSMB)))
	}
	if l := s.Load; l != nil {
		attrs = append(attrs, slog.Int64("inserted", l.Inserted), slog.Int64("updated", l.Updated), slog.Int64("unchanged", l.Unchanged))
	}
	e.log.LogAttrs(ctx, slog.LevelInfo, "arm done", attrs...)
	return s, nil
}

// peakRSS4N saves the CSV of 4N links and loads it once with P1 into an
// empty table, for the peak RSS at 4N rows.
func (e *env) peakRSS4N(ctx context.Context) (float64, error) {
	n := 4 * e.cfg.rows
	csv, err := e.saveCSV(ctx, n)
	if err != nil {
		return 0, err
	}
	defer os.Remove(csv.path)
	target, err := e.loader.Target(ctx, targetURL(n), catalog.RootDomain)
	if err != nil {
		return 0, err
	}
	if err := e.resetting("TRUNCATE backlinks")(ctx); err != nil {
		return 0, err
	}
	s, err := e.runChild(ctx, csv.path, target, nil)
	if err != nil {
		return 0, err
	}
	// n<N>.example has exactly N links, no two with the same key.
	if l := s.Load; l.Rows != csv.rows || l.Rejected != 0 || l.Inserted != csv.rows {
		return 0, fmt.Errorf("WRONG RESULT: LoadCSV read %d rows (%d rejected) and inserted %d, want %d, none rejected, all inserted",
			l.Rows, l.Rejected, l.Inserted, csv.rows)
	}
	if err := e.checkCount(ctx, "backlinks", csv.rows); err != nil {
		return 0, fmt.Errorf("WRONG RESULT: %w", err)
	}
	e.log.LogAttrs(ctx, slog.LevelInfo, "P1 at 4N rows", slog.Int("rows", n), slog.Float64("seconds", round3(s.Seconds)),
		slog.Float64("peak_rss_mb", round3(s.PeakRSSMB)))
	_, err = e.pool.Exec(ctx, "TRUNCATE backlinks")
	return s.PeakRSSMB, err
}

// profile runs P1 into an empty table and P1u over it once more each, with
// CPU and allocation profiles written to dir.
func (e *env) profile(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := e.resetting("TRUNCATE backlinks")(ctx); err != nil {
		return err
	}
	for _, name := range []string{"p1", "p1u"} {
		if name == "p1u" {
			if err := e.resetting("VACUUM ANALYZE backlinks")(ctx); err != nil {
				return err
			}
		}
		s, err := e.runChild(ctx, e.csv.path, e.targetID, []string{
			"-cpuprofile", filepath.Join(dir, name+".cpu.prof"), "-memprofile", filepath.Join(dir, name+".mem.prof")})
		if err != nil {
			return err
		}
		e.log.LogAttrs(ctx, slog.LevelInfo, "profiled", slog.String("run", name), slog.Float64("seconds", round3(s.Seconds)))
	}
	return nil
}

func round3(x float64) float64 {
	return float64(int64(x*1000+0.5)) / 1000
}
