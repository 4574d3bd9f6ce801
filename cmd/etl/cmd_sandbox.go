package main

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/sandbox"
)

// sandboxOptions are the flags of etl sandbox.
type sandboxOptions struct {
	addr, now, faults string
	seed, units       int64
	keys              []string
	slow              time.Duration
	rate, concurrency int
}

// config validates the flags and turns them into a sandbox.Config. On the
// command line 0 means "no limit" for --units, --rate and --concurrency.
func (o sandboxOptions) config() (sandbox.Config, error) {
	cfg := sandbox.Config{Seed: o.seed, APIKeys: o.keys, Units: o.units, SlowDelay: o.slow}
	if o.now != "" {
		t, err := parseTime(o.now)
		if err != nil {
			return cfg, fmt.Errorf("--now: %w", err)
		}
		cfg.Now = func() time.Time { return t }
	}
	if o.units < 0 {
		return cfg, fmt.Errorf("--units must be 0 (no balance) or a positive number of API units, got %d", o.units)
	}
	limit := func(flag string, n int) (int, error) {
		switch {
		case n < 0:
			return 0, fmt.Errorf("--%s must be 0 (no limit) or positive, got %d", flag, n)
		case n == 0:
			return -1, nil
		}
		return n, nil
	}
	var err error
	if cfg.RatePerSecond, err = limit("rate", o.rate); err != nil {
		return cfg, err
	}
	if cfg.MaxConcurrent, err = limit("concurrency", o.concurrency); err != nil {
		return cfg, err
	}
	if o.slow <= 0 {
		return cfg, fmt.Errorf("--slow must be a positive duration such as 2s or 500ms, got %v", o.slow)
	}
	if cfg.Faults, err = sandbox.ParseFaults(o.faults); err != nil {
		return cfg, fmt.Errorf("--faults: %w", err)
	}
	return cfg, nil
}

func newSandboxCmd(e *env) *cobra.Command {
	var o sandboxOptions
	cmd := &cobra.Command{
		Use:   "sandbox --addr HOST:PORT",
		Short: "Serve a free, deterministic stand-in of the data API",
		Long: `Serve a local stand-in of the data API: same paths, parameters, formats,
errors and prices, with data that is deterministic for a given seed, target
and clock. Nothing it serves costs money; GET /sandbox/usage?key=KEY tells
what the same requests would have cost.

Like the real API it allows each key 10 requests per second and 10 concurrent
requests (--rate, --concurrency) and answers 429, without Retry-After, past
them. With --units every key has a balance: a request the rest of it cannot
pay answers 403 and costs nothing, and /sandbox/usage reports
units_remaining.

--faults injects faults at the given rates, reproducibly for a --seed: the
same requests in the same order meet the same faults, and a retry of a
request gets a fresh draw. NAME=RATE items, RATE from 0 to 1:
  429, 500, 503  answer that status with the error envelope (free, retryable)
  slow           delay the answer by --slow
  cut            send part of the body, then break the connection (charged in full)
  malformed      per CSV data row: wrong number of cells, or text in an integer column
The X-Sandbox-Faults response header lists the faults of each answer.
Example: --faults '429=0.05,500=0.02,503=0.02,slow=0.01,cut=0.01,malformed=0.001'

Point etl at it with ETL_API_URL=http://HOST:PORT and ETL_API_KEY set to one
of the --api-key values.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := o.config()
			if err != nil {
				return usageError(err)
			}
			cfg.Logger = e.log
			srv, err := sandbox.New(cfg)
			if err != nil {
				return usageError(err)
			}
			ln, err := net.Listen("tcp", o.addr)
			if err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
			return sandbox.Serve(cmd.Context(), ln, srv)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on (port 0: any free port, logged)")
	f.Int64Var(&o.seed, "seed", 1, "seed of the generated data and of the faults")
	f.StringVar(&o.now, "now", "", "pin the sandbox clock (RFC 3339 or YYYY-MM-DD); default the wall clock")
	f.StringArrayVar(&o.keys, "api-key", []string{"sandbox"}, "an API key the sandbox accepts (repeatable)")
	f.Int64Var(&o.units, "units", 0, "balance of API units of each key; 0: unlimited")
	f.IntVar(&o.rate, "rate", sandbox.DefaultRatePerSecond, "requests per second each key may send; 0: no limit")
	f.IntVar(&o.concurrency, "concurrency", sandbox.DefaultMaxConcurrent, "concurrent requests each key may have in flight; 0: no limit")
	f.StringVar(&o.faults, "faults", "", "fault rates, as in '503=0.02,cut=0.01' (429, 500, 503, slow, cut, malformed); default none")
	f.DurationVar(&o.slow, "slow", sandbox.DefaultSlowDelay, "how long the slow fault delays an answer")
	return cmd
}
