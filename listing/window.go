package listing

import (
	"math"
	"slices"
	"time"

	"github.com/seoetl/etl/catalog"
)

// DefaultMargin is the fraction under the rate limits at which the push
// paces its requests by default: 0.05, 5% under them.
const DefaultMargin = 0.05

// Paced returns the rate limit r paced margin under it (0 <= margin < 1):
// the same number of requests in a period longer by a factor of
// 1/(1-margin), rounded up to the nanosecond, so the rate is r's times
// (1-margin). With DefaultMargin, 5 requests a minute become 5 every
// 1m3.157894737s and 5 a second 5 every 1.052631579s. The slack absorbs
// the difference between the moment a request leaves and the moment the
// provider counts it, and between two clocks. Concurrent is kept; margin
// 0 returns r.
func Paced(r catalog.RateLimit, margin float64) catalog.RateLimit {
	if margin == 0 {
		return r
	}
	r.Per = time.Duration(math.Ceil(float64(r.Per) / (1 - margin)))
	return r
}

// Window paces requests under one rate limit read as a sliding window,
// the sandbox's reading and the strictest of "up to N requests per
// period": a request may be sent at t when fewer than Requests requests
// were sent in the period that ends at t, (t-Per, t]; one sent exactly
// Per before t no longer counts. It does not bound the requests in flight
// (RateLimit.Concurrent): a caller that must send one at a time waits for
// each answer before asking Next.
//
// PlanPush predicts a push with the same model, so a push that asks Next
// before each request and Adds it when it leaves sends as the plan says
// when the answers come as fast as the plan assumed. A Window is not safe
// for concurrent use.
type Window struct {
	limit catalog.RateLimit
	sent  []time.Time // the last limit.Requests requests, oldest first
}

// NewWindow returns a window for the rate limit r (typically Paced); a
// limit of no requests (Requests <= 0) never holds a request back.
func NewWindow(r catalog.RateLimit) *Window { return &Window{limit: r} }

// Limit returns the rate limit of the window.
func (w *Window) Limit() catalog.RateLimit { return w.limit }

// Next returns the earliest time, at or after t and not before the last
// request added, at which a request may be sent.
func (w *Window) Next(t time.Time) time.Time {
	if n := len(w.sent); n > 0 && t.Before(w.sent[n-1]) {
		t = w.sent[n-1]
	}
	if w.limit.Requests <= 0 || len(w.sent) < w.limit.Requests {
		return t
	}
	// The window holds limit.Requests requests: the next may go once the
	// oldest of them has left it.
	if free := w.sent[0].Add(w.limit.Per); free.After(t) {
		return free
	}
	return t
}

// Add records a request sent at t. A time before the last request added
// is taken as that request's, which keeps the window at least as full as
// it really is.
func (w *Window) Add(t time.Time) {
	if w.limit.Requests <= 0 {
		return
	}
	if n := len(w.sent); n > 0 && t.Before(w.sent[n-1]) {
		t = w.sent[n-1]
	}
	w.sent = append(w.sent, t)
	if len(w.sent) > w.limit.Requests {
		w.sent = append(w.sent[:0], w.sent[len(w.sent)-w.limit.Requests:]...)
	}
}

// Times returns the times of the requests the window holds (the last
// Requests added or seeded), oldest first: a copy.
func (w *Window) Times() []time.Time { return slices.Clone(w.sent) }

// Seed adds requests sent at times before the window knew of them (by
// another process, read from where it recorded them) to those it holds,
// of which the last Requests are kept. Each time is a request: several
// requests may go at one instant. A time the window holds already is
// taken for that request, once per time held, so that seeding it with
// requests it paced itself (recorded at the times it gave them) does not
// count them twice; a request recorded at another time than the window's
// counts twice, which only keeps the window fuller than it is. A time
// later than the last request held is taken as is: a request seeded in
// the future holds its place until then (the caller bounds such times).
func (w *Window) Seed(times []time.Time) {
	if w.limit.Requests <= 0 || len(times) == 0 {
		return
	}
	held := make(map[int64]int, len(w.sent))
	for _, t := range w.sent {
		held[t.UnixNano()]++
	}
	all := slices.Clone(w.sent)
	for _, t := range times {
		if k := t.UnixNano(); held[k] > 0 {
			held[k]--
			continue
		}
		all = append(all, t)
	}
	slices.SortStableFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	if len(all) > w.limit.Requests {
		all = all[len(all)-w.limit.Requests:]
	}
	w.sent = all
}
