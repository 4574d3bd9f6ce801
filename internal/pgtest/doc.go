// Package pgtest runs a package's tests against a real PostgreSQL, one fresh
// database per test.
//
// A package opts in from its TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Main starts one throwaway cluster for the test binary (package
// pgcluster), or uses the server of TEST_DATABASE_URL when that is set (its
// user needs CREATEDB and CREATEROLE, and the server PostgreSQL 13 or
// later). It builds a
// template database migrated to the latest schema (package migrations), runs
// the tests, then removes everything it made and checks for leaked
// goroutines. A test then calls NewDB (a URL) or NewPool (a pool) to get a
// database of its own, cloned from the template in milliseconds and dropped
// when the test ends; NewEmptyDB gives one without the schema, for testing
// migrations themselves. NewRole makes a role of the server to connect as
// (an analyst, say). NewServer starts a server of a test's own, and
// NewReplicated a primary and a streaming standby of it (synchronous or
// not), for the tests of a failover; with TEST_CITUS_URL the primary is
// the coordinator of a Citus cluster of the test's own, and
// Replicated.Promote names the promoted standby the coordinator.
//
// Interrupting the tests (SIGINT, SIGTERM) stops the cluster, removes its
// folder (or drops the databases made on the TEST_DATABASE_URL server) and
// exits with status 1. A test binary killed outright leaves its cluster to the
// next pgcluster.Start, which sweeps it; databases left on a TEST_DATABASE_URL
// server by a killed binary are named etl_tmpl_* and etl_t_*.
//
// Besides TEST_DATABASE_URL, Main reads PG_BIN, the folder of the PostgreSQL
// server binaries (default: pgcluster.Binaries). This package is test
// infrastructure, the one place outside cmd/ that reads the environment.
package pgtest
