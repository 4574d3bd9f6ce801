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
