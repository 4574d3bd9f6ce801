package progress

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine (a live display's ticker) outlives
// the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
