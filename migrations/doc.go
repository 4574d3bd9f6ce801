// Package migrations owns the warehouse schema: numbered SQL migrations for
// golang-migrate (NNNN_name.up.sql and its reverse NNNN_name.down.sql),
// embedded into the binary, and the functions that apply them (Up), revert
// them all (Down) and report where a database stands (Version).
//
// golang-migrate records the applied version in the table schema_migrations
// of the database, takes a PostgreSQL advisory lock while it migrates (so two
// runs never migrate at once) and marks the version dirty before each
// migration and clean after it: a dirty version means a migration failed
// midway and the database needs fixing by hand.
//
// Every migration must be reversible: Down followed by Up gives the same
// schema, and Down leaves none of our tables behind; migrations_test.go checks
// both on a fresh database.
package migrations
