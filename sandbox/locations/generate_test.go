package locations_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/sandbox/locations"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// now is the sandbox clock of the tests.
var now = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func TestCount(t *testing.T) {
	t.Parallel()
	s := locations.New(1)
	tests := []struct {
		account string
		want    int
	}{
		{"n1500", 1500},
		{"agency-n1500", 1500},
		{"AGENCY_N25", 25},
		{"local.n3.key", 3},
		{"n0", 0},
		{"x-n100000", locations.MaxLocations},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, s.Count(tt.account), tt.account)
	}
	// Not sized: drawn, a few to a few thousand, the same every time.
	for _, account := range []string{"sandbox", "agencyn15", "n100001", "n", "n1x", "key-1"} {
		n := s.Count(account)
		require.GreaterOrEqual(t, n, 3, account)
		require.LessOrEqual(t, n, 2500, account)
		require.Equal(t, n, locations.New(1).Count(account), account)
	}
	counts := map[int]bool{}
	for i := range 200 {
		counts[s.Count(fmt.Sprintf("key-%d", i))] = true
	}
	require.Greater(t, len(counts), 40, "counts vary by account")
}

var hexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestIDs(t *testing.T) {
	t.Parallel()
	s := locations.New(7)
	const account = "agency-n1500"
	seen := map[string]bool{}
	for i := range s.Count(account) {
		id := s.ID(account, i)
		require.Regexp(t, hexID, id)
		require.False(t, seen[id], "id %s twice", id)
		seen[id] = true
		loc, e := s.Get(account, id, now)
		require.Nil(t, e)
		require.Equal(t, id, loc.ID)
	}
	require.Equal(t, s.ID(account, 42), locations.New(7).ID(account, 42), "ids are stable")
	require.NotEqual(t, s.ID(account, 42), locations.New(8).ID(account, 42), "ids depend on the seed")
	require.NotEqual(t, s.ID(account, 42), s.ID("other-n1500", 42), "ids depend on the account")

	id := s.ID(account, 42)
	for _, other := range []string{
		s.ID("other-n1500", 42),                                       // another account's
		locations.New(8).ID(account, 42),                              // another world's
		id[:31] + string("0123456789abcdef"[(1+indexHex(id[31]))%16]), // one digit changed
		id[:31],                            // too short
		"3E8D046F62FE4B73802112E138A78532", // upper case
		"",
	} {
		_, e := s.Get(account, other, now)
		require.NotNil(t, e, other)
		require.Equal(t, catalog.CodeResourceNotFound, e.Code)
	}
	// Past the account's count: the index decodes, but is not a location.
	small := "agency-n10"
	_, e := s.Get(small, locations.New(7).ID(small, 10), now)
	require.NotNil(t, e)
}

func indexHex(c byte) int {
	for i, h := range []byte("0123456789abcdef") {
		if h == c {
			return i
		}
	}
	return 0
}

// TestInventedAreValid checks every invented location of several worlds,
// accounts and days against every rule of package listing.
func TestInventedAreValid(t *testing.T) {
	t.Parallel()
	days := []time.Time{
		now,
		time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		time.Date(2037, 11, 30, 23, 59, 0, 0, time.UTC), // a reopenDate would reach 2038
		time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC),
	}
	for _, seed := range []int64{1, 2, 99} {
		for _, account := range []string{"sandbox", "agency-n1500", "key-3"} {
			t.Run(fmt.Sprintf("%d/%s", seed, account), func(t *testing.T) {
				t.Parallel()
				s := locations.New(seed)
				for _, day := range days {
					for i := range s.Count(account) {
						loc, e := s.Get(account, s.ID(account, i), day)
						require.Nil(t, e)
						require.Empty(t, listing.Validate(loc, day), "%s location %d on %s: %+v", account, i, day, loc)
					}
				}
			})
		}
	}
}

// TestInventedMix checks that an account of 1500 locations has the
// variety the pull and the push must cope with.
func TestInventedMix(t *testing.T) {
	t.Parallel()
	s := locations.New(1)
	const account = "agency-n1500"
	statuses := map[string]int{}
	countries := map[string]bool{}
	var withErrors, withHolidays, overnight, reopen, noHours, noWebsite, aroundTheClock int
	for i := range s.Count(account) {
		loc, _ := s.Get(account, s.ID(account, i), now)
		statuses[loc.Status]++
		countries[loc.CountryCode] = true
		if len(loc.Errors) > 0 {
			withErrors++
		}
		if len(loc.HolidayHours) > 0 {
			withHolidays++
		}
		if loc.ReopenDate != "" {
			reopen++
		}
		if loc.WebsiteURL == "" {
			noWebsite++
		}
		if loc.BusinessHours == nil {
			noHours++
			continue
		}
		for _, day := range catalog.Weekdays {
			for _, r := range loc.BusinessHours.Day(day) {
				if r.From == "00:00" && r.To == "00:00" {
					aroundTheClock++
				} else if r.To < r.From {
					overnight++
				}
			}
		}
	}
	t.Logf("statuses %v, %d countries, errors %d, holidays %d, reopen %d, no hours %d, no website %d", statuses, len(countries), withErrors, withHolidays, reopen, noHours, noWebsite)
	require.Greater(t, statuses[catalog.StatusComplete], 1300)
	require.Greater(t, statuses[locations.StatusInProgress], 30)
	require.Greater(t, statuses[locations.StatusNotSynced], 5)
	require.Len(t, statuses, 3)
	require.GreaterOrEqual(t, len(countries), 8)
	for _, n := range []int{withErrors, withHolidays, overnight, aroundTheClock, reopen, noHours, noWebsite} {
		require.Positive(t, n)
	}

	first, _ := s.Get(account, s.ID(account, 0), now)
	second, _ := s.Get(account, s.ID(account, 1), now)
	require.Equal(t, catalog.StatusComplete, first.Status, "location 0 is always COMPLETE")
	require.Equal(t, locations.StatusInProgress, second.Status, "location 1 is never")
}

// TestErrorsComeAndGo follows the errors of the locations over ninety
// days: they change with the day, last several days at a time, and the
// rest of a location does not move (within a month: reopenDate is the
// first of the month after next).
func TestErrorsComeAndGo(t *testing.T) {
	t.Parallel()
	s := locations.New(3)
	const account = "n300"
	start := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	var changes, dayWithErrors, days int
	for i := range s.Count(account) {
		id := s.ID(account, i)
		first, _ := s.Get(account, id, start)
		var prev []listing.LocationError
		run, shortest := 0, 1000
		for d := range 90 {
			day := start.AddDate(0, 0, d)
			loc, _ := s.Get(account, id, day)
			days++
			if len(loc.Errors) > 0 {
				dayWithErrors++
			}
			if d > 0 && !cmp.Equal(prev, loc.Errors) {
				changes++
				if run > 0 && len(prev) > 0 && d-run > 0 {
					shortest = min(shortest, run)
				}
				run = 0
			}
			run++
			prev = loc.Errors
			if day.Month() == start.Month() {
				loc.Errors, first.Errors = nil, nil
				require.Empty(t, cmp.Diff(first, loc), "location %d changed on %s", i, day)
			}
		}
		if shortest < 1000 {
			require.GreaterOrEqual(t, shortest, 3, "location %d: an error that lasted %d days", i, shortest)
		}
	}
	share := float64(dayWithErrors) / float64(days)
	t.Logf("%d changes of errors, %.1f%% of location-days with errors", changes, 100*share)
	require.Greater(t, changes, 100)
	require.InDelta(t, 0.14, share, 0.06)

	// The same day on another time of the day, and another Store of the
	// same seed: the same errors.
	a, _ := s.Get(account, s.ID(account, 5), start)
	b, _ := locations.New(3).Get(account, s.ID(account, 5), start.Add(15*time.Hour))
	require.Equal(t, a, b)
}

// TestDeterministic checks that a world gives the same bytes every time.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	page := func(seed int64) string {
		p, e := locations.New(seed).Page("agency-n120", 2, 50, now)
		require.Nil(t, e)
		data, err := json.Marshal(p)
		require.NoError(t, err)
		return string(data)
	}
	require.Equal(t, page(5), page(5))
	require.NotEqual(t, page(5), page(6))
}
