package listing_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
)

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("loc-%04d", i)
	}
	return out
}

// The paced periods of the default margin, 5% under the limits: 60s/0.95
// and 1s/0.95, rounded up to the nanosecond.
const (
	pacedMinute = 63157894737 * time.Nanosecond
	pacedSecond = 1052631579 * time.Nanosecond
)

func TestPaced(t *testing.T) {
	t.Parallel()
	require.Equal(t, pacedMinute, listing.Paced(catalog.UpdateLocations.Rate, listing.DefaultMargin).Per)
	require.Equal(t, pacedSecond, listing.Paced(catalog.UpdateLocation.Rate, listing.DefaultMargin).Per)
	r := listing.Paced(catalog.UpdateLocations.Rate, 0.5)
	require.Equal(t, catalog.RateLimit{Requests: 5, Per: 2 * time.Minute, Concurrent: 1}, r)
	require.Equal(t, catalog.UpdateLocations.Rate, listing.Paced(catalog.UpdateLocations.Rate, 0))
}

func TestWindow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	w := listing.NewWindow(catalog.RateLimit{Requests: 2, Per: time.Minute})
	require.Equal(t, t0, w.Next(t0))
	w.Add(t0)
	require.Equal(t, t0, w.Next(t0), "a second request at the same instant")
	w.Add(t0.Add(10 * time.Second))
	require.Equal(t, t0.Add(time.Minute), w.Next(t0.Add(20*time.Second)), "full: wait until the oldest leaves")
	require.Equal(t, t0.Add(time.Minute), w.Next(t0.Add(time.Minute)), "a request exactly a period ago no longer counts")
	require.Equal(t, t0.Add(2*time.Minute), w.Next(t0.Add(2*time.Minute)))
	require.Equal(t, t0.Add(10*time.Second), listing.NewWindow(catalog.RateLimit{}).Next(t0.Add(10*time.Second)), "no limit")

	w.Add(t0.Add(time.Minute))
	require.Equal(t, t0.Add(70*time.Second), w.Next(t0), "not before the last request, nor before the window has room")
	w.Add(t0) // taken as the last request's time, t0+1m
	require.Equal(t, t0.Add(2*time.Minute), w.Next(t0))

	// Seeded with requests an earlier process sent: two at one instant
	// are two requests.
	s := listing.NewWindow(catalog.RateLimit{Requests: 3, Per: time.Minute})
	s.Seed([]time.Time{t0.Add(-10 * time.Second), t0.Add(-50 * time.Second), t0.Add(-10 * time.Second)})
	require.Equal(t, []time.Time{t0.Add(-50 * time.Second), t0.Add(-10 * time.Second), t0.Add(-10 * time.Second)}, s.Times())
	require.Equal(t, t0.Add(10*time.Second), s.Next(t0), "full until the oldest leaves")
	s.Seed([]time.Time{t0.Add(-10 * time.Second), t0.Add(-50 * time.Second)})
	require.Len(t, s.Times(), 3, "requests it holds already are not counted twice")
	s.Add(t0.Add(10 * time.Second))
	s.Seed([]time.Time{t0.Add(-time.Hour)})
	require.Equal(t, []time.Time{t0.Add(-10 * time.Second), t0.Add(-10 * time.Second), t0.Add(10 * time.Second)}, s.Times(), "the last three kept")
	require.Equal(t, t0.Add(50*time.Second), s.Next(t0.Add(20*time.Second)))
}

// sim sends b bulk requests and s single updates as soon as the limits
// allow, and returns when each goes: a model of the push written apart
// from PlanPush's. Bulk requests go one at a time, each latency after the
// one before, and at most n in any bulkPer; single updates at most n in
// any singlePer; the requests of o.EarlierBulk and o.EarlierSingle, sent
// that long before the start, count in those periods.
func sim(b, s int, bulkPer, singlePer time.Duration, o listing.PlanOptions) (bulk, single []time.Duration) {
	nb, ns := catalog.UpdateLocations.Rate.Requests, catalog.UpdateLocation.Rate.Requests
	prior := func(earlier []time.Duration) []time.Duration {
		var at []time.Duration
		for _, ago := range earlier {
			at = append(at, -max(ago, 0))
		}
		slices.Sort(at)
		return at
	}
	all := prior(o.EarlierBulk)
	for k := range b {
		var t time.Duration
		if k > 0 {
			t = bulk[k-1] + o.BulkLatency
		}
		if i := len(all) - nb; i >= 0 {
			t = max(t, all[i]+bulkPer)
		}
		bulk = append(bulk, t)
		all = append(all, t)
	}
	all = prior(o.EarlierSingle)
	for range s {
		var t time.Duration
		if i := len(all) - ns; i >= 0 {
			t = max(t, all[i]+singlePer)
		}
		single = append(single, t)
		all = append(all, t)
	}
	return bulk, single
}

// withEarlier returns at after the requests sent earlier (ago before 0).
func withEarlier(at, earlier []time.Duration) []time.Duration {
	out := slices.Clone(at)
	for _, ago := range earlier {
		out = append(out, -max(ago, 0))
	}
	return out
}

func finish(bulk, single []time.Duration) time.Duration {
	var d time.Duration
	for _, t := range append(append([]time.Duration(nil), bulk...), single...) {
		d = max(d, t)
	}
	return d
}

// maxInWindow returns the most requests sent within any period of per
// ending at a request, (t-per, t].
func maxInWindow(at []time.Duration, per time.Duration) int {
	most := 0
	for _, t := range at {
		n := 0
		for _, u := range at {
			if u > t-per && u <= t {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// verifyPlan checks a plan of the ids given against the limits and the
// model, and that no other split of the ids finishes sooner, or as soon
// in fewer requests.
func verifyPlan(t *testing.T, given []string, o listing.PlanOptions, p listing.Plan) {
	t.Helper()
	margin := o.Margin
	switch {
	case margin == 0:
		margin = listing.DefaultMargin
	case margin < 0:
		margin = 0
	}
	require.Equal(t, margin, p.Options.Margin)
	bulkPer := time.Duration(math.Ceil(float64(time.Minute) / (1 - margin)))
	singlePer := time.Duration(math.Ceil(float64(time.Second) / (1 - margin)))

	// Every id exactly once, the first in bulk requests, in order.
	var unique []string
	seen := map[string]bool{}
	for _, id := range given {
		if !seen[id] {
			seen[id] = true
			unique = append(unique, id)
		}
	}
	var planned []string
	for i, b := range p.Bulk {
		require.NotEmpty(t, b, "bulk %d", i)
		require.LessOrEqual(t, len(b), catalog.MaxBulkLocations, "bulk %d", i)
		inBulk := map[string]bool{}
		for _, id := range b {
			require.False(t, inBulk[id], "bulk %d has %s twice", i, id)
			inBulk[id] = true
		}
		if i < len(p.Bulk)-1 {
			require.Len(t, b, catalog.MaxBulkLocations, "only the last bulk request is not full")
		}
		planned = append(planned, b...)
	}
	planned = append(planned, p.Single...)
	require.Equal(t, unique, planned, "every id once, in order")
	require.Equal(t, len(unique), p.Locations())
	require.Equal(t, len(given)-len(unique), len(p.Repeated))
	require.Equal(t, len(p.Bulk)+len(p.Single), p.Requests)
	require.Len(t, p.BulkAt, len(p.Bulk))
	require.Len(t, p.SingleAt, len(p.Single))

	// The limits: never more in a window than allowed, at the exact limits
	// and at the paced ones; bulk requests one at a time.
	// The requests sent before the push count: so long as they are
	// within the limits themselves, the push keeps them.
	for _, per := range []time.Duration{bulkPer, catalog.UpdateLocations.Rate.Per} {
		require.LessOrEqual(t, maxInWindow(withEarlier(p.BulkAt, o.EarlierBulk), per),
			max(catalog.UpdateLocations.Rate.Requests, maxInWindow(withEarlier(nil, o.EarlierBulk), per)), "bulk requests within %v", per)
	}
	for _, per := range []time.Duration{singlePer, catalog.UpdateLocation.Rate.Per} {
		require.LessOrEqual(t, maxInWindow(withEarlier(p.SingleAt, o.EarlierSingle), per),
			max(catalog.UpdateLocation.Rate.Requests, maxInWindow(withEarlier(nil, o.EarlierSingle), per)), "single updates within %v", per)
	}
	for k := 1; k < len(p.BulkAt); k++ {
		require.GreaterOrEqual(t, p.BulkAt[k], p.BulkAt[k-1]+o.BulkLatency, "bulk %d is sent before the answer to bulk %d", k, k-1)
	}

	// The schedule is the model's, and Duration its finish.
	bulk, single := sim(len(p.Bulk), len(p.Single), bulkPer, singlePer, o)
	require.Equal(t, bulk, nilIfEmpty(p.BulkAt))
	require.Equal(t, single, nilIfEmpty(p.SingleAt))
	require.Equal(t, finish(bulk, single), p.Duration)

	// No split does better.
	n := len(unique)
	for b := 0; b <= (n+catalog.MaxBulkLocations-1)/catalog.MaxBulkLocations; b++ {
		s := max(0, n-b*catalog.MaxBulkLocations)
		d := finish(sim(b, s, bulkPer, singlePer, o))
		require.False(t, d < p.Duration || d == p.Duration && b+s < p.Requests,
			"%d bulk requests and %d single updates finish at %v in %d requests; the plan at %v in %d", b, s, d, b+s, p.Duration, p.Requests)
	}
	if p.Requests > 0 {
		require.Equal(t, slices.Min(append(slices.Clone(p.BulkAt), p.SingleAt...)), p.Wait, "the first request")
	}
	require.NotEmpty(t, p.Why)
	require.NotEmpty(t, p.Describe())
}

func nilIfEmpty(d []time.Duration) []time.Duration {
	if len(d) == 0 {
		return nil
	}
	return d
}

func TestPlanPush(t *testing.T) {
	t.Parallel()
	exact := listing.PlanOptions{Margin: -1}
	slow := listing.PlanOptions{Margin: -1, BulkLatency: 2 * time.Second}
	tests := []struct {
		n            int
		o            listing.PlanOptions
		bulk, single int
		duration     time.Duration
	}{
		{0, exact, 0, 0, 0},
		{1, exact, 1, 0, 0},
		{49, exact, 1, 0, 0},
		{50, exact, 1, 0, 0},
		{51, exact, 2, 0, 0},
		{250, exact, 5, 0, 0},
		{251, exact, 5, 1, 0},           // not a sixth bulk request a minute later
		{255, exact, 5, 5, 0},           // five singles go at once too
		{256, exact, 5, 6, time.Second}, // the sixth single waits a second
		{300, exact, 5, 50, 9 * time.Second},
		{312, exact, 5, 62, 12 * time.Second},
		{500, exact, 5, 250, 49 * time.Second}, // rather than 10 bulk requests in a minute
		{550, exact, 5, 300, 59 * time.Second},
		{551, exact, 10, 51, time.Minute}, // 5 bulk and 301 singles take a minute too, in more requests
		{1000, exact, 10, 500, 99 * time.Second},

		{0, listing.PlanOptions{}, 0, 0, 0},
		{1, listing.PlanOptions{}, 1, 0, 0},
		{49, listing.PlanOptions{}, 1, 0, 0},
		{50, listing.PlanOptions{}, 1, 0, 0},
		{51, listing.PlanOptions{}, 2, 0, 0},
		{250, listing.PlanOptions{}, 5, 0, 0},
		{251, listing.PlanOptions{}, 5, 1, 0},
		{300, listing.PlanOptions{}, 5, 50, 9 * pacedSecond},
		{500, listing.PlanOptions{}, 5, 250, 49 * pacedSecond},

		// Requests sent before the push: three bulk requests 10s ago
		// leave room for two; five fill the window until they leave it.
		{150, listing.PlanOptions{Margin: -1, EarlierBulk: []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second}}, 2, 50, 9 * time.Second},
		{100, listing.PlanOptions{Margin: -1, EarlierBulk: []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second}}, 2, 0, 0},
		{100, listing.PlanOptions{Margin: -1, EarlierBulk: []time.Duration{55 * time.Second, 50 * time.Second, 10 * time.Second, 5 * time.Second, 0}}, 1, 50, 9 * time.Second},
		{10, listing.PlanOptions{Margin: -1, EarlierBulk: []time.Duration{55 * time.Second, 50 * time.Second, 10 * time.Second, 5 * time.Second, 0}}, 0, 10, time.Second},
		{10, listing.PlanOptions{Margin: -1, EarlierBulk: []time.Duration{55 * time.Second, 50 * time.Second, 10 * time.Second, 5 * time.Second, 0},
			EarlierSingle: []time.Duration{0, 0, 0, 0, 0}}, 0, 10, 2 * time.Second},
		{1, listing.PlanOptions{Margin: -1, EarlierBulk: []time.Duration{55 * time.Second, 50 * time.Second, 10 * time.Second, 5 * time.Second, 0},
			EarlierSingle: []time.Duration{0, 0, 0, 0, 0}}, 0, 1, time.Second}, // the single's window frees first
		{300, listing.PlanOptions{Margin: -1, EarlierBulk: []time.Duration{-time.Hour, 2 * time.Minute}}, 4, 100, 19 * time.Second}, // one in the future: at the start
		{51, slow, 1, 1, 0}, // a second bulk request would wait for the first's answer
		{250, slow, 5, 0, 8 * time.Second},
		{251, slow, 5, 1, 8 * time.Second},
		{290, slow, 5, 40, 8 * time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d ids, %+v", tt.n, tt.o), func(t *testing.T) {
			t.Parallel()
			given := ids(tt.n)
			p, err := listing.PlanPush(given, tt.o)
			require.NoError(t, err)
			require.Equal(t, tt.bulk, len(p.Bulk), "bulk requests")
			require.Equal(t, tt.single, len(p.Single), "single updates")
			require.Equal(t, tt.duration, p.Duration)
			verifyPlan(t, given, tt.o, p)
		})
	}
}

// TestPlanPushProperties plans random pushes under random assumptions and
// verifies each plan against the model and every other split.
func TestPlanPushProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(17, 2026))
	for range 300 {
		n := r.IntN(1500)
		o := listing.PlanOptions{BulkLatency: time.Duration(r.Int64N(int64(20 * time.Second)))}
		switch r.IntN(3) {
		case 0:
			o.Margin = -1
		case 1:
			o.Margin = 0
		default:
			o.Margin = r.Float64() / 2
		}
		if r.IntN(3) == 0 {
			o.BulkLatency = 0
		}
		if r.IntN(2) == 0 { // requests sent before the push
			for range r.IntN(8) {
				o.EarlierBulk = append(o.EarlierBulk, time.Duration(r.Int64N(int64(90*time.Second)))-5*time.Second)
			}
			for range r.IntN(8) {
				o.EarlierSingle = append(o.EarlierSingle, time.Duration(r.Int64N(int64(1500*time.Millisecond)))-100*time.Millisecond)
			}
		}
		given := ids(n)
		for range r.IntN(5) { // some ids repeated
			if n > 0 {
				given = append(given, given[r.IntN(n)])
			}
		}
		p, err := listing.PlanPush(given, o)
		require.NoError(t, err)
		verifyPlan(t, given, o, p)
	}
}

func TestPlanPushRepeatedIDs(t *testing.T) {
	t.Parallel()
	p, err := listing.PlanPush([]string{"a", "b", "a", "c", "b"}, listing.PlanOptions{})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"a", "b", "c"}}, p.Bulk)
	require.Equal(t, []string{"a", "b"}, p.Repeated)
	require.Contains(t, p.Describe(), "2 ids given more than once, sent once: a, b.")
}

// TestPlanPushSingly: the ids of Singly go by single update whatever the
// split, each once; the others are planned as without them.
func TestPlanPushSingly(t *testing.T) {
	t.Parallel()
	all := ids(60)
	forced := []string{all[3], all[40], "not-planned"}
	p, err := listing.PlanPush(append(all, all[3]), listing.PlanOptions{Singly: forced})
	require.NoError(t, err)
	require.Equal(t, []string{all[3], all[40]}, p.Single)
	require.Len(t, p.SingleAt, 2)
	require.Equal(t, 60, p.Locations())
	require.Equal(t, []string{all[3]}, p.Repeated)
	rest, err := listing.PlanPush(append(append(all[:3:3], all[4:40]...), all[41:]...), listing.PlanOptions{})
	require.NoError(t, err)
	require.Equal(t, rest.Bulk, p.Bulk)
	require.Equal(t, len(rest.Bulk)+2, p.Requests)
	require.Contains(t, p.Why, "2 locations singly")

	only, err := listing.PlanPush([]string{"a"}, listing.PlanOptions{Singly: []string{"a"}})
	require.NoError(t, err)
	require.Empty(t, only.Bulk)
	require.Equal(t, []string{"a"}, only.Single)
	require.Equal(t, 1, only.Requests)
}

func TestPlanPushOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []listing.PlanOptions{{Margin: 1}, {Margin: 1.5}, {Margin: math.NaN()}, {BulkLatency: -time.Second}} {
		_, err := listing.PlanPush(ids(3), o)
		require.Error(t, err, "%+v", o)
	}
	p, err := listing.PlanPush(ids(3), listing.PlanOptions{Margin: 0.2})
	require.NoError(t, err)
	require.Contains(t, p.Describe(), "paced 20% under the rate limits")
	p, err = listing.PlanPush(ids(3), listing.PlanOptions{Margin: -1})
	require.NoError(t, err)
	require.Contains(t, p.Describe(), "at the exact rate limits")

	// Windows full of requests sent before the push: the first waits.
	ago := []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second}
	p, err = listing.PlanPush(ids(10), listing.PlanOptions{Margin: -1, EarlierBulk: ago, EarlierSingle: make([]time.Duration, 5)})
	require.NoError(t, err)
	require.Equal(t, time.Second, p.Wait)
	require.Equal(t, 2*time.Second, p.Duration)
	require.Contains(t, p.Describe(), "10 locations in 10 requests: 10 single updates, the first going out after 1s, once the requests sent before the push leave the rate limit's window, the last 2s after the start (at the exact rate limits")
	p, err = listing.PlanPush(ids(50), listing.PlanOptions{Margin: -1, EarlierBulk: ago[:4]})
	require.NoError(t, err)
	require.Zero(t, p.Wait)
	require.Contains(t, p.Describe(), "50 locations in 1 request: 1 bulk request (50 locations), sent at once")
}

func TestPlanWhy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int
		o    listing.PlanOptions
		want string
	}{
		{0, listing.PlanOptions{}, "No location to send."},
		{1, listing.PlanOptions{}, "1 location: one bulk request."},
		{50, listing.PlanOptions{}, "50 locations fit in one bulk request."},
		{120, listing.PlanOptions{Margin: -1}, "120 locations: 3 bulk requests of up to 50, the last sent at once (5 a minute, one at a time); sending some singly (5 a second) would not finish sooner."},
		{251, listing.PlanOptions{Margin: -1}, "251 locations: bulk alone takes 6 requests, the last sent after 1m0s (5 a minute, one at a time); sending the last one singly (5 a second) beside 5 bulk requests sends the last at once, 1m0s sooner, with as many requests."},
		{312, listing.PlanOptions{}, "312 locations: bulk alone takes 7 requests, the last sent after 1m3.2s (5 a minute, one at a time); sending the last 62 singly (5 a second) beside 5 bulk requests sends the last after 12.6s, 50.5s sooner, for 60 more requests."},
	}
	for _, tt := range tests {
		p, err := listing.PlanPush(ids(tt.n), tt.o)
		require.NoError(t, err)
		require.Equal(t, tt.want, p.Why)
	}
}
