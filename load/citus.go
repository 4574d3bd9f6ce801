package load

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
)

// The warehouse on Citus (docs/warehouse.md, "On Citus"): the one place
// that says which table Citus distributes and how. Distribute reads it;
// TestCitusLayoutNamesEveryTable checks that every table of the schema
// is in exactly one of its three lists, so that a table a later
// migration adds is placed here before it ships.

// ReferenceTables are copied to every node: the small tables that the
// fact tables' queries join (targets, target sets) and the bookkeeping
// that the *_latest views join to them (latest_months,
// keyword_latest_months). In the order Distribute makes them: a table
// after those it refers to.
var ReferenceTables = []string{"targets", "target_sets", "target_set_members", "latest_months", "keyword_latest_months"}

// CoordinatorTables stay plain tables of the coordinator: the
// bookkeeping that relies on row locks and single-node transactions
// (runs, checkpoints, the ledger, budgets, locks, schedules), what
// retention keeps of compacted runs, the export records, quarantine, the
// accounts and their sealed tokens, the listings (a few thousand rows an
// account, no units) and the migrations' version.
var CoordinatorTables = []string{
	"runs", "task_checkpoints", "unit_ledger", "budget_usage", "job_locks", "schedule_ticks", "task_totals",
	"watermarks", "api_bounds", "run_task_counts", "run_table_totals", "task_closed_months", "export_files",
	"quarantine", "accounts", "listing_versions", "listing_problems", "listing_pushes", "listing_push_requests",
	"listing_push_items", "schema_migrations",
}

// DistributedTable is a fact table as Citus distributes it.
type DistributedTable struct {
	Table string
	// Column is its distribution column: its owner (DistributionColumn).
	Column string
	// ColocateWith is the table it is co-located with: the first fact
	// table whose owner has the same type ("" for that first one).
	ColocateWith string
}

// DistributedTables are the catalog's fact tables, each by its owner and
// co-located with the others whose owner has the same type (the targets'
// and sets' bigint ids together; keyword_metrics, by keyword, apart).
func DistributedTables() []DistributedTable {
	var out []DistributedTable
	first := map[string]string{} // owner type -> first table
	for _, ep := range catalog.All() {
		col := DistributionColumn(ep)
		typ := ""
		for _, c := range Columns(ep) {
			if c.Name == col {
				typ = c.PGType
			}
		}
		d := DistributedTable{Table: ep.Table, Column: col}
		if f, ok := first[typ]; ok {
			d.ColocateWith = f
		} else {
			first[typ] = ep.Table
		}
		out = append(out, d)
	}
	return out
}

// Distributed says what Distribute did.
type Distributed struct {
	// Citus is the version of the citus extension, "" when the database
	// has none (then Distribute did nothing).
	Citus string
	// Reference and Tables are the reference tables and the fact tables
	// it distributed now (not those distributed before).
	Reference, Tables []string
	// AnalystLogin says it let etl_analyst log in (see Distribute).
	AnalystLogin bool
}

// Distribute lays the warehouse out on Citus, when the database is a
// Citus coordinator (the citus extension is created in it): the
// reference tables (ReferenceTables), then every fact table by its owner
// (DistributedTables), each unless Citus has it already; the other
// tables stay on the coordinator. A fact table's partitions go with it,
// and those the loader attaches later are distributed as they are
// attached. It is idempotent and does nothing on plain PostgreSQL; etl
// migrate up runs it after the migrations, so that a table a later
// migration adds is distributed by the same command.
//
// It also lets etl_analyst log in (ALTER ROLE ... LOGIN, still with no
// password): the report reads the warehouse under SET ROLE etl_analyst,
// and Citus reaches the workers as the current role, which a NOLOGIN
// role cannot be ("role "etl_analyst" is not permitted to log in", seen
// on 13.2.2). With no password, no password login succeeds as it; the
// workers must let the coordinator in as it as they let in the role etl
// connects as (pg_hba.conf).
func Distribute(ctx context.Context, pool *pgxpool.Pool) (Distributed, error) {
	var d Distributed
	err := pool.QueryRow(ctx, `SELECT coalesce((SELECT extversion FROM pg_extension WHERE extname = 'citus'), '')`).Scan(&d.Citus)
	if err != nil || d.Citus == "" {
		return d, err
	}
	rows, err := pool.Query(ctx, `SELECT logicalrelid::regclass::text FROM pg_dist_partition`)
	if err != nil {
		return d, fmt.Errorf("load: the tables Citus holds: %w", err)
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return d, fmt.Errorf("load: the tables Citus holds: %w", err)
	}
	// Citus drops comments while it lays tables out: making targets a
	// reference table turns the tables with a foreign key to it into
	// Citus local tables, remade with the views on them, and target_sets,
	// target_set_members, matrix_targets, matrix_targets_latest and
	// competitor_gap came out of 13.2.2 without their COMMENT ON. They
	// are read first and put back after.
	comments, err := readComments(ctx, pool)
	if err != nil {
		return d, err
	}
	for _, t := range ReferenceTables {
		if slices.Contains(done, t) {
			continue
		}
		if _, err := pool.Exec(ctx, `SELECT create_reference_table($1)`, t); err != nil {
			return d, fmt.Errorf("load: making %s a reference table: %w", t, err)
		}
		d.Reference = append(d.Reference, t)
	}
	for _, t := range DistributedTables() {
		if slices.Contains(done, t.Table) {
			continue
		}
		with := t.ColocateWith
		if with == "" {
			with = "default"
		}
		if _, err := pool.Exec(ctx, `SELECT create_distributed_table($1, $2, colocate_with => $3)`, t.Table, t.Column, with); err != nil {
			return d, fmt.Errorf("load: distributing %s by %s: %w", t.Table, t.Column, err)
		}
		d.Tables = append(d.Tables, t.Table)
	}
	if err := restoreComments(ctx, pool, comments); err != nil {
		return d, err
	}
	var login bool
	if err := pool.QueryRow(ctx, `SELECT rolcanlogin FROM pg_roles WHERE rolname = 'etl_analyst'`).Scan(&login); err != nil {
		return d, fmt.Errorf("load: the role etl_analyst: %w", err)
	}
	if !login {
		if _, err := pool.Exec(ctx, `ALTER ROLE etl_analyst LOGIN`); err != nil {
			return d, fmt.Errorf("load: letting etl_analyst reach the workers: %w", err)
		}
		d.AnalystLogin = true
	}
	return d, nil
}

// DistributeDatabase is Distribute on a pool of its own to dbURL: what
// the tests' harness calls to lay a database out on Citus
// (pgtest.Layout).
func DistributeDatabase(ctx context.Context, dbURL string) error {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = Distribute(ctx, pool)
	return err
}

// comment is the COMMENT ON of a table, view or column.
type comment struct {
	// Rel is the table or view (as regclass names it), Kind its relkind;
	// Column is "" for the relation's own comment.
	Rel, Kind, Column, Text string
}

// commentsSQL reads the comments of the tables and views of the
// schemas the session sees (not PostgreSQL's, nor Citus's).
const commentsSQL = `
	SELECT c.oid::regclass::text, c.relkind::text, coalesce(a.attname::text, ''), d.description
	FROM pg_description d
	JOIN pg_class c ON d.classoid = 'pg_class'::regclass AND d.objoid = c.oid
	LEFT JOIN pg_attribute a ON d.objsubid > 0 AND a.attrelid = c.oid AND a.attnum = d.objsubid
	WHERE c.relkind IN ('r', 'p', 'v', 'm') AND c.relnamespace = ANY (current_schemas(false)::regnamespace[])
	  AND (d.objsubid = 0 OR a.attname IS NOT NULL)`

func readComments(ctx context.Context, pool *pgxpool.Pool) ([]comment, error) {
	rows, err := pool.Query(ctx, commentsSQL)
	if err != nil {
		return nil, fmt.Errorf("load: reading the comments of the tables and views: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (comment, error) {
		var c comment
		err := r.Scan(&c.Rel, &c.Kind, &c.Column, &c.Text)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("load: reading the comments of the tables and views: %w", err)
	}
	return out, nil
}

// restoreComments writes again each comment of was that the relation
// or column, still there by name, no longer has.
func restoreComments(ctx context.Context, pool *pgxpool.Pool, was []comment) error {
	now, err := readComments(ctx, pool)
	if err != nil {
		return err
	}
	type key struct{ rel, column string }
	has := map[key]bool{}
	for _, c := range now {
		has[key{c.Rel, c.Column}] = true
	}
	for _, c := range was {
		if has[key{c.Rel, c.Column}] {
			continue
		}
		var exists bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, c.Rel).Scan(&exists); err != nil {
			return fmt.Errorf("load: does %s still exist: %w", c.Rel, err)
		}
		if !exists {
			continue
		}
		// c.Rel is as regclass prints it: quoted where it must be.
		var sql string
		switch {
		case c.Column != "":
			sql = fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", c.Rel, pgx.Identifier{c.Column}.Sanitize(), literal(c.Text))
		case c.Kind == "v":
			sql = fmt.Sprintf("COMMENT ON VIEW %s IS %s", c.Rel, literal(c.Text))
		case c.Kind == "m":
			sql = fmt.Sprintf("COMMENT ON MATERIALIZED VIEW %s IS %s", c.Rel, literal(c.Text))
		default:
			sql = fmt.Sprintf("COMMENT ON TABLE %s IS %s", c.Rel, literal(c.Text))
		}
		if _, err := pool.Exec(ctx, sql); err != nil {
			return fmt.Errorf("load: putting back the comment of %s that Citus dropped: %w", c.Rel, err)
		}
	}
	return nil
}
