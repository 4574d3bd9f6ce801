package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// TestRootHelpListsCommandsFirst: etl --help starts with what etl is and
// its commands, then says where the exit statuses are explained, in one
// line; etl help exit-codes (and etl exit-codes) prints the table.
func TestRootHelpListsCommandsFirst(t *testing.T) {
	t.Parallel()
	r := etl(t, nil, "--help")
	require.Equal(t, exitOK, r.code, r.stderr)
	commands := strings.Index(r.stdout, "\nAvailable Commands:\n")
	require.Positive(t, commands)
	require.Less(t, strings.Count(r.stdout[:commands], "\n"), 8, "the commands come within the first lines:\n%s", r.stdout)
	for _, later := range []string{"\nEnvironment:\n", exitLine(), "\nExamples:\n"} {
		require.Greater(t, strings.Index(r.stdout, later), commands, "%q comes after the commands", later)
	}
	require.NotContains(t, r.stdout, exitHelp())
	require.Contains(t, r.stdout, "etl exit-codes  What each exit status of etl means", "listed under the help topics")
	for _, args := range [][]string{{"help", "exit-codes"}, {"exit-codes"}, {"exit-codes", "--help"}} {
		r := etl(t, nil, args...)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.Equal(t, exitHelp()+"\n\n", r.stdout, strings.Join(args, " "))
	}
}

// TestSandboxHelpGroupsItsFlags: etl sandbox --help prints its flags under
// the headings of flagGroups (data API, faults, token service, listing
// endpoints), each flag exactly once, and every flag but --help in a group.
func TestSandboxHelpGroupsItsFlags(t *testing.T) {
	t.Parallel()
	r := etl(t, nil, "sandbox", "--help")
	require.Equal(t, exitOK, r.code, r.stderr)
	_, usage, ok := strings.Cut(r.stdout, "\nUsage:\n")
	require.True(t, ok)
	usage, _, _ = strings.Cut(usage, "\nGlobal Flags:\n")

	flagLine := regexp.MustCompile(`^\s+(?:-\w, )?--([\w-]+) `)
	section := ""
	seen := map[string][]string{}
	for _, l := range strings.Split(usage, "\n") {
		if strings.HasSuffix(l, ":") && !strings.HasPrefix(l, " ") {
			section = strings.TrimSuffix(l, ":")
			continue
		}
		if m := flagLine.FindStringSubmatch(l); m != nil {
			seen[m[1]] = append(seen[m[1]], section)
		}
	}

	cmd, _, err := testRoot().Find([]string{"sandbox"})
	require.NoError(t, err)
	cmd.InitDefaultHelpFlag() // as cobra's execute does
	groups := flagGroups["etl sandbox"]
	var headings []string
	for _, g := range groups {
		headings = append(headings, g.heading)
		for _, name := range g.flags {
			require.NotNil(t, cmd.LocalFlags().Lookup(name), "flagGroups names --%s, which etl sandbox does not have", name)
			require.Equal(t, []string{g.heading}, seen[name], "--%s is printed once, under %q", name, g.heading)
		}
	}
	require.Equal(t, []string{"Data API flags", "Fault flags", "Token service flags", "Listing endpoint flags"}, headings)
	pos := -1
	for _, h := range headings {
		i := strings.Index(usage, "\n"+h+":\n")
		require.Greater(t, i, pos, "%q, in order", h)
		pos = i
	}
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			require.Equal(t, []string{"Flags"}, seen[f.Name])
			return
		}
		require.Len(t, seen[f.Name], 1, "--%s is printed exactly once", f.Name)
		require.NotEqual(t, "Flags", seen[f.Name][0], "--%s belongs in a group of flagGroups (help.go)", f.Name)
	})
	require.Len(t, seen, countFlags(cmd.LocalFlags()), "no other flag above Global Flags")
}

func countFlags(fs *pflag.FlagSet) int {
	n := 0
	fs.VisitAll(func(*pflag.Flag) { n++ })
	return n
}
