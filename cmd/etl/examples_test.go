package main

import (
	"errors"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/redact"
	"github.com/seoetl/etl/progress"
)

// testRoot is the command tree as run builds it, for tests that walk it.
func testRoot() *cobra.Command {
	e := &env{getenv: func(string) string { return "" }, stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard,
		logOut: progress.NewLogWriter(io.Discard), redact: redact.New()}
	return newRoot(e)
}

// helpCommands are the commands of the tree under c that --help shows
// (not the hidden ones, nor help topics such as exit-codes).
func helpCommands(c *cobra.Command) []*cobra.Command {
	var cmds []*cobra.Command
	if !c.Hidden && !c.IsAdditionalHelpTopicCommand() {
		cmds = append(cmds, c)
	}
	for _, sub := range c.Commands() {
		cmds = append(cmds, helpCommands(sub)...)
	}
	return cmds
}

// TestEveryCommandHasExamples: every command's --help ends with two or
// three examples, and every entry of the table of examples names a
// command of the tree, but those pending a merge.
func TestEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	root := testRoot()
	inTree := map[string]bool{}
	for _, c := range helpCommands(root) {
		path := c.CommandPath()
		inTree[path] = true
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			ex := examples[path]
			require.GreaterOrEqual(t, len(ex), 2, "%s has two or three examples in the table examples (examples.go)", path)
			require.LessOrEqual(t, len(ex), 3, "%s: at most three examples", path)
			require.Equal(t, formatExamples(ex), c.Example, "%s: examples come from the table in examples.go, not the command's Example field, so that TestExamplesParse checks them", path)
			args := append(strings.Fields(path)[1:], "--help")
			r := etl(t, nil, args...)
			require.Equal(t, exitOK, r.code, r.stderr)
			require.True(t, strings.HasSuffix(r.stdout, "\n\nExamples:\n"+formatExamples(ex)+"\n"), "%s --help ends with its examples:\n%s", path, r.stdout)
			require.Equal(t, 1, strings.Count(r.stdout, "\nExamples:\n"))
		})
	}
	var stray []string
	for path := range examples {
		if !inTree[path] && !pendingExamples[path] {
			stray = append(stray, path)
		}
	}
	sort.Strings(stray)
	require.Empty(t, stray, "entries of examples naming no command (a command renamed or removed?)")
	for path := range pendingExamples {
		_, ok := examples[path]
		require.True(t, ok, "pendingExamples names %s, which has no examples", path)
	}
}

// TestExamplesParse: every example is a line a POSIX shell (bash) reads
// as written, and every etl command in it is one of the tree's commands
// with flags it has (none hidden), the arguments it takes and its required
// flags; each command's examples run that command (or one under it).
func TestExamplesParse(t *testing.T) {
	t.Parallel()
	bash, _ := exec.LookPath("bash")
	for path, ex := range examples {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			own := false
			for _, e := range ex {
				require.NotEmpty(t, e.about)
				require.NotContains(t, e.about+e.line, "\n", "one line each")
				if bash != "" {
					out, err := exec.CommandContext(t.Context(), bash, "-n", "-c", e.line).CombinedOutput()
					require.NoError(t, err, "bash -n -c %q: %s", e.line, out)
				}
				calls, err := etlInvocations(e.line)
				require.NoError(t, err, e.line)
				require.NotEmpty(t, calls, "%q runs etl", e.line)
				for _, args := range calls {
					cmd, err := checkInvocation(args)
					if err != nil && pendingExamples[path] {
						t.Logf("%s: pending: %v", e.line, err)
						own = true
						continue
					}
					require.NoError(t, err, e.line)
					if p := cmd.CommandPath(); p == path || strings.HasPrefix(p, path+" ") {
						own = true
					}
				}
			}
			require.True(t, own, "an example of %s runs it", path)
		})
	}
}

// checkInvocation parses args, an etl command line without the "etl", as
// cobra would, without running anything, and returns its command.
func checkInvocation(args []string) (*cobra.Command, error) {
	root := testRoot()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return nil, err
	}
	cmd.InitDefaultHelpFlag() // as cobra's execute does
	cmd.InitDefaultVersionFlag()
	if cmd.Hidden {
		return nil, errors.New(cmd.CommandPath() + " is hidden")
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return nil, err
	}
	var bad []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return nil, errors.New(cmd.CommandPath() + ": hidden or deprecated flags " + strings.Join(bad, ", "))
	}
	if help, _ := cmd.Flags().GetBool("help"); help {
		return cmd, nil
	}
	pos := cmd.Flags().Args()
	if !cmd.Runnable() && len(pos) > 0 {
		return nil, errors.New(cmd.CommandPath() + " has no command " + pos[0])
	}
	if err := cmd.ValidateArgs(pos); err != nil {
		return nil, err
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return nil, err
	}
	return cmd, cmd.ValidateFlagGroups()
}

// etlInvocations returns the arguments (after "etl") of every etl command
// in a shell line: an etl at the start of a command (after nothing, a
// blank, "(", ";", "&" or "|") up to the end of that command. Arguments
// are quoted as a POSIX shell quotes them; an expansion ($) in one is an
// error, as the test cannot know its value.
func etlInvocations(line string) ([][]string, error) {
	var calls [][]string
	for i := 0; i+3 <= len(line); i++ {
		if line[i:i+3] != "etl" || (i > 0 && !strings.ContainsRune(" \t(;&|", rune(line[i-1]))) ||
			(i+3 < len(line) && line[i+3] != ' ') {
			continue
		}
		args, err := shellWords(line[i+3:])
		if err != nil {
			return nil, err
		}
		calls = append(calls, args)
	}
	return calls, nil
}

// shellWords splits s into words as a POSIX shell does, up to the end of
// the simple command: an unquoted | & ; ( ) < > or #.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, w.String())
		}
		w.Reset()
		inWord = false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t':
			end()
		case strings.IndexByte("|&;()<>", c) >= 0 || (c == '#' && !inWord):
			end()
			return words, nil
		case c == '$' || c == '`':
			return nil, errors.New("an expansion in the arguments of etl: " + s)
		case c == '\\':
			if i+1 < len(s) {
				i++
				w.WriteByte(s[i])
			}
			inWord = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' in " + s)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += 1 + j
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch {
				case s[i] == '$' || s[i] == '`':
					return nil, errors.New("an expansion in the arguments of etl: " + s)
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0:
					i++
				}
				w.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, errors.New(`unterminated " in ` + s)
			}
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	end()
	return words, nil
}

func TestExampleShellWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, line string
		want       [][]string
		err        string
	}{
		{"plain", "etl run --job example", [][]string{{"run", "--job", "example"}}, ""},
		{"quotes", `etl sandbox --faults '503=0.02,cut=0.01' --api-key "a b" x\ y`, [][]string{{"sandbox", "--faults", "503=0.02,cut=0.01", "--api-key", "a b", "x y"}}, ""},
		{"and", "etl local up && etl runs", [][]string{{"local", "up"}, {"runs"}}, ""},
		{"substitution", `eval "$(etl local env)"`, [][]string{{"local", "env"}}, ""},
		{"process substitution", `source <(etl completion bash)`, [][]string{{"completion", "bash"}}, ""},
		{"pipe and redirect", `etl runs show 12 --json | jq '.x' > out`, [][]string{{"runs", "show", "12", "--json"}}, ""},
		{"not a command", `etl completion zsh > "${fpath[1]}/_etl"`, [][]string{{"completion", "zsh"}}, ""},
		{"expansion", `etl run --job "$JOB"`, nil, "an expansion"},
		{"unterminated", `etl run --job 'x`, nil, "unterminated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := etlInvocations(tc.line)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestExampleCheckCatchesMistakes: the check of examples fails on an
// unknown flag, a hidden one, a missing argument or required flag, and an
// unknown subcommand.
func TestExampleCheckCatchesMistakes(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"run", "--nope"}, {"plan", "--now", "2026-01-01"}, {"runs", "show"}, {"migrate", "force"}, {"listings", "pul", "--account", "a"},
	} {
		_, err := checkInvocation(args)
		require.Error(t, err, strings.Join(args, " "))
	}
	cmd, err := checkInvocation([]string{"runs", "show", "12", "--json"})
	require.NoError(t, err)
	require.Equal(t, "etl runs show", cmd.CommandPath())
}
