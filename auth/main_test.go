package auth_test

import (
	"testing"

	"github.com/seoetl/etl/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
