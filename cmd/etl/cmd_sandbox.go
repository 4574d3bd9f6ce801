package main

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
)

// sandboxOptions are the flags of etl sandbox.
type sandboxOptions struct {
	addr, now, faults string
	seed, units       int64
	keys              []string
	slow              time.Duration
	rate, concurrency int
	maxLimit          int

	// The token service.
	deviceExpires, deviceInterval time.Duration
	autoApprove                   int
	clientID, clientSecret        string

	// The listing endpoints.
	noLocalPro []string
}

// config validates the flags and turns them into a sandbox.Config. On the
// command line 0 means "no limit" for --units, --rate and --concurrency.
func (o sandboxOptions) config() (sandbox.Config, error) {
	cfg := sandbox.Config{Seed: o.seed, APIKeys: o.keys, Units: o.units, SlowDelay: o.slow,
		DeviceExpiresIn: o.deviceExpires, DeviceInterval: o.deviceInterval, DeviceAutoApprove: o.autoApprove,
		ClientID: o.clientID, ClientSecret: o.clientSecret, NoLocalPro: o.noLocalPro}
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
	if cfg.MaxLimit, err = limit("max-limit", o.maxLimit); err != nil {
		return cfg, err
	}
	if o.slow <= 0 {
		return cfg, fmt.Errorf("--slow must be a positive duration such as 2s or 500ms, got %v", o.slow)
	}
	if cfg.Faults, err = sandbox.ParseFaults(o.faults); err != nil {
		return cfg, fmt.Errorf("--faults: %w", err)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"device-expires", o.deviceExpires}, {"device-interval", o.deviceInterval}} {
		if d.v < time.Second || d.v%time.Second != 0 {
			return cfg, fmt.Errorf("--%s must be a whole number of seconds, at least 1s, such as 5s or 5m (the token service answers it in seconds), got %v", d.flag, d.v)
		}
	}
	if o.autoApprove < 0 {
		return cfg, fmt.Errorf("--auto-approve must be 0 (off) or the poll of a device code that gets the tokens (1: the first), got %d", o.autoApprove)
	}
	for _, c := range []struct{ flag, v string }{{"client-id", o.clientID}, {"client-secret", o.clientSecret}} {
		if c.v == "" || strings.IndexFunc(c.v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return cfg, fmt.Errorf("--%s must be a non-empty value without spaces", c.flag)
		}
	}
	for i, k := range o.noLocalPro {
		// The value is a key: never repeat it.
		if !slices.Contains(o.keys, k) {
			return cfg, fmt.Errorf("--no-local-pro value %d of %d is not one of the --api-key values", i+1, len(o.noLocalPro))
		}
	}
	return cfg, nil
}

func newSandboxCmd(e *env) *cobra.Command {
	var o sandboxOptions
	cmd := &cobra.Command{
		Use:   "sandbox --addr HOST:PORT",
		Short: "Serve a free, deterministic stand-in of the data API",
		Long: `Serve a free stand-in of the data API: its backlink and keyword endpoints
(paths, parameters, errors, prices, account limits; data deterministic for
a --seed and the clock), its token service and its listing endpoints, all
on --addr. GET /sandbox/usage?key=KEY says what requests would have cost.
Point etl at it with ETL_API_URL=http://HOST:PORT and ETL_API_KEY one of
--api-key. Every endpoint, fault and rule: docs/local-and-sandbox.md.`,
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
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "address to listen on (port 0: any, logged)")
	f.Int64Var(&o.seed, "seed", 1, "seed of the data and of the faults")
	f.StringVar(&o.now, "now", "", "pin its clock (RFC 3339 or YYYY-MM-DD); default the wall clock")
	f.StringArrayVar(&o.keys, "api-key", []string{"sandbox"}, "an API key it accepts (repeatable)")
	f.Int64Var(&o.units, "units", 0, "units each key may spend, then 403; 0: unlimited")
	f.IntVar(&o.rate, "rate", sandbox.DefaultRatePerSecond, "requests a second per key, then 429; 0: no limit")
	f.IntVar(&o.concurrency, "concurrency", sandbox.DefaultMaxConcurrent, "requests in flight per key, then 429; 0: no limit")
	f.IntVar(&o.maxLimit, "max-limit", sandbox.DefaultMaxLimit, "largest limit a page may ask, then 400; 0: no bound")
	f.StringVar(&o.faults, "faults", "", "fault rates of 429, 500, 503, slow, cut, malformed: '503=0.02,cut=0.01'")
	f.DurationVar(&o.slow, "slow", sandbox.DefaultSlowDelay, "how long the slow fault delays an answer")
	f.DurationVar(&o.deviceExpires, "device-expires", catalog.DeviceCodeLifetime, "lifetime of a device code, whole seconds")
	f.DurationVar(&o.deviceInterval, "device-interval", catalog.DevicePollInterval, "polling interval of a device code, whole seconds")
	f.IntVar(&o.autoApprove, "auto-approve", 0, "approve each device code at its N-th poll; 0: never")
	f.StringVar(&o.clientID, "client-id", sandbox.DefaultClientID, "client_id of the auth code flow")
	f.StringVar(&o.clientSecret, "client-secret", sandbox.DefaultClientSecret, "its client_secret (never logged)")
	f.StringArrayVar(&o.noLocalPro, "no-local-pro", nil, "an --api-key without the Local Pro plan: 403 (repeatable)")
	return cmd
}
