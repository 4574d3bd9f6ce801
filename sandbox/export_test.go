package sandbox

import (
	"context"
	"time"
)

// NewWithHooks is New with the test hooks: sleep replaces the timer of the
// slow fault, released runs after a request frees its concurrency slot.
// Either may be nil.
func NewWithHooks(cfg Config, sleep func(ctx context.Context, d time.Duration) error, released func(key string)) (*Server, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	s.hooks = hooks{sleep: sleep, released: released}
	return s, nil
}

// NewWithListingHook is New with a hook that runs once a listing request
// is admitted by the rate limits of spec 8.2, while it is in flight: a
// test blocks in it to keep the request in flight.
func NewWithListingHook(cfg Config, admitted func(ctx context.Context, op, account string)) (*Server, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	s.hooks = hooks{listingAdmitted: admitted}
	return s, nil
}
