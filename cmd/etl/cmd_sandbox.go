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
		Long: `Serve a local stand-in of the data API: same paths, parameters, formats,
errors and prices, with data that is deterministic for a given seed, target
and clock. Nothing it serves costs money; GET /sandbox/usage?key=KEY tells
what the same requests would have cost.

Like the real API it allows each key 10 requests per second and 10 concurrent
requests (--rate, --concurrency) and answers 429, without Retry-After, past
them. A paged endpoint (links, ref-domains, ref-ips, pages, anchors,
competitors, matrix) serves at most --max-limit lines a request (default
10000): a larger limit answers 400 naming the bound, free, as the spec
leaves the bound unshown (8.2) and etl learns it from that answer. With
--units every key has a balance: a request the rest of it cannot
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
of the --api-key values.

The token service of the spec (section 5) is served on the same address, so
ETL_AUTH_URL is the same http://HOST:PORT (both are logged at start):
  POST /dag/device/code       device authorization grant (RFC 8628): answers
                              device_code, user_code, verification_uri,
                              expires_in (--device-expires) and interval
                              (--device-interval)
  POST /dag/device/token      poll it, form-encoded, with device_code and
                              grant_type=urn:ietf:params:oauth:grant-type:device_code:
                              authorization_pending; slow_down when polled
                              sooner than the interval (which then grows by
                              5s); access_denied; expired_token; then the
                              tokens. Renews device-flow tokens too
                              (grant_type=refresh_token)
  GET  /dag/device            the verification page: the user code and how
                              to approve it
  GET  /oauth2/authorize      authorization code flow: client_id
                              (--client-id), redirect_uri on this host,
                              response_type=code, scope, state; redirects at
                              once with a code
  POST /oauth2/access_token   form-encoded only (a JSON body is refused):
                              grant_type=authorization_code (code,
                              redirect_uri) or refresh_token, with client_id
                              and client_secret (--client-secret) in the form
                              or HTTP Basic
  GET  /oauth2/success        a page on this host showing a redirect's code
Access tokens live 7 days; refresh tokens 30 days, and are used once (each
renewal answers a new one); codes and tokens expire on the sandbox clock, so
under --now they never do. A bearer token works on every backlink and keyword
endpoint (Authorization: Bearer TOKEN) and spends the units of its account:
the API key it was approved for. Errors are the RFC 6749 object {error,
error_description}. --faults 429, 500, 503 and slow hit the token endpoints
too (never cut: a cut answer would lose a rotated refresh token).

Nobody signs in to the sandbox; sandbox-only calls stand in for the person:
  POST /sandbox/device/approve?user_code=CODE[&account=KEY]
                              approve: the tokens spend KEY's units (one of
                              --api-key; default the first)
  POST /sandbox/device/deny?user_code=CODE
  GET  /oauth2/authorize?...&account=KEY
                              log in as KEY (default the first --api-key)
--auto-approve N approves every device code, for the first --api-key, at its
N-th poll (1: the first poll gets the tokens), so a device flow runs
unattended.

The listing-management endpoints of the spec (section 4.5) are served under
/apis/v4/listing-management/v1/external/locations and, interchangeably,
/apis/v4-raw/listing-management/v1/external/locations (PREFIX below):
  GET PREFIX/ID               one location, with its status: {data, requested}
  GET PREFIX?page=P&size=S    a page, page from 1, size 20 by default and at
                              most 100: {data: {page, totalElements,
                              totalPages, content}, requestId}; the content
                              carries no status
  PUT PREFIX/ID               update one location (a JSON body, Content-Type:
                              application/json): {data, requested}
  PUT PREFIX                  update up to 50 locations of unique ids,
                              {locations: [...]}: {data: [{locationId, state,
                              error?}], requestId}, HTTP 200 even when items
                              FAILED; repeated ids refuse the whole request
They take a bearer token (401 {code: 401, message} without a valid one; an
API key is not enough) and the Local Pro plan: every --api-key has it but
those named by --no-local-pro, whose tokens are answered 403, error.code
FORBIDDEN with detail LOCAL_PRO_PLAN_REQUIRED (the spec does not show this
answer: it is the sandbox's). The account of a token (the --api-key it was
approved for) owns invented locations, as many as n<digits> in the key says
(agency-n1500 owns 1500; otherwise a few to a few thousand, by --seed); some
are not COMPLETE (IN_PROGRESS or NOT_SYNCED, the sandbox's statuses: the
second location of every account is IN_PROGRESS), and their errors come and
go with the sandbox day. An update is checked against every rule of spec
2.14 and kept in memory for later reads; a field it leaves out keeps its
value. Errors come as {error: {code, message, details: [{code, message,
field, index}]}, requestId}: 404 for RESOURCE_NOT_FOUND, 400 for
VALIDATION_ERROR and BAD_REQUEST. Per account, the rate limits of spec 8.2
hold, as sliding windows: 10 Get location and 10 Get locations a second, 5
single updates a second, bulk updates one at a time and 5 a minute; past
them 429 {code: 429, message}. --rate and --concurrency do not apply to
these endpoints. They cost no units and are not counted in /sandbox/usage.
--faults 429, 500, 503 and slow hit them too, answered {code, message} and
drawn before an update is applied, so a retry is safe; cut breaks the
answers of gets only, never an update's.`,
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
	f.IntVar(&o.maxLimit, "max-limit", sandbox.DefaultMaxLimit, "largest limit a paged endpoint accepts (past it: 400 naming it); 0: no bound")
	f.StringVar(&o.faults, "faults", "", "fault rates, as in '503=0.02,cut=0.01' (429, 500, 503, slow, cut, malformed); default none")
	f.DurationVar(&o.slow, "slow", sandbox.DefaultSlowDelay, "how long the slow fault delays an answer")
	f.DurationVar(&o.deviceExpires, "device-expires", catalog.DeviceCodeLifetime, "lifetime of a device code (expires_in), whole seconds")
	f.DurationVar(&o.deviceInterval, "device-interval", catalog.DevicePollInterval, "polling interval of a device code (interval), whole seconds")
	f.IntVar(&o.autoApprove, "auto-approve", 0, "approve every device code for the first --api-key at its N-th poll; 0: only /sandbox/device/approve does")
	f.StringVar(&o.clientID, "client-id", sandbox.DefaultClientID, "client_id of the authorization code flow")
	f.StringVar(&o.clientSecret, "client-secret", sandbox.DefaultClientSecret, "client_secret of the authorization code flow (never logged)")
	f.StringArrayVar(&o.noLocalPro, "no-local-pro", nil, "an --api-key whose account lacks the Local Pro plan: its tokens get 403 on the listing endpoints (repeatable)")
	return cmd
}
