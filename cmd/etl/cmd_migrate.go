package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/migrations"
)

func newMigrateCmd(e *env) *cobra.Command {
	var dbFlag string
	var yes bool
	cmd := &cobra.Command{
		Use:   "migrate up|down|version",
		Short: "Apply, revert or show the warehouse schema migrations",
		Long: `Manage the warehouse schema. The migrations are embedded in the binary.

  up       apply every pending migration, then (re)write the table and column
           comments from the endpoint catalog
  down     revert every migration: drops all warehouse tables and their data
           (asks for --yes)
  version  print the applied version and whether a migration failed midway`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"up", "down", "version"},
		RunE: func(cmd *cobra.Command, args []string) error {
			dbURL, err := e.databaseURL(dbFlag)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			switch args[0] {
			case "up":
				if err := migrateUp(ctx, dbURL); err != nil {
					return err
				}
			case "down":
				if !yes {
					return usageError(errors.New("migrate down drops every warehouse table and its data; pass --yes to confirm"))
				}
				if err := migrations.Down(ctx, dbURL); err != nil {
					return dbError(dbURL, err)
				}
			case "version":
			default:
				return usageError(fmt.Errorf("unknown migrate action %q (want up, down or version)", args[0]))
			}
			v, dirty, err := migrations.Version(ctx, dbURL)
			if err != nil {
				return dbError(dbURL, err)
			}
			state := "clean"
			if dirty {
				state = "dirty: a migration failed midway; fix the database, then force the version"
			}
			fmt.Fprintf(e.stdout, "schema version %d (%s)\n", v, state)
			return nil
		},
	}
	cmd.Flags().StringVar(&dbFlag, "database-url", "", "warehouse connection URL (default $DATABASE_URL)")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm `migrate down`")
	return cmd
}
