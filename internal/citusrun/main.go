// Command citusrun starts a throwaway Citus cluster on loopback (a
// coordinator and two workers, from the Citus extension already installed
// for the machine's PostgreSQL), runs a command with TEST_CITUS_URL naming
// a database on it set up for distributed tables, and stops the cluster
// when the command ends: make test-citus runs the Citus suite with it.
// With no command it prints the URL and keeps the cluster until
// interrupted, for a look by hand.
//
//	go run ./internal/citusrun [-workers N] [command args...]
//
// It builds nothing: where the extension is missing it says so and exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/seoetl/etl/internal/pgcluster"
)

func main() {
	os.Exit(run())
}

func run() int {
	workers := flag.Int("workers", 2, "worker nodes")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := pgcluster.StartCitus(ctx, pgcluster.Options{
		BinDir: os.Getenv("PG_BIN"),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, *workers)
	if err != nil {
		fmt.Fprintf(os.Stderr, "citusrun: %v\n", err)
		if errors.Is(err, pgcluster.ErrNoCitus) {
			fmt.Fprintln(os.Stderr, "citusrun: install Citus for this PostgreSQL first (docs/warehouse.md, On Citus); nothing here builds it")
		}
		return 1
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "citusrun: stopping the cluster: %v\n", err)
		}
	}()
	url, err := c.Database(ctx, "etl")
	if err != nil {
		fmt.Fprintf(os.Stderr, "citusrun: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "citusrun: a coordinator and %d workers on 127.0.0.1 (ports %d", len(c.Workers), c.Coordinator.Port())
	for _, w := range c.Workers {
		fmt.Fprintf(os.Stderr, ", %d", w.Port())
	}
	fmt.Fprintln(os.Stderr, ")")
	if flag.NArg() == 0 {
		fmt.Printf("TEST_CITUS_URL=%s\n", url)
		<-ctx.Done()
		return 0
	}
	cmd := exec.CommandContext(ctx, flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "TEST_CITUS_URL="+url)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return exit.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "citusrun: %v\n", err)
		return 1
	}
	return 0
}
