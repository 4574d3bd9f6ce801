package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// rootEnvironment is what etl --help says of the environment, after the
// commands and flags.
const rootEnvironment = `Environment:
  DATABASE_URL   PostgreSQL connection URL of the warehouse
  ETL_API_URL    base address of the data API (e.g. https://api.example.com)
  ETL_API_KEY    data API key; never logged, never stored
  ETL_AUTH_URL   the OAuth token service (default ETL_API_URL); see etl auth
  ETL_SECRET_KEY encrypts the accounts' tokens in the warehouse; see etl auth
  ETL_READ_DATABASE_URL  a replica for what only reads: etl runs, etl report`

// flagGroup is a heading of a command's --help and the flags under it,
// in the order printed.
type flagGroup struct {
	heading string
	flags   []string
}

// flagGroups are the commands whose own flags --help prints under
// headings, by command path. Flags a command has that no group names are
// printed first, under "Flags:" (TestSandboxHelpGroupsItsFlags wants every
// flag of etl sandbox in a group but --help).
var flagGroups = map[string][]flagGroup{
	"etl sandbox": {
		{"Data API flags", []string{"addr", "api-key", "seed", "now", "units", "rate", "concurrency", "max-limit"}},
		{"Fault flags", []string{"faults", "slow"}},
		{"Token service flags", []string{"device-expires", "device-interval", "auto-approve", "client-id", "client-secret"}},
		{"Listing endpoint flags", []string{"no-local-pro"}},
	},
}

// applyHelp finishes the help of the command tree under root, once every
// command is added: the help topic exit-codes, cobra's help and completion
// commands (so that they get examples too), every command's Examples, and
// the usage that prints them last.
func applyHelp(root *cobra.Command) {
	root.AddCommand(&cobra.Command{
		Use:   "exit-codes",
		Short: "What each exit status of etl means",
		Long:  exitHelp(),
	})
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	setExamples(root)
	root.SetUsageFunc(usage)
}

// usage writes c's usage as cobra's default template does, but for three
// things: the flags of a command of flagGroups are printed under their
// headings; etl's own usage ends with the environment and the exit
// statuses in a line (etl help exit-codes prints the table), after the
// commands; and Examples come last, as gh and rclone print them.
func usage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		b.WriteString("\n  " + c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n  " + c.CommandPath() + " [command]")
	}
	if len(c.Aliases) > 0 {
		b.WriteString("\n\nAliases:\n  " + c.NameAndAliases())
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	if c.HasAvailableLocalFlags() {
		writeLocalFlags(&b, c)
	}
	if c.HasAvailableInheritedFlags() {
		b.WriteString("\n\nGlobal Flags:\n" + strings.TrimRight(c.InheritedFlags().FlagUsages(), " \n"))
	}
	if c.HasHelpSubCommands() {
		b.WriteString("\n\nAdditional help topics:")
		width := 0
		for _, sub := range c.Commands() {
			if sub.IsAdditionalHelpTopicCommand() {
				width = max(width, len(sub.CommandPath()))
			}
		}
		for _, sub := range c.Commands() {
			if sub.IsAdditionalHelpTopicCommand() {
				fmt.Fprintf(&b, "\n  %-*s  %s", width, sub.CommandPath(), sub.Short)
			}
		}
	}
	if !c.HasParent() {
		b.WriteString("\n\n" + rootEnvironment + "\n\n" + exitLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	if c.HasExample() {
		b.WriteString("\n\nExamples:\n" + c.Example)
	}
	b.WriteString("\n")
	_, err := fmt.Fprint(c.OutOrStderr(), b.String())
	return err
}

// writeLocalFlags writes the flags of c itself: under "Flags:", or, for a
// command of flagGroups, those no group names under "Flags:" and then
// each group under its heading.
func writeLocalFlags(b *strings.Builder, c *cobra.Command) {
	local := c.LocalFlags()
	groups := flagGroups[c.CommandPath()]
	grouped := map[string]bool{}
	for _, g := range groups {
		for _, name := range g.flags {
			grouped[name] = true
		}
	}
	rest := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	local.VisitAll(func(f *pflag.Flag) {
		if !grouped[f.Name] {
			rest.AddFlag(f)
		}
	})
	if rest.HasAvailableFlags() {
		b.WriteString("\n\nFlags:\n" + strings.TrimRight(rest.FlagUsages(), " \n"))
	}
	for _, g := range groups {
		fs := pflag.NewFlagSet(g.heading, pflag.ContinueOnError)
		fs.SortFlags = false
		for _, name := range g.flags {
			if f := local.Lookup(name); f != nil {
				fs.AddFlag(f)
			}
		}
		if fs.HasAvailableFlags() {
			b.WriteString("\n\n" + g.heading + ":\n" + strings.TrimRight(fs.FlagUsages(), " \n"))
		}
	}
}
