package apitest

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// VirtualClock is the wall clock of a test of the listing endpoints: the
// client's pacers and back-offs sleep on it (extract.Config.Clock) and the
// sandbox measures its rate limits on it (sandbox.Config.WallClock), so a
// minute's limit is waited out in no time. Sleep moves it forward by its
// duration at once. It suits one sleeper at a time (a single goroutine, or
// callers the client lets through one by one): concurrent sleepers would
// each move it.
type VirtualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewVirtualClock returns a clock that reads start.
func NewVirtualClock(start time.Time) *VirtualClock { return &VirtualClock{now: start} }

// Now reads the clock.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep moves the clock forward by d (nothing for d <= 0), unless ctx has
// ended.
func (c *VirtualClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return nil
}

// Bearer is an extract.Config.Authorize that sends token as the bearer
// token of every request.
func Bearer(token string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+token)
			return next.RoundTrip(r)
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
