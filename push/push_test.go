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

	"errors"
	"maps"
	"slices"

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

// TestPushRefusesBadInput: what the relation may get wrong, whole (an
// error naming it, nothing recorded) or per location (REFUSED with the
// field and the reason, the others sent).
func TestPushRefusesBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n20")
	f.pull(t)
	ctx := t.Context()
	f.desiredFromPulled(t, "good")

	for _, tc := range []struct {
		name, relation, setup, want string
	}{
		{"no such relation", "nowhere", "", "relation nowhere does not exist"},
		{"no id column", "noid", `CREATE TABLE noid AS SELECT location_name, city, address, additional_address_info, zip, phone, region, website_url, business_hours, holiday_hours, reopen_date FROM good`, `no column "id" or "location_id"`},
		{"missing phone", "nophone", `CREATE TABLE nophone AS SELECT id, location_name, city, address, additional_address_info, zip, region, website_url, business_hours, holiday_hours, reopen_date FROM good`, `no column "phone"`},
		{"field twice", "twice", `CREATE TABLE twice AS SELECT *, phone AS "phone_x", location_name AS "locationName" FROM good`, "locationName by"},
		{"semicolon", "good; DROP TABLE good", "", "is not a relation name"},
		{"quote", `good"`, "", "is not a relation name"},
		{"unclosed quote", `"good`, "", "is not closed"},
		{"three parts", "a.b.c", "", "at most a schema and a name"},
		{"integer id", "intid", `CREATE TABLE intid AS SELECT 1 AS id, location_name, city, address, additional_address_info, zip, phone, region, website_url, business_hours, holiday_hours, reopen_date FROM good`, "must be of a string type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != "" {
				_, err := f.pool.Exec(ctx, tc.setup)
				require.NoError(t, err)
			}
			_, err := f.run(t, tc.relation, push.Options{})
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.True(t, errors.Is(err, push.ErrRelation), "%v", err)
		})
	}
	var n int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM listing_pushes`).Scan(&n))
	require.Zero(t, n, "a push that could not start records nothing")
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM good`).Scan(&n))
	require.Equal(t, 20, n, "the table survived")

	t.Run("unknown account", func(t *testing.T) {
		_, err := push.Run(ctx, push.Config{Pool: f.pool, Client: f.client, Account: "nobody", Relation: "good"}, push.Options{})
		require.ErrorIs(t, err, push.ErrNoSuchAccount)
		require.ErrorContains(t, err, "account nobody does not exist")
	})

	// A quoted name with a semicolon is a name like another.
	_, err := f.pool.Exec(ctx, `CREATE SCHEMA "my; schema"; CREATE TABLE "my; schema"."Desired ""x""" AS SELECT * FROM good`)
	require.NoError(t, err)
	// Per location: duplicate ids, hours that are no JSON or of the wrong
	// shape, a misspelt weekday, a column of the wrong type.
	_, err = f.pool.Exec(ctx, `
		ALTER TABLE "my; schema"."Desired ""x""" ALTER COLUMN business_hours TYPE text, ALTER COLUMN zip TYPE text;
		UPDATE "my; schema"."Desired ""x""" SET location_name = 'Renamed ' || id;
		WITH o AS (SELECT id, row_number() OVER (ORDER BY id) AS i FROM "my; schema"."Desired ""x""")
		UPDATE "my; schema"."Desired ""x""" d SET business_hours = CASE o.i WHEN 2 THEN '{"monday": [' WHEN 3 THEN '"9 to 5"'
			WHEN 4 THEN '{"lunes": [{"from": "09:00", "to": "17:00"}]}' ELSE d.business_hours END
		FROM o WHERE o.id = d.id;
		INSERT INTO "my; schema"."Desired ""x""" SELECT * FROM "my; schema"."Desired ""x""" ORDER BY id LIMIT 1;
		CREATE TABLE badzip AS SELECT id, location_name, city, address, additional_address_info, 12345 AS zip, phone, region, website_url, business_hours, holiday_hours, reopen_date FROM good`)
	require.NoError(t, err)
	sum, err := f.run(t, `"my; schema"."Desired ""x"""`, push.Options{})
	require.NoError(t, err)
	require.Equal(t, 21, sum.Rows)
	byID := map[string]push.Item{}
	for _, it := range sum.Items {
		byID[it.ID] = it
	}
	require.Len(t, byID, 20)
	ids := make([]string, 0, 20)
	for _, it := range sum.Items {
		ids = append(ids, it.ID)
	}
	first := byID[ids[0]]
	require.Equal(t, push.Refused, first.Outcome)
	require.Equal(t, push.CodeDuplicateID, first.Code)
	require.Equal(t, "id", first.Field)
	for i, want := range map[int]struct{ code, field string }{
		1: {listing.CodeInvalidType, "businessHours"},
		2: {listing.CodeInvalidType, "businessHours"},
		3: {listing.CodeUnknownField, "businessHours.lunes"},
	} {
		it := byID[ids[i]]
		require.Equal(t, push.Refused, it.Outcome, it.ID)
		require.Equal(t, want.code, it.Code, it.ID)
		require.Equal(t, want.field, it.Field, it.ID)
		require.NotEmpty(t, it.Reason)
	}
	require.Positive(t, sum.Updated, "the good rows went")
	for _, s := range f.sentLog() {
		for _, id := range s.ids {
			require.NotEqual(t, ids[0], id, "a duplicate id was sent")
		}
	}

	sum, err = f.run(t, "badzip", push.Options{})
	require.NoError(t, err)
	for _, it := range sum.Items {
		if it.Outcome == push.Unchanged {
			continue
		}
		require.Equal(t, push.Refused, it.Outcome)
		require.Equal(t, "zip", it.Field)
		require.Contains(t, it.Reason, "integer")
	}

	t.Run("only", func(t *testing.T) {
		sum, err := f.run(t, "good", push.Options{Only: []string{ids[5], "no-such-id"}, DryRun: true})
		require.NoError(t, err)
		require.Len(t, sum.Items, 2)
		require.Equal(t, push.CodeNotInRelation, sum.Items[1].Code)
		require.True(t, sum.Partial())
	})
}

// TestPushReadsBackWhatIsInDoubt: a bulk request applied by the sandbox
// whose answer is lost (the connection hangs up) is read back, found
// applied and recorded UPDATED, never sent again; one lost before the
// sandbox saw it is found not applied and sent again in the next round.
func TestPushReadsBackWhatIsInDoubt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n60")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	_, err := f.pool.Exec(t.Context(), `UPDATE desired SET phone = '+1 512 555 0199'`)
	require.NoError(t, err)
	var puts int
	f.mw = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/locations") {
				next.ServeHTTP(w, r)
				return
			}
			puts++
			switch puts {
			case 1: // applied, answer lost
				next.ServeHTTP(&discard{header: http.Header{}}, r)
				hangUp(w)
			case 2: // lost before the sandbox
				hangUp(w)
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
	sum, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Zero(t, sum.Failed+sum.InDoubt+sum.NotSent, "%+v", sum)
	updated := map[string]int{}
	for _, s := range f.sentLog() {
		for _, id := range s.ids {
			updated[id]++
		}
	}
	var readBack int
	require.NoError(t, f.pool.QueryRow(t.Context(), `SELECT count(*) FROM listing_push_items WHERE push_id = $1 AND read_back`, sum.PushID).Scan(&readBack))
	require.Positive(t, readBack)
	for _, it := range sum.Items {
		if it.Outcome == push.Updated {
			require.LessOrEqual(t, updated[it.ID], 1, "%s updated twice", it.ID)
		}
	}
	require.Equal(t, sum.Updated, sum.Sent)
}

type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// TestPushLeavesUnreadableDoubtForLater: items a push left in doubt (its
// bulk request hung up, and the locations cannot be read back) stay in
// doubt through a next push that still cannot read them back: that push
// sends the others, records the doubtful ones NOT_SENT with the reason
// and exits partial (it failed on a check constraint of
// listing_push_items, recording nothing). Once they can be read back,
// they are settled and sent, each updated once.
func TestPushLeavesUnreadableDoubtForLater(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n60")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	ctx := t.Context()
	f.rename(t, "First ")
	var (
		mu       sync.Mutex
		bulks    int
		doubtful = map[string]bool{} // the ids of the bulk request hung up
		readable bool
	)
	f.mw = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/locations"):
				if bulks++; bulks == 1 {
					var req listing.BulkRequest
					require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
					for _, l := range req.Locations {
						doubtful[l.ID] = true
					}
					hangUp(w) // lost before the sandbox
					return
				}
			case r.Method == http.MethodGet && !readable && doubtful[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]:
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"code":503,"message":"unavailable"}`))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	first, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Len(t, doubtful, catalog.MaxBulkLocations)
	require.Equal(t, len(doubtful), first.InDoubt)
	require.True(t, first.Partial())

	// The desired rows of the others change: the next push sends them,
	// and leaves the doubtful ones alone.
	_, err = f.pool.Exec(ctx, `UPDATE desired SET location_name = 'Second ' || id WHERE NOT (id = ANY($1))`, slices.Collect(maps.Keys(doubtful)))
	require.NoError(t, err)
	f.mu.Lock()
	f.log = nil
	f.mu.Unlock()
	second, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err, "a push after items it cannot read back")
	require.Equal(t, len(doubtful), second.InDoubt)
	require.True(t, second.Partial())
	require.Positive(t, second.Updated)
	for _, s := range f.sentLog() {
		for _, id := range append(s.ids, s.failed...) {
			require.False(t, doubtful[id], "%s, in doubt, was sent again", id)
		}
	}
	var notSent int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM listing_push_items WHERE push_id = $1 AND outcome = 'NOT_SENT' AND reason LIKE '%in doubt since push%'`,
		second.PushID).Scan(&notSent))
	require.Equal(t, len(doubtful), notSent)
	rep, err := push.Status(ctx, f.pool, f.account)
	require.NoError(t, err)
	inDoubt := 0
	for _, p := range rep.Pending {
		if p.Outcome == push.Sent {
			inDoubt++
			require.True(t, doubtful[p.LocationID])
		}
	}
	require.Equal(t, len(doubtful), inDoubt, "etl listings status lists them in doubt")

	// Readable again: settled (not applied) and sent, once each.
	mu.Lock()
	readable = true
	mu.Unlock()
	third, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Equal(t, len(doubtful), third.Settled)
	require.Equal(t, len(doubtful), third.Updated)
	require.Zero(t, third.InDoubt+third.Failed+third.NotSent)
	updated := map[string]int{}
	for _, s := range f.sentLog() {
		for _, id := range s.ids {
			updated[id]++
		}
	}
	for id := range doubtful {
		require.Equal(t, 1, updated[id], id)
		require.Equal(t, "First "+id, f.get(t, id).LocationName)
	}
}

// TestPushSendsSinglyWhatABulkRefusedWhole: a location valid by every
// rule of spec 2.14 but too large for the provider's body (a holiday for
// every day of decades) makes its bulk request refused as a whole (413).
// The others of that request are no less valid: the next round sends
// each of them singly, so that they are UPDATED and the large one alone
// fails, permanently, and waits for a change (before, the same bulk
// request was sent again each round and each push, and none of its
// locations was ever updated).
func TestPushSendsSinglyWhatABulkRefusedWhole(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n60")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	ctx := t.Context()
	large := f.completeIDs(t, 1)[0]
	f.rename(t, "Pushed ")
	_, err := f.pool.Exec(ctx, `UPDATE desired SET business_hours = '{}', holiday_hours = (SELECT jsonb_agg(jsonb_build_object('type', 'RANGE',
			'day', to_char(date '2027-01-01' + g, 'YYYY-MM-DD'), 'times', '[{"from": "09:00", "to": "12:00"}, {"from": "13:00", "to": "17:00"}]'::jsonb))
			FROM generate_series(0, 9999) g)
		WHERE id = $1`, large)
	require.NoError(t, err)

	sum, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	log := f.sentLog()
	require.Equal(t, "bulk", log[0].kind)
	require.Equal(t, http.StatusRequestEntityTooLarge, log[0].status, "the bulk request is refused whole")
	updated := map[string]int{}
	for _, s := range log {
		for _, id := range s.ids {
			updated[id]++
		}
	}
	require.Equal(t, 1, sum.Failed, "the large location alone fails")
	require.Zero(t, sum.InDoubt+sum.NotSent)
	require.Equal(t, sum.Sent-1, sum.Updated)
	for _, it := range sum.Items {
		switch {
		case it.ID == large:
			require.Equal(t, push.Failed, it.Outcome)
			require.Equal(t, "single", it.Request)
			require.False(t, it.Transient, "a single update refused is the location's own failure")
			require.Contains(t, it.Reason, "BODY_TOO_LARGE")
		case it.Outcome == push.Updated:
			require.Equal(t, 1, updated[it.ID], it.ID)
		}
	}

	// The next push sends nothing: the large one waits for a change.
	f.mu.Lock()
	f.log = nil
	f.mu.Unlock()
	again, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Empty(t, f.sentLog())
	require.Equal(t, 1, again.Waiting)
}

// TestPushRefusesNULInHours: a json column may hold \u0000, which no text
// of PostgreSQL can: a location whose hours hold one is refused (field
// and reason), and the others are sent. Before, recording the push failed
// (the content, jsonb, could not hold the character) and nothing was
// sent.
func TestPushRefusesNULInHours(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n20")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	ctx := t.Context()
	ids := f.completeIDs(t, 3)
	_, err := f.pool.Exec(ctx, `ALTER TABLE desired ALTER COLUMN business_hours TYPE json USING business_hours::json,
		ALTER COLUMN holiday_hours TYPE json USING holiday_hours::json`)
	require.NoError(t, err)
	f.rename(t, "Pushed ")
	_, err = f.pool.Exec(ctx, `UPDATE desired SET business_hours = '{"monday": [{"from": "09:00\u0000", "to": "17:00"}]}' WHERE id = $1`, ids[0])
	require.NoError(t, err)
	_, err = f.pool.Exec(ctx, `UPDATE desired SET business_hours = '{}', holiday_hours = '[{"type": "CLOSED", "day": "2026-12-25", "x\u0000": 1}]' WHERE id = $1`, ids[1])
	require.NoError(t, err)

	sum, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	byID := map[string]push.Item{}
	for _, it := range sum.Items {
		byID[it.ID] = it
	}
	for i, field := range []string{"businessHours", "holidayHours"} {
		it := byID[ids[i]]
		require.Equal(t, push.Refused, it.Outcome, it.ID)
		require.Equal(t, field, it.Field)
		require.Contains(t, it.Reason, `\u0000`)
		require.NotContains(t, it.Reason, "\x00")
	}
	require.Equal(t, push.Updated, byID[ids[2]].Outcome)
	var refused int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM listing_push_items WHERE push_id = $1 AND outcome = 'REFUSED' AND location_id = ANY($2)`,
		sum.PushID, ids[:2]).Scan(&refused))
	require.Equal(t, 2, refused, "recorded")
}

// TestPushRecordsAnswersWithNUL: a provider's answer whose texts hold
// \u0000 (a FAILED item's error, a request id) is recorded, the character
// replaced: no text column can hold it, and failing to record an answer
// left its items in doubt and stopped the push.
func TestPushRecordsAnswersWithNUL(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n20")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	ctx := t.Context()
	f.rename(t, "Pushed ")
	f.mw = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPut {
				next.ServeHTTP(w, r)
				return
			}
			var req listing.BulkRequest
			require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
			body := listing.BulkBody{RequestID: "r\x00"}
			for _, l := range req.Locations {
				body.Data = append(body.Data, listing.Result{LocationID: l.ID, State: catalog.StateFailed,
					Error: &listing.Error{Code: "BAD\x00", Message: "no\x00", Details: []listing.Problem{{Code: "D\x00", Message: "m\x00", Field: "f\x00"}}}})
			}
			w.Header().Set("Content-Type", "application/json")
			require.NoError(t, json.NewEncoder(w).Encode(body))
		})
	}
	sum, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Positive(t, sum.Failed)
	require.Zero(t, sum.InDoubt)
	var n int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM listing_push_items WHERE push_id = $1 AND outcome = 'FAILED' AND code = 'BAD'||chr(65533) AND request_id = 'r'||chr(65533)`,
		sum.PushID).Scan(&n))
	require.Equal(t, sum.Failed, n)
}

// TestPushReadsFoldedColumnNames: a table created with the spec's names
// unquoted (CREATE TABLE t (locationName text, ...)) has them folded to
// lower case by PostgreSQL (locationname); a column named in another case
// ("LocationName") is as plain. The push reads both: it refused the
// relation as having no column "locationName" or "location_name", which
// its author had just written.
func TestPushReadsFoldedColumnNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n20")
	f.pull(t)
	f.desiredFromPulled(t, "good")
	ctx := t.Context()
	_, err := f.pool.Exec(ctx, `CREATE TABLE folded (id text, locationName text, city text, address text, additionalAddressInfo text,
		zip text, phone text, region text, websiteUrl text, businessHours jsonb, holidayHours jsonb, reopenDate date)`)
	require.NoError(t, err)
	_, err = f.pool.Exec(ctx, `INSERT INTO folded SELECT id, 'Folded ' || id, city, address, additional_address_info, zip, phone, region, website_url,
		business_hours, holiday_hours, reopen_date FROM good`)
	require.NoError(t, err)
	_, err = f.pool.Exec(ctx, `CREATE VIEW "Mixed" AS SELECT id AS "ID", locationname AS "LocationName", city AS "CITY", address, additionaladdressinfo AS "Additional_Address_Info",
		zip, phone, region, websiteurl AS "WebsiteURL", businesshours AS "BusinessHours", holidayhours, reopendate AS "Reopen_Date" FROM folded`)
	require.NoError(t, err)
	for _, rel := range []string{"folded", `"Mixed"`} {
		sum, err := f.run(t, rel, push.Options{DryRun: true})
		require.NoError(t, err, rel)
		require.Equal(t, 20, sum.Rows)
		require.Positive(t, sum.ToSend)
	}
	_, err = f.pool.Exec(ctx, `CREATE TABLE clash AS SELECT *, locationname AS location_name FROM folded`)
	require.NoError(t, err)
	_, err = f.run(t, "clash", push.Options{DryRun: true})
	require.ErrorContains(t, err, `locationName by "locationname" and "location_name"`)
}

// TestPushThroughFaultStorm: a sandbox answering 429, 500 and 503 at
// random (before applying: retried, or read back and sent again) and
// cutting answers: every changed location ends UPDATED, updated once by
// the sandbox and recorded UPDATED once, in a push and the ones after it.
func TestPushThroughFaultStorm(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n120", func(c *sandbox.Config) {
		c.Faults = sandbox.Faults{TooManyRequests: 0.2, Internal: 0.15, Unavailable: 0.15, Cut: 0.1}
	})
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	ctx := t.Context()
	f.rename(t, "Storm ")
	var changed int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM listings_current WHERE account = $1 AND status = 'COMPLETE'`, f.account).Scan(&changed))
	for range 4 {
		f.wall.Sleep(ctx, 2*time.Minute)
		_, err := f.run(t, "desired", push.Options{})
		require.NoError(t, err)
	}
	require.Positive(t, f.tooMany.Load(), "a storm")
	updated := map[string]int{}
	for _, s := range f.sentLog() {
		for _, id := range s.ids {
			updated[id]++
		}
	}
	require.Len(t, updated, changed)
	for id, n := range updated {
		require.Equal(t, 1, n, "%s updated %d times", id, n)
		require.Equal(t, "Storm "+id, f.get(t, id).LocationName)
	}
	var items, ids int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT location_id) FROM listing_push_items WHERE outcome = 'UPDATED'`).Scan(&items, &ids))
	require.Equal(t, changed, items)
	require.Equal(t, changed, ids)
}

// TestPushTwoAtOnce: a second push of an account while one runs (another
// process, or a job's push step) is refused with ErrBusy and records
// nothing; the first goes on.
func TestPushTwoAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n20")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	f.rename(t, "Once ")
	inside, release := make(chan struct{}), make(chan struct{})
	f.mw = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut {
				close(inside)
				<-release
			}
			next.ServeHTTP(w, r)
		})
	}
	type result struct {
		sum *push.Summary
		err error
	}
	first := make(chan result, 1)
	go func() {
		sum, err := f.run(t, "desired", push.Options{})
		first <- result{sum, err}
	}()
	<-inside
	_, err := f.run(t, "desired", push.Options{})
	require.ErrorIs(t, err, push.ErrBusy)
	require.ErrorContains(t, err, "another push of this account is running")
	close(release)
	r := <-first
	require.NoError(t, r.err)
	require.Positive(t, r.sum.Updated)
	var pushes int
	require.NoError(t, f.pool.QueryRow(t.Context(), `SELECT count(*) FROM listing_pushes`).Scan(&pushes))
	require.Equal(t, 1, pushes)
}

// TestPushWaitsForALockAboutToGo: the lock of a push killed a moment ago
// is held until its server process notices and ends; a push started then
// waits for it (up to busyWait) instead of saying another push runs. It
// said so at once, and a push right after a SIGKILL failed.
func TestPushWaitsForALockAboutToGo(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t, "x-n20")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	f.rename(t, "Wait ")
	holder, err := f.pool.Acquire(ctx)
	require.NoError(t, err)
	defer holder.Release()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended('etl.listing_push:' || $1, 0))`, f.account)
	require.NoError(t, err)
	type result struct {
		sum *push.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := f.run(t, "desired", push.Options{})
		done <- result{sum, err}
	}()
	// The push waits for the lock: its request shows in pg_locks.
	require.Eventually(t, func() bool {
		var waiting bool
		err := f.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&waiting)
		return err == nil && waiting
	}, 30*time.Second, 10*time.Millisecond)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended('etl.listing_push:' || $1, 0))`, f.account)
	require.NoError(t, err)
	r := <-done
	require.NoError(t, r.err)
	require.Positive(t, r.sum.Updated)
}

// TestPushSingleRefusedWithoutEnvelope: a single update refused with a
// 4xx whose body is no error envelope (a proxy's 413 page) is the
// location's own failure, as one with the envelope is: permanent, waiting
// for a change. It was transient, sent again every round and every push.
func TestPushSingleRefusedWithoutEnvelope(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n20")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	big := f.completeIDs(t, 1)[0]
	f.rename(t, "Pushed ")
	var singles sync.Map
	f.mw = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/locations") {
				// The bulk request, refused whole: its items go singly.
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte("<html>Bad Request</html>"))
				return
			}
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/"+big) {
				n, _ := singles.LoadOrStore(big, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusRequestEntityTooLarge)
				_, _ = w.Write([]byte("<html><h1>413 Request Entity Too Large</h1></html>"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	sum, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Equal(t, 1, sum.Failed)
	for _, it := range sum.Items {
		if it.ID == big {
			require.Equal(t, push.Failed, it.Outcome)
			require.Equal(t, "HTTP_413", it.Code)
			require.False(t, it.Transient)
			require.Contains(t, it.Reason, "413 Request Entity Too Large")
		}
	}
	again, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Equal(t, 1, again.Waiting)
	n, _ := singles.Load(big)
	require.Equal(t, int64(1), n.(*atomic.Int64).Load(), "sent once")
}

// TestPushOnlyTypoIsNotKept: an --only id that neither the relation holds
// nor a pull has seen (a typo) is refused once, in the summary of the
// push that names it, and then waits for nothing: status does not list
// it, nor does the warehouse guide's query of the locations waiting for a
// change. An --only id a pull knows but the relation lacks still waits
// (a row may be added for it).
func TestPushOnlyTypoIsNotKept(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n10")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	ids := f.completeIDs(t, 3)
	_, err := f.pool.Exec(t.Context(), `DELETE FROM desired WHERE id = $1`, ids[2])
	require.NoError(t, err)
	f.rename(t, "Renamed ")

	sum, err := f.run(t, "desired", push.Options{Only: []string{ids[0], "zz-typo-id", ids[2]}})
	require.NoError(t, err)
	require.True(t, sum.Partial())
	refused := map[string]push.Item{}
	for _, it := range sum.Items {
		if it.Outcome == push.Refused {
			refused[it.ID] = it
		}
	}
	require.Len(t, refused, 2)
	require.Equal(t, push.CodeNotInRelation, refused["zz-typo-id"].Code)
	require.Contains(t, refused["zz-typo-id"].Reason, "nor a pull")
	require.Equal(t, push.CodeNotInRelation, refused[ids[2]].Code)

	rep, err := push.Status(t.Context(), f.pool, f.account)
	require.NoError(t, err)
	var pending []string
	for _, p := range rep.Pending {
		pending = append(pending, p.LocationID)
	}
	require.Equal(t, []string{ids[2]}, pending)

	rows, err := f.pool.Query(t.Context(), `SELECT location_id
		FROM listing_push_latest l
		WHERE (outcome IN ('REFUSED', 'WAITING') OR (outcome = 'FAILED' AND NOT transient))
		  AND NOT (code = 'NOT_IN_RELATION' AND NOT EXISTS (
		      SELECT FROM listings_current c WHERE c.account = l.account AND c.location_id = l.location_id AND NOT c.gone))
		ORDER BY account, location_id`)
	require.NoError(t, err)
	waiting, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{ids[2]}, waiting)
	var recorded int
	require.NoError(t, f.pool.QueryRow(t.Context(), `SELECT count(*) FROM listing_push_items WHERE location_id = 'zz-typo-id'`).Scan(&recorded))
	require.Zero(t, recorded)
}
