package main

import (
	"testing"

	"github.com/seoetl/etl/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
