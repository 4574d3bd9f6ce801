package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"maps"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/apitest"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/sandbox/locations"
)

// listingFixture is a sandbox whose listing accounts are signed in, a
// warehouse, and the traffic the sandbox answered.
type listingFixture struct {
	Pool    *pgxpool.Pool
	DBURL   string
	URL     string
	Sandbox *sandbox.Server
	wall    *apitest.VirtualClock
	day     atomic.Pointer[time.Time] // the sandbox's clock: the day its data is of
	tokens  map[string]string
	// traffic
	tooMany atomic.Int64 // 429 answers
	pages   atomic.Int64 // Get locations requests
	singles atomic.Int64 // Get location requests
	onPage  func(n int64)
	// handler serves the sandbox; a test may wrap it (alterListings).
	handler http.Handler
	mu      sync.Mutex
	clients map[string]*extract.Client
}

const listingSeed = 7

func newListingFixture(t *testing.T, accounts ...string) *listingFixture {
	t.Helper()
	f := &listingFixture{wall: apitest.NewVirtualClock(time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)), tokens: map[string]string{},
		clients: map[string]*extract.Client{}}
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	f.day.Store(&day)
	sb, err := sandbox.New(sandbox.Config{Seed: listingSeed, Now: func() time.Time { return *f.day.Load() },
		WallClock: f.wall.Now, APIKeys: accounts})
	require.NoError(t, err)
	f.Sandbox = sb
	f.handler = sb.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, catalog.LocationsPrefix) {
			if r.URL.Path == catalog.LocationsPrefix {
				n := f.pages.Add(1)
				if f.onPage != nil {
					f.onPage(n)
				}
			} else {
				f.singles.Add(1)
			}
		}
		rec := &statusRecorder{ResponseWriter: w}
		f.handler.ServeHTTP(rec, r)
		if rec.status == http.StatusTooManyRequests {
			f.tooMany.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	for _, a := range accounts {
		tok, err := sb.IssueToken(a)
		require.NoError(t, err)
		f.tokens[a] = tok.AccessToken
	}
	f.DBURL = pgtest.NewDB(t)
	cfg, err := pgxpool.ParseConfig(f.DBURL)
	require.NoError(t, err)
	f.Pool, err = pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(f.Pool.Close)
	return f
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// client is the client of account, one per account as etl makes them.
func (f *listingFixture) client(account string) (*extract.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.clients[account]; c != nil {
		return c, nil
	}
	tok, ok := f.tokens[account]
	if !ok {
		return nil, fmt.Errorf("account %s is not signed in", account)
	}
	c, err := extract.New(extract.Config{BaseURL: f.URL, Clock: f.wall,
		Authorize: apitest.Bearer(tok)})
	if err != nil {
		return nil, err
	}
	f.clients[account] = c
	return c, nil
}

// pull runs the job of spec with the runs' clock pinned at now (the
// sandbox's data is of that day too).
func (f *listingFixture) pull(t *testing.T, spec string, now time.Time) (*pipeline.Summary, error) {
	return f.pullCtx(t.Context(), t, spec, now)
}

func (f *listingFixture) pullCtx(ctx context.Context, t *testing.T, spec string, now time.Time) (*pipeline.Summary, error) {
	t.Helper()
	f.day.Store(&now)
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), now)
	require.NoError(t, err)
	r, err := pipeline.NewRunner(pipeline.Config{AccountClient: f.client, Pool: f.Pool, Now: func() time.Time { return now }})
	require.NoError(t, err)
	return r.Run(ctx, s.Jobs[0])
}

func listingSpec(account string) string {
	return fmt.Sprintf("jobs:\n  - name: stores\n    listings: {account: %s}\n", account)
}

// stored is a location as listings_current holds it.
type stored struct {
	listing.Location
	openDays, holidayCount int
	versions               int
}

func (f *listingFixture) current(t *testing.T, account string) map[string]stored {
	t.Helper()
	rows, err := f.Pool.Query(t.Context(), `
		SELECT location_id, coalesce(location_name, ''), coalesce(city, ''), coalesce(address, ''),
			coalesce(additional_address_info, ''), coalesce(zip, ''), coalesce(phone, ''), coalesce(region, ''),
			coalesce(website_url, ''), coalesce(country_code, ''), coalesce(status, ''), business_hours, holiday_hours,
			coalesce(to_char(reopen_date, 'YYYY-MM-DD'), ''), open_days, holiday_count,
			(SELECT count(*) FROM listing_versions v WHERE v.account = c.account AND v.location_id = c.location_id)
		FROM listings_current c WHERE account = $1 AND NOT gone`, account)
	require.NoError(t, err)
	out := map[string]stored{}
	for rows.Next() {
		var s stored
		var hours, holidays []byte
		require.NoError(t, rows.Scan(&s.ID, &s.LocationName, &s.City, &s.Address, &s.AdditionalAddressInfo, &s.Zip, &s.Phone,
			&s.Region, &s.WebsiteURL, &s.CountryCode, &s.Status, &hours, &holidays, &s.ReopenDate, &s.openDays, &s.holidayCount, &s.versions))
		if hours != nil {
			require.NoError(t, json.Unmarshal(hours, &s.BusinessHours))
		}
		if holidays != nil {
			require.NoError(t, json.Unmarshal(holidays, &s.HolidayHours))
		}
		out[s.ID] = s
	}
	require.NoError(t, rows.Err())
	return out
}

// problem is an occurrence of listing_problems.
type problem struct {
	code, message         string
	first, last, resolved time.Time
	open                  bool
}

func (f *listingFixture) problems(t *testing.T, account string) map[string][]problem {
	t.Helper()
	rows, err := f.Pool.Query(t.Context(), `SELECT location_id, code, message, first_seen_at, last_seen_at, resolved_at
		FROM listing_problems WHERE account = $1 ORDER BY location_id, code, message, first_seen_at`, account)
	require.NoError(t, err)
	out := map[string][]problem{}
	for rows.Next() {
		var id string
		var p problem
		var resolved *time.Time
		require.NoError(t, rows.Scan(&id, &p.code, &p.message, &p.first, &p.last, &resolved))
		p.open = resolved == nil
		if resolved != nil {
			p.resolved = *resolved
		}
		out[id] = append(out[id], p)
	}
	require.NoError(t, rows.Err())
	return out
}

func sameLocation(t *testing.T, want listing.Location, got stored) {
	t.Helper()
	w := want.Clone()
	w.Errors = nil
	g := got.Location
	if len(w.HolidayHours) == 0 {
		w.HolidayHours = nil
	}
	wj, err := json.Marshal(w)
	require.NoError(t, err)
	gj, err := json.Marshal(g)
	require.NoError(t, err)
	require.JSONEq(t, string(wj), string(gj), "location %s", want.ID)
	open := 0
	for _, d := range catalog.Weekdays {
		if want.BusinessHours != nil && len(want.BusinessHours.Day(d)) > 0 {
			open++
		}
	}
	require.Equal(t, open, got.openDays, "open days of %s", want.ID)
	require.Equal(t, len(want.HolidayHours), got.holidayCount, "holidays of %s", want.ID)
}

// TestListingsPulledTwiceADayApart is the issue's test: an account of 1,200
// locations pulled, then pulled again a day later after some were
// updated, at the default rate limits.
func TestListingsPulledTwiceADayApart(t *testing.T) {
	const account = "agency-n1200"
	f := newListingFixture(t, account)
	world := locations.New(listingSeed) // what the sandbox serves, read without HTTP
	day1 := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	day2 := day1.AddDate(0, 0, 1)
	n := world.Count(account)
	require.Equal(t, 1200, n)

	start := f.wall.Now()
	sum, err := f.pull(t, listingSpec(account), day1)
	require.NoError(t, err)
	require.Len(t, sum.Tasks, 1)
	res := sum.Tasks[0]
	require.NoError(t, res.Err)
	require.EqualValues(t, n, res.Rows)
	require.EqualValues(t, 0, res.Units)
	require.EqualValues(t, n, res.Load.Inserted)
	// Every location and field landed, status included.
	got := f.current(t, account)
	require.Len(t, got, n)
	for i := range n {
		id := world.ID(account, i)
		want, lerr := world.Get(account, id, day1)
		require.Nil(t, lerr)
		require.Contains(t, got, id)
		sameLocation(t, want, got[id])
		require.Equal(t, 1, got[id].versions)
	}
	// The size was probed once (refused, then the bound) and remembered.
	var bound int
	var how string
	require.NoError(t, f.Pool.QueryRow(t.Context(), `SELECT accepted, how FROM api_bounds WHERE param = 'size'`).Scan(&bound, &how))
	require.Equal(t, locations.MaxPageSize, bound)
	require.Equal(t, "named", how)
	require.EqualValues(t, n/locations.MaxPageSize+1, f.pages.Load(), "12 pages and the refused probe")
	require.EqualValues(t, n, f.singles.Load(), "one status read per location")
	// At the rate limits: at least the time 1,200 reads take at 10 a second.
	require.GreaterOrEqual(t, f.wall.Now().Sub(start), time.Duration(n)*time.Second/10)

	// Between the pulls, some COMPLETE locations are updated.
	c, err := f.client(account)
	require.NoError(t, err)
	var changed []string
	for i := 0; len(changed) < 25 && i < n; i++ {
		id := world.ID(account, i)
		loc, _ := world.Get(account, id, day2)
		if loc.Status != catalog.StatusComplete {
			continue
		}
		loc.Phone = fmt.Sprintf("+1 555 010 %04d", i)
		body, err := json.Marshal(listing.UpdateBody(loc))
		require.NoError(t, err)
		resp, err := c.Listings().Update(t.Context(), id, body)
		require.NoError(t, err, "updating %s", id)
		resp.Body.Close()
		_, uerr := world.UpdateOne(account, id, body, day2)
		require.Nil(t, uerr)
		changed = append(changed, id)
	}

	// etl plan prices the next pull from this one: 0 units, its requests
	// and the time the rate limits take, which the pull then takes.
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(listingSpec(account)), day2)
	require.NoError(t, err)
	planner, err := planning.NewPlanner(planning.PlanConfig{Pool: f.Pool, Now: func() time.Time { return day2 }})
	require.NoError(t, err)
	plan, err := planner.Plan(t.Context(), spec.Jobs[0], planning.PlanOptions{})
	require.NoError(t, err)
	require.Len(t, plan.Listings, 1)
	lp := plan.Listings[0]
	require.EqualValues(t, n, *lp.Locations)
	require.Equal(t, locations.MaxPageSize, lp.Size)
	require.EqualValues(t, n/locations.MaxPageSize, *lp.Pages)
	require.EqualValues(t, n+n/locations.MaxPageSize, *lp.Requests)
	require.Zero(t, lp.Units)
	require.Contains(t, lp.String(), "0 units, 1212 requests")

	f.pages.Store(0)
	f.singles.Store(0)
	before := f.wall.Now()
	sum, err = f.pull(t, listingSpec(account), day2)
	took := f.wall.Now().Sub(before)
	predicted := time.Duration(*lp.Seconds * float64(time.Second))
	require.InDelta(t, 1, predicted.Seconds()/took.Seconds(), 0.02, "the plan said %v, the pull took %v (virtual time)", predicted, took)
	require.NoError(t, err)
	res = sum.Tasks[0]
	require.NoError(t, res.Err)
	require.EqualValues(t, len(changed), res.Load.Updated, "one new version per changed location")
	require.EqualValues(t, n-len(changed), res.Load.Unchanged)
	require.EqualValues(t, n/locations.MaxPageSize, f.pages.Load(), "the size known: no probe")
	got = f.current(t, account)
	require.Len(t, got, n)
	for i := range n {
		id := world.ID(account, i)
		want, _ := world.Get(account, id, day2)
		sameLocation(t, want, got[id])
		wantVersions := 1
		if slices.Contains(changed, id) {
			wantVersions = 2
		}
		require.Equal(t, wantVersions, got[id].versions, "versions of %s", id)
	}
	// The closed version of a changed location ends where the new begins.
	var closedAt time.Time
	require.NoError(t, f.Pool.QueryRow(t.Context(), `SELECT valid_to FROM listing_versions
		WHERE account = $1 AND location_id = $2 AND valid_to IS NOT NULL`, account, changed[0]).Scan(&closedAt))
	require.True(t, closedAt.Equal(day2))

	// Problems: open since the pull that first saw them, resolved by the
	// pull that first did not.
	probs := f.problems(t, account)
	appeared, resolved, kept := 0, 0, 0
	for i := range n {
		id := world.ID(account, i)
		l1, _ := world.Get(account, id, day1)
		l2, _ := world.Get(account, id, day2)
		for _, e := range l1.Errors {
			p := findProblem(probs[id], e)
			require.NotNil(t, p, "problem %v of %s on day 1", e, id)
			require.True(t, p.first.Equal(day1))
			if slices.Contains(l2.Errors, e) {
				kept++
				require.True(t, p.open)
				require.True(t, p.last.Equal(day2))
			} else {
				resolved++
				require.False(t, p.open)
				require.True(t, p.resolved.Equal(day2), "resolved at %v", p.resolved)
				require.True(t, p.last.Equal(day1))
			}
		}
		for _, e := range l2.Errors {
			if slices.Contains(l1.Errors, e) {
				continue
			}
			appeared++
			p := findProblem(probs[id], e)
			require.NotNil(t, p, "problem %v of %s on day 2", e, id)
			require.True(t, p.open)
			require.True(t, p.first.Equal(day2))
		}
		total := 0
		for _, e := range l1.Errors {
			if !slices.Contains(l2.Errors, e) {
				total++
			}
		}
		require.Len(t, probs[id], total+len(l2.Errors), "occurrences of %s", id)
	}
	require.Positive(t, appeared, "the sandbox's problems come and go with the day")
	require.Positive(t, resolved)
	require.Positive(t, kept)
	require.Zero(t, f.tooMany.Load(), "the rate limits were never exceeded")
}

func findProblem(ps []problem, e listing.LocationError) *problem {
	for i := range ps {
		if ps[i].code == e.Code && ps[i].message == e.Message {
			return &ps[i]
		}
	}
	return nil
}

// listingTables is the content of the listing tables, for comparing two
// warehouses.
func listingTables(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT v::text FROM listing_versions v ORDER BY account, location_id, valid_from`,
		`SELECT p::text FROM listing_problems p ORDER BY account, location_id, code, message, first_seen_at`,
		`SELECT count(*)::text FROM quarantine`,
	} {
		rows, err := pool.Query(t.Context(), q)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		out = append(out, got...)
	}
	return out
}

// TestAnInterruptedPullResumesToTheTablesOfACleanRun interrupts a pull
// after its second page, then runs the job again: the run resumes from
// the third page, and the tables equal a clean run's.
func TestAnInterruptedPullResumesToTheTablesOfACleanRun(t *testing.T) {
	const account = "shops-n450"
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)

	clean := newListingFixture(t, account)
	_, err := clean.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	want := listingTables(t, clean.Pool)

	f := newListingFixture(t, account)
	ctx, cancel := context.WithCancel(t.Context())
	f.onPage = func(n int64) {
		if n == 3 { // the refused probe, page 1, page 2
			cancel()
		}
	}
	sum, err := f.pullCtx(ctx, t, listingSpec(account), day)
	require.NoError(t, err)
	require.True(t, sum.Interrupted)
	require.NotEmpty(t, sum.Tasks[0].Skipped)
	f.onPage = nil
	pagesBefore, singlesBefore := f.pages.Load(), f.singles.Load()
	sum, err = f.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	require.Equal(t, "resumed", sum.Taken)
	require.Equal(t, want, listingTables(t, f.Pool))
	// Pages 1 and 2 committed (the second was under way when the
	// interrupt came, and a page sent is finished): it went on from page
	// 3, the size known, and read the statuses of pages 3 to 5 only.
	require.EqualValues(t, 3, f.pages.Load()-pagesBefore)
	require.EqualValues(t, 450-200, f.singles.Load()-singlesBefore)
}

// alterListings rewrites the listing answers of the sandbox: pages through
// page(content), which may drop or change items (their totals follow),
// and single reads of the ids in gone answer 404.
func alterListings(h http.Handler, page func(content []json.RawMessage) []json.RawMessage, gone map[string]bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, catalog.LocationsPrefix) {
			h.ServeHTTP(w, r)
			return
		}
		if id := strings.TrimPrefix(r.URL.Path, catalog.LocationsPrefix+"/"); r.URL.Path != catalog.LocationsPrefix && gone[id] {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(listing.ErrorBody{Error: listing.Error{Code: catalog.CodeResourceNotFound, Message: "gone",
				Details: []listing.Problem{{Code: catalog.DetailLocationNotFound, Message: "gone"}}}, RequestID: "x"})
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if r.URL.Path != catalog.LocationsPrefix || rec.Code != http.StatusOK {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		var body struct {
			Data struct {
				Page          int               `json:"page"`
				TotalElements int               `json:"totalElements"`
				TotalPages    int               `json:"totalPages"`
				Content       []json.RawMessage `json:"content"`
			} `json:"data"`
			RequestID string `json:"requestId"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			panic(err)
		}
		before := len(body.Data.Content)
		body.Data.Content = page(body.Data.Content)
		body.Data.TotalElements -= before - len(body.Data.Content)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})
}

// TestAGoneLocationIsMarkedAndABadItemIsQuarantined pulls an account,
// then pulls it again after its last location left it (its page no longer
// lists it and reading it answers 404): it is marked gone, not deleted,
// and its open problems are resolved. A third pull meets an item with a
// field of the wrong type: it goes to quarantine with its raw JSON, the
// other locations load, and nothing is marked gone on that pull.
func TestAGoneLocationIsMarkedAndABadItemIsQuarantined(t *testing.T) {
	const account = "gone-n230"
	f := newListingFixture(t, account)
	world := locations.New(listingSeed)
	last := world.ID(account, 229)
	day1 := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	_, err := f.pull(t, listingSpec(account), day1)
	require.NoError(t, err)
	require.Len(t, f.current(t, account), 230)

	inner := f.handler
	f.handler = alterListings(inner, func(c []json.RawMessage) []json.RawMessage {
		return slices.DeleteFunc(c, func(raw json.RawMessage) bool { return strings.Contains(string(raw), last) })
	}, map[string]bool{last: true})
	day2 := day1.AddDate(0, 0, 1)
	sum, err := f.pull(t, listingSpec(account), day2)
	require.NoError(t, err)
	require.EqualValues(t, 229, sum.Tasks[0].Rows)
	var goneAt time.Time
	require.NoError(t, f.Pool.QueryRow(t.Context(), `SELECT gone_at FROM listings_current WHERE account = $1 AND location_id = $2`,
		account, last).Scan(&goneAt))
	require.True(t, goneAt.Equal(day2), "gone at the pull that no longer listed it: %v", goneAt)
	require.EqualValues(t, 1, f.Count(t, `SELECT count(*) FROM listings_current WHERE gone`))
	require.EqualValues(t, 0, f.Count(t, `SELECT count(*) FROM listing_problems WHERE location_id = $1 AND resolved_at IS NULL`, last))

	// Day 3: the location is back, and item 5 of the first page has a city
	// that is a number.
	bad := world.ID(account, 5)
	f.handler = alterListings(inner, func(c []json.RawMessage) []json.RawMessage {
		for i, raw := range c {
			if strings.Contains(string(raw), bad) {
				var m map[string]any
				require.NoError(t, json.Unmarshal(raw, &m))
				m["city"] = 12
				c[i], _ = json.Marshal(m)
			}
		}
		return c
	}, nil)
	day3 := day2.AddDate(0, 0, 1)
	sum, err = f.pull(t, listingSpec(account), day3)
	require.NoError(t, err)
	require.EqualValues(t, 1, sum.Tasks[0].Rejected)
	require.EqualValues(t, 230, sum.Tasks[0].Rows)
	var raw, reason, request string
	require.NoError(t, f.Pool.QueryRow(t.Context(), `SELECT raw, reason, request FROM quarantine`).Scan(&raw, &reason, &request))
	require.Contains(t, raw, bad)
	require.Contains(t, raw, `"city":12`)
	require.Contains(t, reason, "city")
	require.Contains(t, request, account)
	// The location that came back has a new current version; the bad
	// item's location keeps its day-2 version, and is not marked gone.
	require.EqualValues(t, 0, f.Count(t, `SELECT count(*) FROM listings_current WHERE gone`))
	require.EqualValues(t, 2, f.Count(t, `SELECT count(*) FROM listing_versions WHERE location_id = $1`, last))
	var observed time.Time
	require.NoError(t, f.Pool.QueryRow(t.Context(), `SELECT observed_at FROM listings_current WHERE location_id = $1`, bad).Scan(&observed))
	require.True(t, observed.Equal(day2))
	var status string
	require.NoError(t, f.Pool.QueryRow(t.Context(), `SELECT status FROM runs ORDER BY run_id DESC LIMIT 1`).Scan(&status))
	require.Equal(t, "partial", status, "a run that quarantined rows is partial")
}

func (f *listingFixture) Count(t *testing.T, query string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, f.Pool.QueryRow(t.Context(), query, args...).Scan(&n))
	return n
}

// TestAJobPullsThenPushes: a job with listings: {push: RELATION} pushes,
// once its pull is done, what the relation wants changed; a second run
// sends nothing more.
func TestAJobPullsThenPushes(t *testing.T) {
	const account = "step-n120"
	f := newListingFixture(t, account)
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	_, err := f.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	_, err = f.Pool.Exec(t.Context(), `CREATE TABLE desired AS
		SELECT location_id AS id, location_name, city, address, additional_address_info, zip,
		       CASE WHEN status = 'COMPLETE' AND location_id IN (SELECT location_id FROM listings_current ORDER BY location_id LIMIT 30)
		            THEN '+1 555 0100 ' || lpad((abs(hashtext(location_id)) % 1000)::text, 3, '0') ELSE phone END AS phone,
		       region, website_url, business_hours, holiday_hours, reopen_date
		FROM listings_current WHERE account = '`+account+`'`)
	require.NoError(t, err)
	want := f.Count(t, `SELECT count(*) FROM desired d JOIN listings_current c ON c.location_id = d.id WHERE d.phone <> c.phone`)
	require.Positive(t, want)

	spec := "jobs:\n  - name: stores\n    listings: {account: " + account + ", push: desired}\n"
	day2 := day.Add(time.Hour)
	sum, err := f.pull(t, spec, day2)
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
	require.EqualValues(t, want, f.Count(t, `SELECT count(*) FROM listing_push_items WHERE outcome = 'UPDATED'`))
	require.Zero(t, f.tooMany.Load())
	// The sandbox holds the new phones: the next pull sees them.
	_, err = f.pull(t, listingSpec(account), day2.Add(time.Hour))
	require.NoError(t, err)
	require.Zero(t, f.Count(t, `SELECT count(*) FROM desired d JOIN listings_current c ON c.location_id = d.id WHERE d.phone <> c.phone`))
	_, err = f.pull(t, spec, day2.Add(2*time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, want, f.Count(t, `SELECT count(*) FROM listing_push_items WHERE outcome = 'UPDATED'`), "nothing sent twice")
}

// TestListingPageWithARepeatedItemIsNotShort: a page of the API that lists one
// location twice (and so one location fewer) is full, not short: the
// pull does not take it for a smaller bound of the size, learns none,
// and pages on at the size the API accepts.
func TestListingPageWithARepeatedItemIsNotShort(t *testing.T) {
	const account = "twice-n250"
	f := newListingFixture(t, account)
	f.handler = alterListings(f.handler, func(c []json.RawMessage) []json.RawMessage {
		if len(c) > 1 {
			c[1] = c[0]
		}
		return c
	}, nil)
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	sum, err := f.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
	var bound int
	require.NoError(t, f.Pool.QueryRow(t.Context(), `SELECT accepted FROM api_bounds WHERE param = 'size'`).Scan(&bound))
	require.Equal(t, locations.MaxPageSize, bound, "a repeated item is no bound")
	require.EqualValues(t, 1+3, f.pages.Load(), "the refused probe, then 3 pages of 100")
}

// TestListingPlanSendsWhatTheRunSends: after a pull whose size: is above the
// API's bound, the plan counts the pages at the bound, as the next run
// sends them, not at the size the spec asks.
func TestListingPlanSendsWhatTheRunSends(t *testing.T) {
	const account = "plan-n250"
	f := newListingFixture(t, account)
	spec := "jobs:\n  - name: stores\n    listings: {account: " + account + ", size: 500}\n"
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	_, err := f.pull(t, spec, day)
	require.NoError(t, err)

	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), day.AddDate(0, 0, 1))
	require.NoError(t, err)
	planner, err := planning.NewPlanner(planning.PlanConfig{Pool: f.Pool, Now: func() time.Time { return day.AddDate(0, 0, 1) }})
	require.NoError(t, err)
	plan, err := planner.Plan(t.Context(), s.Jobs[0], planning.PlanOptions{})
	require.NoError(t, err)
	require.Len(t, plan.Listings, 1)
	lp := plan.Listings[0]
	require.Equal(t, locations.MaxPageSize, lp.Size, lp.String())

	f.pages.Store(0)
	f.singles.Store(0)
	_, err = f.pull(t, spec, day.AddDate(0, 0, 1))
	require.NoError(t, err)
	require.EqualValues(t, f.pages.Load(), *lp.Pages, lp.String())
	require.EqualValues(t, f.singles.Load(), *lp.Singles, lp.String())
}

// TestTwoJobsPullTheSameAccountAtOnce: two jobs whose listings are of the
// same account run at the same time (their locks are their jobs'): both
// succeed, and the tables are those of one pull.
func TestTwoJobsPullTheSameAccountAtOnce(t *testing.T) {
	const account = "both-n230"
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	clean := newListingFixture(t, account)
	_, err := clean.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	want := listingTables(t, clean.Pool)

	f := newListingFixture(t, account)
	f.day.Store(&day)
	spec := "jobs:\n  - name: a\n    listings: {account: " + account + ", size: 20}\n  - name: b\n    listings: {account: " + account + ", size: 20}\n"
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), day)
	require.NoError(t, err)
	errs := make(chan error, 2)
	for _, job := range s.Jobs {
		go func() {
			r, err := pipeline.NewRunner(pipeline.Config{AccountClient: f.client, Pool: f.Pool, Now: func() time.Time { return day }})
			if err != nil {
				errs <- err
				return
			}
			sum, err := r.Run(t.Context(), job)
			if err == nil && sum.Tasks[0].Err != nil {
				err = sum.Tasks[0].Err
			}
			errs <- err
		}()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	require.Equal(t, want, listingTables(t, f.Pool))
}

// TestListingsOfAnEmptyAccount: an account of no locations pulls to nothing, and
// its task is done.
func TestListingsOfAnEmptyAccount(t *testing.T) {
	const account = "empty-n0"
	f := newListingFixture(t, account)
	sum, err := f.pull(t, listingSpec(account), time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
	require.Zero(t, sum.Tasks[0].Rows)
	require.Empty(t, f.current(t, account))
	require.Zero(t, f.singles.Load())
}

// TestAPullThroughA429Storm: a sandbox that answers 429, 500, 503 or cuts
// the answer off on many of its listing requests: the pull retries them
// and ends with the tables of a clean pull.
func TestAPullThroughA429Storm(t *testing.T) {
	const account = "storm-n150"
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	clean := newListingFixture(t, account)
	_, err := clean.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	want := listingTables(t, clean.Pool)

	f := newListingFixture(t, account)
	stormy, err := sandbox.New(sandbox.Config{Seed: listingSeed, Now: func() time.Time { return *f.day.Load() },
		WallClock: f.wall.Now, APIKeys: []string{account},
		Faults: sandbox.Faults{TooManyRequests: 0.3, Internal: 0.05, Unavailable: 0.05, Cut: 0.05}})
	require.NoError(t, err)
	tok, err := stormy.IssueToken(account)
	require.NoError(t, err)
	f.tokens[account] = tok.AccessToken
	f.handler = stormy.Handler()
	sum, err := f.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
	require.Positive(t, f.tooMany.Load(), "the storm hit")
	require.Equal(t, want, listingTables(t, f.Pool))
}

// TestAJobPushInterrupted: the run's context ends (SIGINT) while its
// push step waits for the answer of its first request: the request is
// finished (its locations UPDATED), nothing more is sent, the run ends
// interrupted, and its next run sends the rest, each location once. The
// push went on to its end whatever the signal said (a push of thousands
// of locations, five bulk requests a minute, for many minutes).
func TestAJobPushInterrupted(t *testing.T) {
	const account = "step-n120"
	f := newListingFixture(t, account)
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	_, err := f.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	_, err = f.Pool.Exec(t.Context(), `CREATE TABLE desired AS
		SELECT location_id AS id, 'Stopped ' || location_id AS location_name, city, address, additional_address_info, zip, phone,
		       region, website_url, business_hours, holiday_hours, reopen_date
		FROM listings_current WHERE account = '`+account+`' AND status = 'COMPLETE'`)
	require.NoError(t, err)
	want := f.Count(t, `SELECT count(*) FROM desired`)
	require.Greater(t, want, int64(catalog.MaxBulkLocations), "more than one request")

	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	var puts atomic.Int64
	updated := map[string]int{}
	var mu sync.Mutex
	h := f.handler
	f.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			h.ServeHTTP(w, r)
			return
		}
		if puts.Add(1) == 1 {
			interrupt() // what the first SIGINT does
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var b listing.BulkBody
		if json.Unmarshal(rec.Body.Bytes(), &b) == nil {
			mu.Lock()
			for _, res := range b.Data {
				if res.State == catalog.StateUpdated {
					updated[res.LocationID]++
				}
			}
			mu.Unlock()
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
	spec := "jobs:\n  - name: stores\n    listings: {account: " + account + ", push: desired}\n"
	day2 := day.Add(time.Hour)
	sum, err := f.pullCtx(ctx, t, spec, day2)
	require.NoError(t, err)
	require.True(t, sum.Interrupted)
	require.NoError(t, sum.Tasks[0].Err, "interrupted, not failed")
	require.Equal(t, int64(1), puts.Load(), "nothing sent after the interruption")
	require.EqualValues(t, catalog.MaxBulkLocations, f.Count(t, `SELECT count(*) FROM listing_push_items WHERE outcome = 'UPDATED'`),
		"the request in flight was finished")
	require.EqualValues(t, 1, f.Count(t, `SELECT count(*) FROM listing_pushes WHERE status = 'interrupted'`))

	// The next run finishes the push.
	sum, err = f.pull(t, spec, day2.Add(time.Minute))
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
	require.False(t, sum.Interrupted)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, updated, int(want))
	for id, n := range updated {
		require.Equal(t, 1, n, id)
	}
}
