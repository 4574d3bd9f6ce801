package main

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/sandbox"
)

func newSandboxCmd(e *env) *cobra.Command {
	var addr, now string
	var seed int64
	var keys []string
	cmd := &cobra.Command{
		Use:   "sandbox --addr HOST:PORT",
		Short: "Serve a free, deterministic stand-in of the data API",
		Long: `Serve a local stand-in of the data API: same paths, parameters, formats,
errors and prices, with data that is deterministic for a given seed, target
and clock. Nothing it serves costs money; GET /sandbox/usage?key=KEY tells
what the same requests would have cost.

Point etl at it with ETL_API_URL=http://HOST:PORT and ETL_API_KEY set to one
of the --api-key values.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			clock := time.Now
			if now != "" {
				t, err := parseTime(now)
				if err != nil {
					return usageError(fmt.Errorf("--now: %w", err))
				}
				clock = func() time.Time { return t }
			}
			srv, err := sandbox.New(sandbox.Config{Seed: seed, Now: clock, APIKeys: keys, Logger: e.log})
			if err != nil {
				return usageError(err)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
			e.log.Info("sandbox listening", "url", "http://"+ln.Addr().String(), "seed", seed, "api_keys", len(keys))
			return sandbox.Serve(cmd.Context(), ln, srv)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on (port 0: any free port, logged)")
	f.Int64Var(&seed, "seed", 1, "seed of the generated data")
	f.StringVar(&now, "now", "", "pin the sandbox clock (RFC 3339 or YYYY-MM-DD); default the wall clock")
	f.StringArrayVar(&keys, "api-key", []string{"sandbox"}, "an API key the sandbox accepts (repeatable)")
	return cmd
}
