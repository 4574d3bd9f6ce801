package planning_test

import (
	"testing"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/load"
)

func TestMain(m *testing.M) {
	pgtest.Layout = load.DistributeDatabase // with TEST_CITUS_URL: make test-citus
	pgtest.Main(m)
}
