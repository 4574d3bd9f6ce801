package pipeline_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/seoetl/etl/internal/testworld"
)

// fixture is the world of a test (internal/testworld: a sandbox of the
// API served over HTTP, a warehouse database of its own with a pool on
// it, the checked allocator of its runs), with the helpers the runner's
// tests add to it.
type fixture struct{ *testworld.World }

// newWorld starts the world o (testworld.New).
func newWorld(t *testing.T, o testworld.Options) *fixture {
	t.Helper()
	return &fixture{testworld.New(t, o)}
}

// newFixture starts the zero world.
func newFixture(t *testing.T) *fixture { return newWorld(t, testworld.Options{}) }

// newFixtureWith serves the sandbox behind an optional middleware.
func newFixtureWith(t *testing.T, mw func(http.Handler) http.Handler) *fixture {
	t.Helper()
	return newWorld(t, testworld.Options{MW: mw})
}

// clock is a movable clock shared by a sandbox and the runs.
type clock = testworld.Clock

// newClockFixture serves a sandbox on a clock that the test moves.
func newClockFixture(t *testing.T, at time.Time) (*fixture, *clock) {
	t.Helper()
	w, c := testworld.NewClocked(t, at)
	return &fixture{w}, c
}

// newClockFixtureMW is newClockFixture with a middleware in front of the
// sandbox, which may move the clock.
func newClockFixtureMW(t *testing.T, at time.Time, mw func(c *clock, next http.Handler) http.Handler) (*fixture, *clock) {
	t.Helper()
	c := testworld.NewClock(at)
	return newWorld(t, testworld.Options{Now: c.Now, MW: func(next http.Handler) http.Handler { return mw(c, next) }}), c
}
