package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/load"
)

// golang-migrate reads the next migrations ahead while one runs; when that
// one fails (TestMigrateActions breaks one on purpose), the goroutines
// reading ahead stay blocked on a pipe nobody reads, until the process
// ends. The CLI ends then; the test binary goes on.
func TestMain(m *testing.M) {
	pgtest.Layout = load.DistributeDatabase // with TEST_CITUS_URL: make test-citus
	pgtest.Main(m, goleak.IgnoreAnyFunction("github.com/golang-migrate/migrate/v4.(*Migration).Buffer"))
}
