package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/apitest"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

// hybridClock is the sandbox's wall clock in the listings worlds: real
// time plus an offset. The in-process pull paces on it, its sleeps moving
// the offset (so a pull of hundreds of locations takes no real time), and
// the commands' pushes pace on real time, which the sandbox sees pass.
// Moving the offset on (and, in the push's kill trials, the send times the
// pushes recorded in listing_push_requests back: listingsWorld.shift)
// makes each new push, which seeds its pacers from them, and the sandbox
// both see windows empty.
type hybridClock struct{ offset atomic.Int64 }

func (c *hybridClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *hybridClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.offset.Add(int64(max(d, 0)))
	return nil
}

// listingsWorld is what the etl listings commands need: a sandbox of the
// account's locations (the n<digits> of its name; seed 7, its clock
// pinned at cliNow, its wall clock the hybrid clock) served over HTTP,
// through mw when it is set, a warehouse, and the account signed in there
// (etl auth login).
type listingsWorld struct {
	account string
	env     map[string]string
	pool    *pgxpool.Pool
	clock   *hybridClock
	// mw, when set (setMW), wraps the sandbox's handler; the server's
	// goroutines read it while the test sets it.
	mw atomic.Pointer[func(http.Handler) http.Handler]
	// token is the account's access token, and client calls the sandbox
	// with it on the hybrid clock, as another tool would.
	token  string
	client *extract.Client
}

// setMW puts mw in front of the sandbox from the next request on.
func (w *listingsWorld) setMW(mw func(http.Handler) http.Handler) { w.mw.Store(&mw) }

func newListingsWorld(t *testing.T, account string) *listingsWorld {
	t.Helper()
	w := &listingsWorld{account: account, clock: &hybridClock{}}
	sb, err := sandbox.New(sandbox.Config{Seed: 7, Now: func() time.Time { return cliNow }, WallClock: w.clock.Now,
		APIKeys: []string{account}, DeviceAutoApprove: 1, DeviceInterval: time.Second})
	require.NoError(t, err)
	h := sb.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if mw := w.mw.Load(); mw != nil {
			(*mw)(h).ServeHTTP(rw, r)
			return
		}
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	dbURL := pgtest.NewDB(t)
	_, key, err := auth.NewKey()
	require.NoError(t, err)
	w.env = map[string]string{"DATABASE_URL": dbURL, "ETL_API_URL": srv.URL, "ETL_SECRET_KEY": key}
	r := etl(t, w.env, "auth", "login", "--account", account)
	require.Equal(t, exitOK, r.code, r.stderr)
	w.pool, err = pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(w.pool.Close)
	tok, err := sb.IssueToken(account)
	require.NoError(t, err)
	w.token = tok.AccessToken
	w.client, err = extract.New(extract.Config{BaseURL: srv.URL, Clock: w.clock, Authorize: apitest.Bearer(tok.AccessToken)})
	require.NoError(t, err)
	return w
}

// newPushWorld is a listings world whose account was pulled (in process)
// and a table desired made of its pulled locations: what etl listings
// push needs. The pushes, in real time, meet empty windows at the
// sandbox.
func newPushWorld(t *testing.T, account string) *listingsWorld {
	t.Helper()
	w := newListingsWorld(t, account)
	w.pull(t)
	w.createDesired(t, 0)
	w.clock.offset.Add(int64(2 * time.Minute))
	return w
}

// pull runs the account's listings job in process, with the world's
// client, on the hybrid clock. Observed at real time, as the pushes
// record theirs: the pushes tell a pull that saw their updates from one
// that did not by it.
func (w *listingsWorld) pull(t *testing.T) {
	t.Helper()
	spec, err := jobspec.ParseSpec("jobs.yaml", fmt.Appendf(nil, "jobs:\n  - name: stores\n    listings: {account: %s}\n", w.account), cliNow)
	require.NoError(t, err)
	runner, err := pipeline.NewRunner(pipeline.Config{Pool: w.pool, AccountClient: func(string) (*extract.Client, error) { return w.client, nil }})
	require.NoError(t, err)
	sum, err := runner.Run(t.Context(), spec.Jobs[0])
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
}

// createDesired makes the table desired of the account's COMPLETE
// locations as pulled, as a push reads them; when limit is positive, of
// the first limit of them by id.
func (w *listingsWorld) createDesired(t *testing.T, limit int) {
	t.Helper()
	q := `CREATE TABLE desired AS SELECT location_id AS id, location_name, city, address,
		additional_address_info, zip, phone, region, website_url, business_hours, holiday_hours, reopen_date
		FROM listings_current WHERE account = $1 AND status = 'COMPLETE'`
	if limit > 0 {
		q += ` ORDER BY location_id LIMIT ` + strconv.Itoa(limit)
	}
	_, err := w.pool.Exec(t.Context(), q, w.account)
	require.NoError(t, err)
}

// rename gives every location of the table desired the name prefix and
// its id: a change to push.
func (w *listingsWorld) rename(t *testing.T, prefix string) {
	t.Helper()
	_, err := w.pool.Exec(t.Context(), `UPDATE desired SET location_name = $1 || id`, prefix)
	require.NoError(t, err)
}

// desiredIDs is the ids of the table desired, in order.
func (w *listingsWorld) desiredIDs(t *testing.T) []string {
	t.Helper()
	var ids []string
	rows, err := w.pool.Query(t.Context(), `SELECT id FROM desired ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

// shift moves the sandbox's windows and the pushes' recorded requests two
// minutes apart, so that each push meets empty windows.
func (w *listingsWorld) shift(t *testing.T) {
	t.Helper()
	w.clock.offset.Add(int64(2 * time.Minute))
	_, err := w.pool.Exec(t.Context(), `UPDATE listing_push_requests
		SET sent_at = sent_at - interval '2 minutes', answered_at = answered_at - interval '2 minutes'`)
	require.NoError(t, err)
}

// putKiller is the middleware of the kill trials of a push or an undo:
// it SIGKILLs the trial's etl process at its killAt-th PUT (0: none) in
// a phase: 0 before the sandbox sees it, 1 after the sandbox applied it
// but before it answers, 2 after it answered. It counts the sandbox's
// UPDATED answers per location.
type putKiller struct {
	mu      sync.Mutex
	updated map[string]int // UPDATED answers of the sandbox, per location
	puts    int            // PUTs of the current trial
	killAt  int            // the PUT of the current trial that kills it (0: none)
	phase   int            // 0 before the sandbox, 1 applied and unanswered, 2 answered
	proc    *etlProcess
}

func newPutKiller() *putKiller { return &putKiller{updated: map[string]int{}} }

func (k *putKiller) middleware(t *testing.T) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPut {
				h.ServeHTTP(w, r)
				return
			}
			k.mu.Lock()
			k.puts++
			kill := k.puts == k.killAt
			ph, p := k.phase, k.proc
			k.mu.Unlock()
			if kill && ph == 0 {
				killProc(t, p)
				hangUpConn(w)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			var ids []string
			if strings.HasSuffix(r.URL.Path, "/locations") {
				var b listing.BulkBody
				if json.Unmarshal(rec.Body.Bytes(), &b) == nil {
					for _, res := range b.Data {
						if res.State == catalog.StateUpdated {
							ids = append(ids, res.LocationID)
						}
					}
				}
			} else if rec.Code == http.StatusOK {
				ids = append(ids, r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
			}
			k.mu.Lock()
			for _, id := range ids {
				k.updated[id]++
			}
			k.mu.Unlock()
			if kill && ph == 1 {
				killProc(t, p)
				hangUpConn(w)
				return
			}
			for key, v := range rec.Header() {
				w.Header()[key] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			if kill {
				killProc(t, p)
			}
		})
	}
}

// clearUpdated forgets the UPDATED answers counted so far.
func (k *putKiller) clearUpdated() {
	k.mu.Lock()
	clear(k.updated)
	k.mu.Unlock()
}

// trial runs etl with args as a process of its own until it ends; when
// kill is set, killed at a PUT (of the first two) and a phase that rng
// draws. It logs the trial as what, and returns its exit code (-1 when
// killed), stdout and stderr.
func (k *putKiller) trial(t *testing.T, what string, rng *rand.Rand, kill bool, bin string, env map[string]string,
	args ...string) (code int, stdout, stderr string) {
	t.Helper()
	k.mu.Lock()
	k.puts, k.killAt, k.phase = 0, 0, 0
	if kill {
		k.killAt, k.phase = 1+rng.IntN(2), rng.IntN(3)
	}
	k.proc = startETL(t, bin, env, args...)
	p := k.proc
	at, ph := k.killAt, k.phase
	k.mu.Unlock()
	code, stderr = p.wait()
	t.Logf("%s (kill at PUT %d, phase %d): exit %d\n%s", what, at, ph, code, p.stdout.String())
	return code, p.stdout.String(), stderr
}

// killProc SIGKILLs p.
func killProc(t *testing.T, p *etlProcess) {
	if err := p.cmd.Process.Kill(); err != nil {
		t.Errorf("killing etl: %v", err)
	}
}

// hangUpConn closes the connection without an answer.
func hangUpConn(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}
