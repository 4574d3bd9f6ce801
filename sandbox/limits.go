package sandbox

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/seoetl/etl/catalog"
)

// Defaults of the account limits: the real API's (design notes, "What the
// real API does beyond the spec").
const (
	DefaultRatePerSecond = catalog.AccountRequestsPerSecond
	DefaultMaxConcurrent = catalog.AccountConcurrentRequests
	DefaultSlowDelay     = 2 * time.Second
	// DefaultMaxLimit is the largest limit a paged endpoint accepts
	// (Config.MaxLimit): pages of 10,000 lines.
	DefaultMaxLimit = 10_000
)

// account is the state of one API key: what it spent, what requests being
// written have reserved of its balance, its requests in flight and its
// token bucket. Accounts exist for the configured keys only (the only ones
// that authenticate), so their number is bounded.
type account struct {
	limiter *rate.Limiter // nil: no per-second limit

	mu       sync.Mutex
	usage    Usage
	reserved int64 // units held by requests between the balance check and the end of their body
	inflight int   // requests admitted and not finished
}

// admit lets a request of a in, or answers why not: 429 past the
// concurrent requests or the requests per second of the key. A request
// refused for concurrency takes no token from the bucket. The caller must
// call the returned release once the request is answered.
func (s *Server) admit(a *account) (release func(), _ *apiError) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.maxConcurrent > 0 && a.inflight >= s.maxConcurrent {
		return nil, tooManyConcurrent(s.maxConcurrent)
	}
	if a.limiter != nil && !a.limiter.AllowN(s.wall(), 1) {
		return nil, tooManyPerSecond(s.ratePerSecond)
	}
	a.inflight++
	return func() {
		a.mu.Lock()
		a.inflight--
		a.mu.Unlock()
		if s.hooks.released != nil {
			s.hooks.released(a.usage.Key)
		}
	}, nil
}

// reservation is the price of one answer, held against the balance of its
// key from the balance check until the body is written.
type reservation struct {
	s       *Server
	a       *account
	units   int64
	settled bool
}

// reserve holds units of a's balance, or answers 403 when what remains
// (the balance less what is spent and what other requests hold) cannot pay
// them. Check and hold happen under one lock, so concurrent requests of a
// key never hold more than its balance together. Without a balance every
// reservation succeeds.
func (s *Server) reserve(a *account, units int64) (*reservation, *apiError) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.units > 0 {
		if left := s.units - a.usage.UnitsSpent - a.reserved; units > left {
			return nil, unitsExhausted(units, left, s.units)
		}
	}
	a.reserved += units
	return &reservation{s: s, a: a, units: units}, nil
}

// settle ends the reservation with a charge of units (at most what was
// reserved) for an answered request.
func (r *reservation) settle(units int64) {
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	r.a.reserved -= r.units
	r.a.usage.UnitsSpent += min(units, r.units)
	r.a.usage.Requests++
	r.settled = true
}

// cancel gives the reserved units back unless settle ran: deferred, so a
// request that fails or panics after reserving never keeps them.
func (r *reservation) cancel() {
	if r == nil || r.settled {
		return
	}
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	r.a.reserved -= r.units
	r.settled = true
}

// failed counts an authenticated request answered with an error: it costs
// nothing.
func (a *account) failed() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.usage.FailedRequests++
}

// wait delays a response by d (the slow fault), or less when the client
// leaves first.
func (s *Server) wait(ctx context.Context, d time.Duration) error {
	if s.hooks.sleep != nil {
		return s.hooks.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// hooks let tests of the package hold requests at chosen points without
// sleeping; all are nil in production.
type hooks struct {
	// sleep replaces the timer of the slow fault.
	sleep func(ctx context.Context, d time.Duration) error
	// released runs after a request freed its concurrency slot.
	released func(key string)
	// listingAdmitted runs once a listing request of account is admitted
	// by the limits of spec 8.2 (op is its catalog.ListingOperation's
	// Name), while it holds its place among the requests in flight and
	// before anything else happens to it.
	listingAdmitted func(ctx context.Context, op, account string)
}

// checkLimit refuses the limit of a paged request past the largest the
// sandbox serves in one page (Config.MaxLimit): 400, not retryable, and
// free, as every invalid request. The default limit counts when none is
// given. Summary's limit is not a page (it has no offset): it is capped
// by the available history instead (spec 4.3).
func (s *Server) checkLimit(q *request) *apiError {
	if s.maxLimit <= 0 {
		return nil
	}
	if _, paged := q.ep.Param("offset"); !paged {
		return nil
	}
	if _, ok := q.ep.Param("limit"); !ok {
		return nil
	}
	n := q.int("limit")
	if n <= int64(s.maxLimit) {
		return nil
	}
	given := ""
	if !q.has("limit") {
		given = " (its default)"
	}
	if s.unnamedLimit {
		return invalidf("limit", "limit %d%s is more than %s serves in one page", n, given, q.ep.Name)
	}
	return invalidf("limit", "limit must be from 1 to %d for %s, got %d%s", s.maxLimit, q.ep.Name, n, given)
}
