package main

import (
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDatabaseURLPasswordNeverShows runs the commands that connect to the
// warehouse with malformed connection strings (a password with an
// unescaped ':', '/', '@', '#' or '%', an unterminated quote) and checks
// that no part of the password is printed, whichever of pgx, net/url or
// golang-migrate reports the problem.
func TestDatabaseURLPasswordNeverShows(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	jobs := writeSpec(t, cliSpec)

	// Every password has the pieces Sup3r and Secr3t.
	urls := map[string]string{
		"colon":           "postgres://etl:Sup3r:Secr3t@" + addr + "/etl?sslmode=disable",
		"slash":           "postgres://etl:Sup3r/Secr3t@" + addr + "/etl?sslmode=disable",
		"at":              "postgres://etl:Sup3r@Secr3t@" + addr + "/etl?sslmode=disable",
		"hash":            "postgres://etl:Sup3r#Secr3t@" + addr + "/etl?sslmode=disable",
		"bad escape":      "postgres://etl:Sup3r%zzSecr3t@" + addr + "/etl?sslmode=disable",
		"numeric pieces":  "postgres://etl:Sup3r:4711/Secr3t@" + addr + "/etl",
		"query password":  "postgres://etl@" + addr + "/etl?sslmode=disable&password=Sup3r%20Secr3t&connect_timeout=x",
		"keyword/value":   "host=127.0.0.1 port=" + port + " user=etl password='Sup3r Secr3t dbname=etl sslmode=disable",
		"keyword/value 2": "host=127.0.0.1 port=" + port + " user=etl password=Sup3r:Secr3t dbname=etl connect_timeout=x",
	}
	commands := map[string][]string{
		"runs":       {"runs"},
		"budget":     {"budget", "--jobs", jobs},
		"run":        {"run", "--jobs", jobs, "--job", "one"},
		"migrate up": {"migrate", "up"},
	}
	for name, url := range urls {
		for cmd, args := range commands {
			for _, how := range []string{"env", "flag"} {
				t.Run(name+"/"+cmd+"/"+how, func(t *testing.T) {
					t.Parallel()
					env := map[string]string{"ETL_API_URL": "http://127.0.0.1:1", "ETL_API_KEY": "sk-dburl-test-key"}
					args := args
					if how == "env" {
						env["DATABASE_URL"] = url
					} else {
						args = append(append([]string(nil), args...), "--database-url", url)
					}
					r := etl(t, env, append([]string{"--log-level", "debug"}, args...)...)
					require.NotEqual(t, exitOK, r.code, r.stdout+r.stderr)
					out := r.stdout + r.stderr
					for _, piece := range []string{"Sup3r", "Secr3t", "4711", "%zz"} {
						require.NotContains(t, out, piece)
					}
					require.NotContains(t, strings.ToLower(out), "secr3t")
				})
			}
		}
	}
}

func TestDBSecrets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, conn string
		want       []string // among the secrets
		not        []string // not among them
	}{
		{"plain", "postgres://etl:hunter2@db:5432/etl", []string{"hunter2"}, []string{"etl", "db"}},
		{"no password", "postgres://etl@db/etl", nil, []string{"etl"}},
		{"colons", "postgres://etl:Sup3r:Secr3t@db/etl", []string{"Sup3r:Secr3t", "Sup3r", "Secr3t"}, []string{"etl"}},
		{"at", "postgres://etl:Sup3r@Secr3t@db/etl", []string{"Sup3r@Secr3t", "Sup3r", "Secr3t"}, []string{"db"}},
		{"escaped", "postgres://etl:Sup3r%40Secr3t@db/etl", []string{"Sup3r%40Secr3t", "Sup3r@Secr3t", "Sup3r", "Secr3t"}, nil},
		{"broken escape", "postgres://etl:ab%zzcd@db/etl", []string{"ab%zzcd", "%zz"}, nil},
		{"short pieces", "postgres://etl:ab:cdefg@db/etl", []string{"ab:cdefg", "cdefg"}, []string{"ab"}},
		{"query", "postgres://etl@db/etl?password=Sup3r%20Secr3t&sslmode=disable", []string{"Sup3r%20Secr3t", "Sup3r Secr3t", "Sup3r", "Secr3t"}, []string{"sslmode=disable"}},
		{"keyword/value", "host=db password=Sup3r&Secr3t user=etl", []string{"Sup3r&Secr3t"}, []string{"etl", "db"}},
		{"quoted", `host=db password='Sup3r \'Secr3t' user=etl`, []string{`Sup3r \'Secr3t`, "Sup3r 'Secr3t", "Sup3r", "Secr3t"}, []string{"etl"}},
		{"unterminated", "host=db password='Sup3r Secr3t user=etl", []string{"Sup3r", "Secr3t"}, nil},
		{"sslpassword", "host=db sslpassword=Sup3rSecr3t", []string{"Sup3rSecr3t"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := dbSecrets(tc.conn)
			for _, w := range tc.want {
				require.Contains(t, got, w)
			}
			for _, n := range tc.not {
				require.NotContains(t, got, n)
			}
		})
	}
}

// TestAShortPasswordDoesNotGarbleTheOutput: with the docker-compose
// default, postgres://etl:etl@.../etl, the password is also the user
// name, the database name and the program's name. A well-formed URL
// hands its password to pgx, whose errors never quote it, so a password
// shorter than redact.MinSecretLen is not masked everywhere: the errors
// name the user and the database, and the messages name `etl run`.
// Before, every "etl" printed was [REDACTED] ("failed to connect to
// `user=[REDACTED] database=[REDACTED]`", "the next `[REDACTED] run`").
// A malformed URL, which pgx may quote, still has every piece masked (see
// TestDatabaseURLPasswordNeverShows), and so has a long password.
func TestAShortPasswordDoesNotGarbleTheOutput(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	r := etl(t, map[string]string{"DATABASE_URL": "postgres://etl:etl@" + addr + "/etl?sslmode=disable"}, "runs")
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "user=etl database=etl")
	require.NotContains(t, r.stderr, "[REDACTED]")

	for _, s := range []string{"etl", "hunter2"} {
		require.NotContains(t, processSecrets("postgres://etl:"+s+"@db/etl"), s, "well-formed and short")
	}
	require.Contains(t, processSecrets("postgres://etl:hunter2hunter2@db/etl"), "hunter2hunter2")
	require.Contains(t, processSecrets("postgres://etl:Sup3r:Secr3t@db:x/etl"), "Sup3r", "malformed: every piece")
}
