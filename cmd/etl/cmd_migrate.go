package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/migrations"
)

// dirtyHelp is golang-migrate's recovery from a dirty schema, in our words.
const dirtyHelp = `before each migration the version is marked dirty, after it
clean, so a migration that failed midway (a statement that failed, a lost
connection) leaves its version dirty, and every action but force and
version refuses to run. Look at what the failed migration did (its
.up.sql, and the error it stopped with), then fix the database by hand to
a version's state and force that version: if the migration took no effect
(or you undid its effects), force the version before it, then run up
again; if you finished it by hand, force its own version.`

// migrateOptions are the flags of etl migrate and its actions.
type migrateOptions struct {
	databaseURL string
	json        bool
	yes         bool
}

func newMigrateCmd(e *env) *cobra.Command {
	var o migrateOptions
	cmd := &cobra.Command{
		Use:   "migrate ACTION",
		Short: "Apply, revert or show the warehouse schema migrations",
		Long: `Manage the warehouse schema. The migrations are embedded in the binary and
numbered 1, 2, ...; the database records the last one applied (table
schema_migrations) and takes a lock while it migrates, so two processes
never migrate at once.

  up [N]      apply the next N migrations not yet applied (default: all),
              then (re)write the table and column comments from the
              endpoint catalog
  down [N]    revert the last N applied migrations (default: all, which
              drops every warehouse table and its data); asks for --yes
  goto V      migrate up or down to version V (0: none); going down asks
              for --yes
  force V     record version V as applied and clean, running nothing: the
              recovery from a dirty schema (below)
  version     print the version applied, this build's newest, and whether
              the schema is dirty

Each action prints the migrations it applied or reverted, or "no change",
then the version the schema is at; --json prints one JSON document (from,
to, dirty, applied, reverted, latest).

A dirty schema: ` + dirtyHelp + `

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError(errors.New("etl migrate needs an action: up, down, goto, force or version (see etl migrate --help)"))
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.databaseURL, "database-url", "", "warehouse connection URL (default $DATABASE_URL)")
	pf.BoolVar(&o.json, "json", false, "print JSON")
	cmd.AddCommand(newMigrateUpCmd(e, &o), newMigrateDownCmd(e, &o), newMigrateGotoCmd(e, &o), newMigrateForceCmd(e, &o), newMigrateVersionCmd(e, &o))
	return cmd
}

// migrateCount parses the optional N of migrate up and down.
func migrateCount(action string, args []string) (int, error) {
	if len(args) == 0 {
		return 0, nil
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		return 0, usageError(fmt.Errorf("migrate %s N: N must be a whole number of migrations, at least 1, got %q", action, args[0]))
	}
	return n, nil
}

// migrateVersion parses the V of migrate goto and force.
func migrateVersion(action string, args []string) (uint, error) {
	v, err := strconv.ParseUint(args[0], 10, 32)
	if err != nil || !knownVersion(uint(v)) {
		return 0, usageError(fmt.Errorf("migrate %s V: V must be 0 or the version of a migration of this build (1 to %d), got %q", action, migrations.Latest(), args[0]))
	}
	return uint(v), nil
}

// newMigrateUpCmd is etl migrate up.
func newMigrateUpCmd(e *env, o *migrateOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "up [N]",
		Short: "Apply the next N migrations not yet applied (default: all)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := migrateCount("up", args)
			if err != nil {
				return err
			}
			return e.migrate(cmd.Context(), *o, "", func(ctx context.Context, dbURL string) (migrations.Change, error) {
				return migrations.UpBy(ctx, dbURL, n)
			})
		},
	}
}

// newMigrateDownCmd is etl migrate down.
func newMigrateDownCmd(e *env, o *migrateOptions) *cobra.Command {
	down := &cobra.Command{
		Use:   "down [N] --yes",
		Short: "Revert the last N applied migrations (default: all, dropping every table)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := migrateCount("down", args)
			if err != nil {
				return err
			}
			if !o.yes {
				what := "migrate down drops every warehouse table and its data"
				if n > 0 {
					what = fmt.Sprintf("migrate down %d reverts migrations, which may drop tables, columns and their data", n)
				}
				return usageError(errors.New(what + "; pass --yes to confirm"))
			}
			return e.migrate(cmd.Context(), *o, "", func(ctx context.Context, dbURL string) (migrations.Change, error) {
				return migrations.DownBy(ctx, dbURL, n)
			})
		},
	}
	down.Flags().BoolVar(&o.yes, "yes", false, "confirm reverting migrations")
	return down
}

// newMigrateGotoCmd is etl migrate goto.
func newMigrateGotoCmd(e *env, o *migrateOptions) *cobra.Command {
	gotoCmd := &cobra.Command{
		Use:   "goto V",
		Short: "Migrate up or down to version V (0: none)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := migrateVersion("goto", args)
			if err != nil {
				return err
			}
			dbURL, err := e.databaseURL(o.databaseURL)
			if err != nil {
				return err
			}
			at, _, err := migrations.Version(cmd.Context(), dbURL)
			if err != nil {
				return dbError(dbURL, err)
			}
			if v < at && !o.yes {
				return usageError(fmt.Errorf("migrate goto %d reverts migrations %d to %d, which may drop tables, columns and their data; pass --yes to confirm", v, v+1, at))
			}
			return e.migrate(cmd.Context(), *o, "", func(ctx context.Context, dbURL string) (migrations.Change, error) {
				return migrations.Goto(ctx, dbURL, v)
			})
		},
	}
	gotoCmd.Flags().BoolVar(&o.yes, "yes", false, "confirm going down")
	return gotoCmd
}

// newMigrateForceCmd is etl migrate force.
func newMigrateForceCmd(e *env, o *migrateOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "force V",
		Short: "Record version V as applied and clean, running nothing (a dirty schema's recovery)",
		Long: `Record version V (0: none) as the version applied, and clean, without running
any migration: the recovery from a dirty schema.

A dirty schema: ` + dirtyHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := migrateVersion("force", args)
			if err != nil {
				return err
			}
			return e.migrate(cmd.Context(), *o, "force", func(ctx context.Context, dbURL string) (migrations.Change, error) {
				return migrations.Force(ctx, dbURL, v)
			})
		},
	}
}

// newMigrateVersionCmd is etl migrate version.
func newMigrateVersionCmd(e *env, o *migrateOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version applied, this build's newest, and whether the schema is dirty",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.migrate(cmd.Context(), *o, "version", func(ctx context.Context, dbURL string) (migrations.Change, error) {
				v, dirty, err := migrations.Version(ctx, dbURL)
				return migrations.Change{From: v, To: v, Dirty: dirty, Applied: []migrations.Migration{}, Reverted: []migrations.Migration{}}, err
			})
		},
	}
}

// knownVersion says whether v is 0 or a migration of this build.
func knownVersion(v uint) bool {
	return v == 0 || slices.ContainsFunc(migrations.All(), func(m migrations.Migration) bool { return m.Version == v })
}

// migrateJSON is what etl migrate --json prints.
type migrateJSON struct {
	migrations.Change
	// Latest is the version of this build's newest migration.
	Latest uint `json:"latest"`
	// Citus is what up distributed on a Citus coordinator (absent on
	// plain PostgreSQL).
	Citus *citusJSON `json:"citus,omitempty"`
}

// citusJSON is what etl migrate up --json says of Citus.
type citusJSON struct {
	Version      string   `json:"version"`
	Reference    []string `json:"reference_tables"`
	Distributed  []string `json:"distributed_tables"`
	AnalystLogin bool     `json:"analyst_login"`
}

// migrate runs a migration action on the warehouse and prints what it did:
// the migrations applied or reverted (or "no change"), then the version.
// kind is "" for the actions that run migrations, "force" or "version".
// After up (or goto up), the table and column comments are written from
// the endpoint catalog.
func (e *env) migrate(ctx context.Context, o migrateOptions, kind string, action func(context.Context, string) (migrations.Change, error)) error {
	dbURL, err := e.databaseURL(o.databaseURL)
	if err != nil {
		return err
	}
	c, err := action(ctx, dbURL)
	if err != nil && c.From == 0 && c.To == 0 && len(c.Applied) == 0 && len(c.Reverted) == 0 && !c.Dirty {
		return dbError(dbURL, err)
	}
	var dist load.Distributed
	if err == nil && kind == "" && len(c.Reverted) == 0 && c.To > 0 && !c.Dirty {
		// Also with no change: a newer build may say more in them, and
		// may distribute a table a migration added.
		dist, err = document(ctx, dbURL)
	}
	var out strings.Builder
	if o.json {
		doc := migrateJSON{Change: c, Latest: migrations.Latest()}
		if dist.Citus != "" {
			doc.Citus = &citusJSON{Version: dist.Citus, Reference: nonNil(dist.Reference), Distributed: nonNil(dist.Tables), AnalystLogin: dist.AnalystLogin}
		}
		if jerr := writeIndentedJSON(&out, doc); jerr != nil {
			return jerr
		}
	} else {
		writeChange(&out, kind, c)
		writeDistributed(&out, dist)
	}
	_, _ = io.WriteString(e.stdout, out.String())
	if err != nil {
		return dbError(dbURL, err)
	}
	return nil
}

// document writes the table and column comments from the catalog, then
// on a Citus coordinator distributes what is not distributed yet
// (load.Distribute).
func document(ctx context.Context, dbURL string) (load.Distributed, error) {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return load.Distributed{}, err
	}
	defer pool.Close()
	if err := load.Document(ctx, pool); err != nil {
		return load.Distributed{}, err
	}
	return load.Distribute(ctx, pool)
}

// writeDistributed says what migrate up distributed on Citus: nothing on
// plain PostgreSQL, one line on Citus.
func writeDistributed(w io.Writer, d load.Distributed) {
	if d.Citus == "" {
		return
	}
	if len(d.Reference) == 0 && len(d.Tables) == 0 && !d.AnalystLogin {
		fmt.Fprintf(w, "citus %s: every table already laid out (%d fact tables by owner, %d reference tables)\n", d.Citus, len(load.DistributedTables()), len(load.ReferenceTables))
		return
	}
	fmt.Fprintf(w, "citus %s: distributed %d fact tables by owner and made %d reference tables", d.Citus, len(d.Tables), len(d.Reference))
	if d.AnalystLogin {
		fmt.Fprint(w, "; etl_analyst may now log in (no password), as Citus reaches the workers as it")
	}
	fmt.Fprintln(w, " (docs/warehouse.md, On Citus)")
}

// nonNil is s, or an empty slice for nil (JSON [] rather than null).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// writeChange writes what a migration action of kind (see migrate) did,
// then where the schema is.
func writeChange(w io.Writer, kind string, c migrations.Change) {
	for _, m := range c.Applied {
		fmt.Fprintf(w, "applied %s\n", m.Name)
	}
	for _, m := range c.Reverted {
		fmt.Fprintf(w, "reverted %s\n", m.Name)
	}
	switch {
	case kind == "force":
		fmt.Fprintf(w, "forced: version %d recorded as applied and clean, no migration run (it was %d)\n", c.To, c.From)
	case kind == "" && c.None():
		fmt.Fprint(w, "no change: ")
	}
	if c.Unknown {
		fmt.Fprint(w, "schema version unknown: the connection to the database was lost (etl migrate version says where it is)\n")
		return
	}
	state := "clean"
	if c.Dirty {
		state = "dirty: " + migrations.Recovery(c.To)
	}
	fmt.Fprintf(w, "schema version %d of %d (%s)\n", c.To, migrations.Latest(), state)
}
