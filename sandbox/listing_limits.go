package sandbox

import (
	"fmt"
	"sync"
	"time"

	"github.com/seoetl/etl/catalog"
)

// listingLimits are the rate limits of the listing endpoints (spec 8.2),
// per account and per operation, read from the catalog's RateLimit of each
// operation: Get location and Get locations 10 a second each, Update
// location 5 a second, Update locations 5 a minute and one at a time. They
// are the only limits of these endpoints: the per-key limits of the
// backlink and keyword endpoints (Config.RatePerSecond, MaxConcurrent)
// do not apply to them, nor do these to those.
//
// A limit of N requests per period is a sliding window on
// Config.WallClock, as the per-key limits are measured (the sandbox clock
// is usually pinned): a request is admitted when fewer than N requests of
// the same account and operation were admitted within the period before
// it. It is the strictest reading of "up to N requests per period": a
// token bucket of burst N lets nearly 2N through within one period (N at
// its end, N more at the start of the next), which the real service may
// refuse, so a client that paces itself to pass the sandbox passes the
// spec. A refused request (429) takes no place in the window; a request
// admitted and then answered with an error does.
type listingLimits struct {
	mu      sync.Mutex
	windows map[listingWindowKey]*listingWindow
}

type listingWindowKey struct{ account, op string }

// listingWindow is one account's use of one operation.
type listingWindow struct {
	admitted []time.Time // the times of the requests admitted within the last period, oldest first
	inflight int         // requests admitted and not answered
}

func newListingLimits() *listingLimits {
	return &listingLimits{windows: map[listingWindowKey]*listingWindow{}}
}

// admit lets a request of account to op in at now (the wall clock), or
// says why not, for a 429: another request of the operation is in flight
// past its Concurrent bound, or its Requests of the last Per were
// admitted. The caller must call release once the request is answered.
// Accounts are the configured API keys, so the windows are bounded.
func (l *listingLimits) admit(account string, op *catalog.ListingOperation, now time.Time) (release func(), refused string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := listingWindowKey{account, op.Name}
	w := l.windows[k]
	if w == nil {
		w = &listingWindow{}
		l.windows[k] = w
	}
	rate := op.Rate
	if rate.Concurrent > 0 && w.inflight >= rate.Concurrent {
		return nil, fmt.Sprintf("%s runs %s per account: another is in flight", op.Name, requestsText(rate.Concurrent, "at a time"))
	}
	if rate.Requests > 0 {
		// Forget what has left the window: a request exactly Per ago no
		// longer counts.
		start := now.Add(-rate.Per)
		n := 0
		for n < len(w.admitted) && !w.admitted[n].After(start) {
			n++
		}
		w.admitted = append(w.admitted[:0], w.admitted[n:]...)
		if len(w.admitted) >= rate.Requests {
			return nil, fmt.Sprintf("rate limit of %s exceeded: at most %s per account", op.Name, requestsText(rate.Requests, perText(rate.Per)))
		}
		w.admitted = append(w.admitted, now)
	}
	w.inflight++
	return func() {
		l.mu.Lock()
		w.inflight--
		l.mu.Unlock()
	}, ""
}

// requestsText is "one request at a time", "10 requests a second".
func requestsText(n int, per string) string {
	if n == 1 {
		return "one request " + per
	}
	return fmt.Sprintf("%d requests %s", n, per)
}

// perText is "a second", "a minute", or "every 1m30s".
func perText(d time.Duration) string {
	switch d {
	case time.Second:
		return "a second"
	case time.Minute:
		return "a minute"
	}
	return "every " + d.String()
}
