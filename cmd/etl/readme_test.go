package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/sandbox"
)

// summaryDuration is the one figure of a run's summary that changes from run
// to run.
var summaryDuration = regexp.MustCompile(`(API units), [0-9.]+(ns|µs|ms|s|m[0-9.]*s|h[0-9.m]*s)$`)

// summaryOf is a run's summary line and table of loads, up to the first
// blank line, the duration normalised.
func summaryOf(t *testing.T, text string) []string {
	t.Helper()
	_, after, ok := strings.Cut(text, "job example:")
	require.True(t, ok, "a summary of the job example in:\n%s", text)
	block, _, _ := strings.Cut("job example:"+after, "\n\n")
	lines := strings.Split(block, "\n")
	lines[0] = summaryDuration.ReplaceAllString(lines[0], "$1, DURATION")
	return lines
}

// TestDocsREADMEWorkedExample: the output the README shows for make run
// is what the example job of jobs.yaml loads, so it cannot go stale.
func TestDocsREADMEWorkedExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, shown, ok := strings.Cut(string(readme), "```console\n$ make run\n...\n")
	require.True(t, ok, "the README shows `$ make run` in a console block")
	want := summaryOf(t, shown)

	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	r := etl(t, env, "local", "run", "--dir", t.TempDir(), "--jobs", "../../jobs.yaml", "--job", "example", "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, want, summaryOf(t, r.stdout), "the README's worked example (make run) against what the example job loads")
}

// readmeBlock is a fenced code block of the README meant for a shell
// (sh or console): the number of its opening line, and its lines.
type readmeBlock struct {
	line  int
	lang  string
	lines []string
}

// readmeBlocks returns the README's sh and console blocks, in order.
func readmeBlocks(t *testing.T, text string) []readmeBlock {
	t.Helper()
	var blocks []readmeBlock
	var in *readmeBlock
	fenced := false
	for i, l := range strings.Split(text, "\n") {
		switch {
		case !fenced && strings.HasPrefix(l, "```"):
			fenced = true
			if lang := strings.TrimSpace(strings.TrimPrefix(l, "```")); lang == "sh" || lang == "console" {
				in = &readmeBlock{line: i + 1, lang: lang}
			}
		case fenced && strings.TrimSpace(l) == "```":
			fenced = false
			if in != nil {
				blocks = append(blocks, *in)
			}
			in = nil
		case in != nil:
			in.lines = append(in.lines, l)
		}
	}
	require.False(t, fenced, "a fenced block of the README is not closed")
	return blocks
}

// readmeCommand is a command of a README block: its line number, the
// command without its comment, and in a console block the output shown
// after it.
type readmeCommand struct {
	line  int
	cmd   string
	shown []string
}

// commands returns the commands of b: in an sh block every line that is
// not blank or a comment (a line ending in \ goes on on the next), in a
// console block the lines after "$ ", each with the lines up to the next.
func (b readmeBlock) commands() []readmeCommand {
	var out []readmeCommand
	for i := 0; i < len(b.lines); i++ {
		l := b.lines[i]
		if b.lang == "console" {
			if cmd, ok := strings.CutPrefix(l, "$ "); ok {
				out = append(out, readmeCommand{line: b.line + 1 + i, cmd: cmd})
			} else if len(out) > 0 {
				out[len(out)-1].shown = append(out[len(out)-1].shown, l)
			}
			continue
		}
		at := b.line + 1 + i
		for strings.HasSuffix(l, `\`) && i+1 < len(b.lines) {
			i++
			l = strings.TrimSuffix(l, `\`) + b.lines[i]
		}
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		out = append(out, readmeCommand{line: at, cmd: l})
	}
	return out
}

// oneCommand is line without its comment and the blanks around it; an
// error when it holds more than one command (an unquoted | & ; ( ) < >)
// or an expansion ($ or `) but the one eval of etl local env.
func oneCommand(line string) (string, error) {
	const eval = `eval "$(etl local env)"`
	line = strings.TrimSpace(line)
	if rest, ok := strings.CutPrefix(line, eval); ok {
		if rest = strings.TrimSpace(rest); rest == "" || rest[0] == '#' {
			return eval, nil
		}
	}
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case c == '$' || c == '`':
			return "", fmt.Errorf("an expansion (%c): this test cannot know its value", c)
		case quote == '"':
			if c == '\\' {
				i++
			} else if c == '"' {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			i++
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimSpace(line[:i]), nil
		case strings.IndexByte("|&;()<>", c) >= 0:
			return "", fmt.Errorf("more than one command (%c): write one a line", c)
		}
	}
	if quote != 0 {
		return "", fmt.Errorf("an unterminated %c", quote)
	}
	return line, nil
}

// readmeNotRun are the README's commands that TestDocsREADMERunsAsWritten
// does not run, and why.
var readmeNotRun = map[string]string{
	"make test": "the test suite itself",
	"TEST_DATABASE_URL=postgres://... make test": "the test suite itself, on a server of your own",
	"make test-citus": "the Citus suite: needs Citus installed by hand, which no registry here serves",
	"make bench":      "the benchmarks: measured, minutes long, not tested",
	"make bench-go":   "the Go benchmarks: measured, minutes long, not tested",
}

// makeTargets are the etl commands of the Makefile's targets that the
// README runs (the test checks that the Makefile runs them so); make psql
// adds -- -c SQL when SQL is set.
var makeTargets = map[string][]string{
	"run":  {"local", "run", "--jobs", "jobs.yaml", "--job", "example"},
	"psql": {"local", "psql"},
	"up":   {"local", "up"},
	"down": {"local", "down"},
}

// TestDocsREADMERunsAsWritten runs every command of the README's sh and
// console blocks from the README's own text, in order, in a checkout of
// its own in a private folder, each block as in a new shell: the make
// targets as the Makefile runs them (on the test's local warehouse), eval
// "$(etl local env)", exports, and etl commands, each of which must exit
// 0; make psql must print what the README shows. The exports of the block
// for the real API and your own PostgreSQL set, instead of the README's
// placeholders, the values of a stand-in: a database of the test cluster
// and a sandbox that approves a sign-in at once. A line the test cannot
// run fails it, unless readmeNotRun names it.
func TestDocsREADMERunsAsWritten(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	makefile, err := os.ReadFile("../../Makefile")
	require.NoError(t, err)
	for target, args := range makeTargets {
		require.Contains(t, string(makefile), "\n"+target+":", "the Makefile has a target %s", target)
		require.Contains(t, string(makefile), "$(BIN)/etl "+strings.Join(args, " "), "make %s runs etl %s", target, strings.Join(args, " "))
	}

	local, _, _ := localFor(t)
	const jobs = "../../jobs.yaml" // the checkout's jobs.yaml, from this package's folder
	// The stand-in for the real API and your own PostgreSQL, made when an
	// export first asks for it.
	var standIn map[string]string
	stand := func() map[string]string {
		if standIn == nil {
			sb, err := sandbox.New(sandbox.Config{APIKeys: []string{"readme-key"}, DeviceAutoApprove: 1, DeviceInterval: time.Second})
			require.NoError(t, err)
			srv := httptest.NewServer(sb.Handler())
			t.Cleanup(srv.Close)
			_, key, err := auth.NewKey()
			require.NoError(t, err)
			standIn = map[string]string{"DATABASE_URL": pgtest.NewDB(t), "ETL_API_URL": srv.URL, "ETL_API_KEY": "readme-key", "ETL_SECRET_KEY": key}
		}
		return standIn
	}

	ran := map[string]int{}
	for _, b := range readmeBlocks(t, string(readme)) {
		env := map[string]string{} // a new shell
		for _, c := range b.commands() {
			where := fmt.Sprintf("README.md:%d: %s", c.line, c.cmd)
			cmd, err := oneCommand(c.cmd)
			require.NoError(t, err, where)
			if _, ok := readmeNotRun[cmd]; ok {
				continue
			}
			var r result
			switch {
			case cmd == `eval "$(etl local env)"`:
				r = etl(t, nil, local("env")...)
				require.Equal(t, exitOK, r.code, "%s\n%s", where, r.stderr)
				env = exports(t, r.stdout)
				ran["eval"]++
				continue
			case strings.HasPrefix(cmd, "export "):
				name, _, ok := strings.Cut(strings.TrimPrefix(cmd, "export "), "=")
				require.True(t, ok, "%s: export NAME=VALUE", where)
				v, ok := stand()[name]
				require.True(t, ok, "%s: the stand-in has no %s", where, name)
				env[name] = v
				ran["export"]++
				continue
			}
			words, err := shellWords(cmd)
			require.NoError(t, err, where)
			require.NotEmpty(t, words, where)
			for i, w := range words {
				if w == "jobs.yaml" {
					words[i] = jobs
				}
			}
			switch words[0] {
			case "make":
				require.GreaterOrEqual(t, len(words), 2, where)
				args, ok := makeTargets[words[1]]
				require.True(t, ok, "%s: a make target this test cannot run (makeTargets, or readmeNotRun)", where)
				args = slices.Clone(args[1:]) // after "local"
				for i, a := range args {
					if a == "jobs.yaml" {
						args[i] = jobs
					}
				}
				switch words[1] {
				case "run":
					// The clock of the worked example, so that make psql
					// prints what the README shows.
					args = append(args, "--now", cliNow.Format(time.RFC3339))
				case "up":
					args = append(args, "--jobs", jobs) // the checkout's, as make up in it reads
				}
				for _, v := range words[2:] {
					sql, ok := strings.CutPrefix(v, "SQL=")
					require.True(t, ok && words[1] == "psql", "%s: make %s takes no %s", where, words[1], v)
					args = append(args, "--", "-c", sql)
				}
				r = etl(t, nil, local(args...)...)
				ran["make "+words[1]]++
			case "etl":
				r = etl(t, env, words[1:]...)
				ran["etl"]++
			default:
				t.Fatalf("%s: a command this test cannot run (teach it, or name it in readmeNotRun)", where)
			}
			require.Equal(t, exitOK, r.code, "%s\n%s%s", where, r.stdout, r.stderr)
			if len(c.shown) > 0 && words[0] == "make" && words[1] == "psql" {
				// What psql prints, but its row count and the blanks that
				// end a line (an editor drops them).
				got := strings.Split(r.stdout, "\n")
				for i := range got {
					got[i] = strings.TrimRight(got[i], " ")
				}
				require.GreaterOrEqual(t, len(got), len(c.shown), "%s prints what the README shows:\n%s", where, r.stdout)
				require.Equal(t, c.shown, got[:len(c.shown)], "%s prints what the README shows", where)
			}
		}
	}
	// The README's first page has these, and this test ran them.
	for _, what := range []string{"make run", "make psql", "make up", "eval", "make down", "export", "etl"} {
		require.Positive(t, ran[what], "the README runs %s", what)
	}
}

func TestDocsREADMEOneCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, want, err string }{
		{"etl runs", "etl runs", ""},
		{"make up      # start it", "make up", ""},
		{`make psql SQL="SELECT '#1' AS x" # a comment`, `make psql SQL="SELECT '#1' AS x"`, ""},
		{`eval "$(etl local env)"   # export it`, `eval "$(etl local env)"`, ""},
		{"export ETL_API_KEY=...   # never logged", "export ETL_API_KEY=...", ""},
		{"make up && etl runs", "", "more than one command"},
		{"etl runs | head", "", "more than one command"},
		{"etl run --job $JOB", "", "an expansion"},
		{`eval "$(etl local env)"; etl runs`, "", "an expansion"},
		{"etl run --job 'x", "", "unterminated"},
	} {
		got, err := oneCommand(tc.line)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.line)
			continue
		}
		require.NoError(t, err, tc.line)
		require.Equal(t, tc.want, got)
	}
}
