package push_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/apitest"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/push"
	"github.com/seoetl/etl/sandbox"
)

func TestMain(m *testing.M) {
	pgtest.Layout = load.DistributeDatabase // with TEST_CITUS_URL: make test-citus
	pgtest.Main(m)
}

// sent is one update request the sandbox answered.
type sent struct {
	kind   string // bulk, single
	at     time.Time
	status int
	ids    []string // the locations it UPDATED
	failed []string
}

// fixture is a sandbox over HTTP on a virtual clock, a warehouse, and the
// log of the update requests the sandbox answered.
type fixture struct {
	pool    *pgxpool.Pool
	wall    *apitest.VirtualClock
	day     time.Time
	sb      *sandbox.Server
	url     string
	account string
	token   string
	client  *extract.Client

	tooMany atomic.Int64
	mu      sync.Mutex
	log     []sent
	// mw, when set, wraps the sandbox's handler (faults of a test).
	mw func(http.Handler) http.Handler
}

var day1 = time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)

func newFixture(t *testing.T, account string, configure ...func(*sandbox.Config)) *fixture {
	t.Helper()
	f := &fixture{wall: apitest.NewVirtualClock(day1), day: day1, account: account}
	cfg := sandbox.Config{Seed: 7, Now: func() time.Time { return f.day }, WallClock: f.wall.Now, APIKeys: []string{account}}
	for _, c := range configure {
		c(&cfg)
	}
	sb, err := sandbox.New(cfg)
	require.NoError(t, err)
	f.sb = sb
	h := sb.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var next http.Handler = h
		if f.mw != nil {
			next = f.mw(h)
		}
		if r.Method != http.MethodPut {
			rec := &recorder{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			if rec.status == http.StatusTooManyRequests {
				f.tooMany.Add(1)
			}
			return
		}
		rec := &recorder{ResponseWriter: w, keep: true}
		at := f.wall.Now()
		next.ServeHTTP(rec, r)
		if rec.status == http.StatusTooManyRequests {
			f.tooMany.Add(1)
		}
		s := sent{kind: "single", at: at, status: rec.status}
		if strings.HasSuffix(r.URL.Path, "/locations") {
			s.kind = "bulk"
			var b listing.BulkBody
			if json.Unmarshal([]byte(rec.body.String()), &b) == nil {
				for _, res := range b.Data {
					if res.State == catalog.StateUpdated {
						s.ids = append(s.ids, res.LocationID)
					} else {
						s.failed = append(s.failed, res.LocationID)
					}
				}
			}
		} else if rec.status == http.StatusOK {
			s.ids = []string{r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]}
		}
		f.mu.Lock()
		f.log = append(f.log, s)
		f.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	tok, err := sb.IssueToken(account)
	require.NoError(t, err)
	f.token = tok.AccessToken
	f.pool = pgtest.NewPool(t)
	f.client, err = extract.New(extract.Config{BaseURL: f.url, Clock: f.wall, Backoff: 100 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		Authorize: apitest.Bearer(tok.AccessToken)})
	require.NoError(t, err)
	return f
}

type recorder struct {
	http.ResponseWriter
	status int
	keep   bool
	body   strings.Builder
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.keep {
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

// pull pulls the account's listings into the warehouse at the virtual
// clock's time.
func (f *fixture) pull(t *testing.T) {
	t.Helper()
	now := f.wall.Now()
	spec, err := jobspec.ParseSpec("jobs.yaml", fmt.Appendf(nil, "jobs:\n  - name: stores\n    listings: {account: %s}\n", f.account), now)
	require.NoError(t, err)
	r, err := pipeline.NewRunner(pipeline.Config{Pool: f.pool, Now: f.wall.Now,
		AccountClient: func(string) (*extract.Client, error) { return f.client, nil }})
	require.NoError(t, err)
	sum, err := r.Run(t.Context(), spec.Jobs[0])
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
}

// desiredFromPulled makes the table desired from the pulled locations, in
// snake case, hours as jsonb and reopen_date a date.
func (f *fixture) desiredFromPulled(t *testing.T, name string) {
	t.Helper()
	_, err := f.pool.Exec(t.Context(), fmt.Sprintf(`CREATE TABLE %s AS SELECT location_id AS id, location_name, city, address,
		additional_address_info, zip, phone, region, website_url, business_hours, holiday_hours, reopen_date
		FROM listings_current WHERE account = $1 AND NOT gone`, name), f.account)
	require.NoError(t, err)
}

// rename gives every location of the table desired the name prefix and
// its id: a change to push.
func (f *fixture) rename(t *testing.T, prefix string) {
	t.Helper()
	_, err := f.pool.Exec(t.Context(), `UPDATE desired SET location_name = $1 || id`, prefix)
	require.NoError(t, err)
}

// completeIDs returns the ids of the first n locations pulled COMPLETE,
// in id order.
func (f *fixture) completeIDs(t *testing.T, n int) []string {
	t.Helper()
	rows, err := f.pool.Query(t.Context(), `SELECT location_id FROM listings_current WHERE account = $1 AND status = 'COMPLETE' ORDER BY 1 LIMIT $2`, f.account, n)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, ids, n)
	return ids
}

func (f *fixture) run(t *testing.T, relation string, opts push.Options) (*push.Summary, error) {
	t.Helper()
	return push.Run(t.Context(), push.Config{Pool: f.pool, Client: f.client, Account: f.account, Relation: relation,
		Now: f.wall.Now, Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))}, opts)
}

func (f *fixture) sentLog() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.log...)
}

// get reads a location from the sandbox.
func (f *fixture) get(t *testing.T, id string) listing.Location {
	t.Helper()
	resp, err := f.client.Listings().Get(t.Context(), id)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b listing.LocationBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	return b.Data
}

// outcomes counts the items of a push by outcome, as recorded.
func (f *fixture) outcomes(t *testing.T, pushID int64) map[string]int {
	t.Helper()
	rows, err := f.pool.Query(t.Context(), `SELECT outcome, count(*) FROM listing_push_items WHERE push_id = $1 GROUP BY outcome`, pushID)
	require.NoError(t, err)
	out := map[string]int{}
	for rows.Next() {
		var o string
		var n int
		require.NoError(t, rows.Scan(&o, &n))
		out[o] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// TestPush500 is the issue's test: 500 locations, changed but for some
// unchanged, some invalid, some not COMPLETE (refused locally, and a few
// whose pulled status is stale, failed by the provider); only the changed
// valid ones are sent, no 429, every outcome recorded, the sandbox holds
// what the desired table says for every UPDATED item, and the dry run's
// requests and time are the push's. A second push before the next pull
// sends nothing, nor does a third after it.
func TestPush500(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n500")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	ctx := t.Context()
	// Every tenth unchanged, every tenth (from 1) invalid, the others
	// renamed.
	_, err := f.pool.Exec(ctx, `
		WITH n AS (SELECT id, row_number() OVER (ORDER BY id) AS i FROM desired)
		UPDATE desired d SET
			location_name = CASE WHEN n.i % 10 = 0 THEN d.location_name ELSE 'Pushed ' || n.i END,
			website_url = CASE WHEN n.i % 10 = 1 THEN 'ftp://not-a-site.example' ELSE d.website_url END
		FROM n WHERE n.id = d.id`)
	require.NoError(t, err)
	// Three locations that are not COMPLETE read as COMPLETE by the pull
	// (a stale status): sent, and failed by the provider.
	var stale []string
	rows, err := f.pool.Query(ctx, `SELECT c.location_id FROM listings_current c JOIN (SELECT id, row_number() OVER (ORDER BY id) AS i FROM desired) n ON n.id = c.location_id
		WHERE c.account = $1 AND c.status <> 'COMPLETE' AND n.i % 10 NOT IN (0, 1) ORDER BY 1 LIMIT 3`, f.account)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		stale = append(stale, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, stale, 3)
	_, err = f.pool.Exec(ctx, `UPDATE listing_versions SET status = 'COMPLETE' WHERE account = $1 AND location_id = ANY($2) AND valid_to IS NULL`, f.account, stale)
	require.NoError(t, err)

	dry, err := f.run(t, "desired", push.Options{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 500, dry.Rows)
	require.Equal(t, 50, dry.Unchanged)
	require.Positive(t, dry.Refused)
	require.Zero(t, dry.Sent)
	require.Empty(t, f.sentLog(), "a dry run sends nothing")
	var n int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM listing_pushes`).Scan(&n))
	require.Zero(t, n, "a dry run records nothing")
	for _, it := range dry.Items {
		if it.Outcome == push.Planned {
			require.NotEmpty(t, it.Changes, it.ID)
			require.Equal(t, "locationName", it.Changes[0].Field)
		}
		if it.Outcome == push.Refused {
			require.NotEmpty(t, it.Field, it.ID)
			require.NotEmpty(t, it.Reason, it.ID)
		}
	}
	t.Logf("dry run: %s", dry.PlanText)

	sum, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	log := f.sentLog()
	require.Zero(t, f.tooMany.Load(), "the sandbox answered 429")
	// The prediction is the push.
	require.Equal(t, dry.PlannedRequests, len(log))
	require.Equal(t, dry.PlannedRequests, sum.BulkRequests+sum.SingleRequests)
	require.Equal(t, len(dry.Plan.Bulk), sum.BulkRequests)
	require.Equal(t, dry.PlannedDuration, log[len(log)-1].at.Sub(log[0].at), "the last request went when the dry run said")
	// Only the changed valid locations were sent, each once.
	sentIDs := map[string]int{}
	for _, s := range log {
		for _, id := range append(s.ids, s.failed...) {
			sentIDs[id]++
		}
	}
	require.Len(t, sentIDs, dry.ToSend)
	for id, k := range sentIDs {
		require.Equal(t, 1, k, "location %s sent %d times", id, k)
	}
	require.Equal(t, dry.ToSend, sum.Sent)
	require.Equal(t, len(stale), sum.Failed)
	require.Equal(t, sum.Sent-len(stale), sum.Updated)
	require.Equal(t, dry.Refused, sum.Refused)
	require.Equal(t, 50, sum.Unchanged)
	// Every outcome is recorded, as the summary says.
	got := f.outcomes(t, sum.PushID)
	require.Equal(t, map[string]int{push.Updated: sum.Updated, push.Failed: sum.Failed, push.Refused: sum.Refused, push.Unchanged: sum.Unchanged}, got)
	var status string
	var updated, failed int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT status, updated, failed FROM listing_pushes WHERE push_id = $1`, sum.PushID).Scan(&status, &updated, &failed))
	require.Equal(t, "done", status)
	require.Equal(t, sum.Updated, updated)
	require.Equal(t, sum.Failed, failed)
	for _, id := range stale {
		var code, detail string
		var transient bool
		require.NoError(t, f.pool.QueryRow(ctx, `SELECT outcome, detail, transient FROM listing_push_items WHERE push_id = $1 AND location_id = $2`,
			sum.PushID, id).Scan(&code, &detail, &transient))
		require.Equal(t, push.Failed, code)
		require.Equal(t, catalog.DetailLocationHasNotCompleteStatus, detail)
		require.False(t, transient)
	}
	var refusedNotComplete int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM listing_push_items WHERE push_id = $1 AND outcome = 'REFUSED' AND code = $2`,
		sum.PushID, catalog.DetailLocationHasNotCompleteStatus).Scan(&refusedNotComplete))
	require.Positive(t, refusedNotComplete, "some locations not COMPLETE were refused locally")
	// The sandbox holds the desired location of every UPDATED item.
	for _, it := range sum.Items {
		if it.Outcome != push.Updated {
			continue
		}
		var content []byte
		require.NoError(t, f.pool.QueryRow(ctx, `SELECT to_jsonb(d) FROM desired d WHERE id = $1`, it.ID).Scan(&content))
		var row map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(content, &row))
		loc := f.get(t, it.ID)
		var name string
		require.NoError(t, json.Unmarshal(row["location_name"], &name))
		require.Equal(t, name, loc.LocationName, it.ID)
		var stored listing.Location
		require.NoError(t, f.pool.QueryRow(ctx, `SELECT content FROM listing_push_items WHERE push_id = $1 AND location_id = $2`, sum.PushID, it.ID).Scan(&stored))
		require.True(t, listing.Equal(stored, loc), "%s: %v", it.ID, listing.Diff(loc, stored))
	}

	// Again, before any pull: nothing to send.
	f.mu.Lock()
	f.log = nil
	f.mu.Unlock()
	again, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Empty(t, f.sentLog(), "a second push sent again")
	require.Equal(t, sum.Updated+50, again.Unchanged)
	require.Equal(t, len(stale), again.Waiting, "the permanent failures wait for a change")
	require.Equal(t, sum.Refused, again.Refused)

	// And again: the permanent failures still wait.
	fourth, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Empty(t, f.sentLog(), "a third push sent again")
	require.Equal(t, len(stale), fourth.Waiting)
	rep, err := push.Status(ctx, f.pool, f.account)
	require.NoError(t, err)
	require.Equal(t, fourth.PushID, rep.Last.PushID)
	waiting := 0
	for _, p := range rep.Pending {
		if p.Outcome == push.Waiting {
			waiting++
			require.Equal(t, catalog.DetailLocationHasNotCompleteStatus, p.Detail)
		}
	}
	require.Equal(t, len(stale), waiting)

	// After a pull, the pulled versions are the pushed ones: still
	// nothing to send.
	f.wall.Sleep(ctx, time.Hour)
	f.pull(t)
	third, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Empty(t, f.sentLog(), "a push after the pull sent again")
	require.Equal(t, sum.Updated+50, third.Unchanged)
	require.Zero(t, third.Waiting, "the pull read the stale statuses again: a change")
	require.Equal(t, sum.Refused+len(stale), third.Refused, "refused locally now that the pull shows them not COMPLETE")
}
