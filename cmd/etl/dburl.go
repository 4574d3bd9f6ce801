package main

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/internal/redact"
)

// minPiece is the shortest piece of a password that dbSecrets returns on
// its own (the whole password is returned whatever its length): masking one
// or two letters everywhere would garble every line and hide next to
// nothing.
const minPiece = 3

// passwordValue finds the password of a keyword/value connection string
// (password=..., quoted or not) and of a URL's query (?password=...):
// group 1 is a quoted value, unterminated included, group 2 a bare one.
var passwordValue = regexp.MustCompile(`(?i)password\s*=\s*(?:'((?:[^'\\]|\\.)*)'?|(\S*))`)

// dbSecrets returns what may be the password, or part of it, in the
// warehouse connection string conn, parsed or not: in a URL, everything
// between "://" and the last '@' after the user name (a '@' in the query
// makes that take in more than the password: better more than less);
// every password= value (to the next '&' in a URL); their URL-decoded
// forms; every piece of those between ':', '@', '/', '?', '#', quotes and
// spaces; and any broken %-escape in them, which net/url quotes.
func dbSecrets(conn string) []string {
	var out []string
	add := func(s string, whole bool) {
		if s != "" && (whole || len(s) >= minPiece) {
			out = append(out, s)
		}
	}
	password := func(pw string) {
		forms := []string{pw}
		if s, err := url.PathUnescape(pw); err == nil {
			forms = append(forms, s)
		}
		if s, err := url.QueryUnescape(pw); err == nil {
			forms = append(forms, s)
		}
		for _, f := range forms {
			add(f, true)
			for _, piece := range strings.FieldsFunc(f, func(r rune) bool {
				return strings.ContainsRune(`:@/?#'"`, r) || unicode.IsSpace(r)
			}) {
				add(piece, false)
			}
		}
		for i := strings.IndexByte(pw, '%'); i >= 0; i = strings.IndexByte(pw, '%') {
			esc := pw[i:min(i+3, len(pw))]
			if _, err := url.PathUnescape(esc); err != nil {
				add(esc, true)
			}
			pw = pw[i+1:]
		}
	}
	if _, rest, ok := strings.Cut(conn, "://"); ok {
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			userinfo := rest[:at]
			// The user name, up to the first ':' or '@', is no secret
			// (pgx names it in its errors); the rest is the password.
			if i := strings.IndexAny(userinfo, ":@"); i >= 0 {
				password(userinfo[i+1:])
			}
		}
	}
	isURL := strings.Contains(conn, "://")
	for _, m := range passwordValue.FindAllStringSubmatch(conn, -1) {
		if m[1] != "" {
			password(m[1])
			password(strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(m[1]))
			continue
		}
		pw := m[2]
		if isURL { // a URL's query goes on after '&'
			pw, _, _ = strings.Cut(pw, "&")
		}
		password(pw)
	}
	return out
}

// processSecrets returns the secrets of conn that the process masks in all
// it prints (dbError masks all of dbSecrets in the errors about conn).
// When conn parses, pgx holds its password and never quotes it, so a
// password shorter than redact.MinSecretLen is left out: masking "etl"
// (docker-compose's default, also the user, the database and the
// program) wherever it appears would garble every line and hide nothing.
// A malformed conn may be quoted in part (a piece of its password taken
// for a host or a database name): then every piece is masked.
func processSecrets(conn string) []string {
	secrets := dbSecrets(conn)
	if _, err := pgconn.ParseConfig(conn); err != nil {
		return secrets
	}
	var long []string
	for _, s := range secrets {
		if len(s) >= redact.MinSecretLen {
			long = append(long, s)
		}
	}
	return long
}

// dbError returns err, from parsing or connecting to the warehouse at
// conn, with no part of conn's password in its message; errors.Is and
// errors.As still see the original chain.
func dbError(conn string, err error) error {
	return redact.New().With(dbSecrets(conn)...).Error(err)
}

// parseDB parses the warehouse connection string dbURL; its errors hold
// no part of the password.
func parseDB(dbURL string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, usageError(fmt.Errorf("database URL: %w", dbError(dbURL, err)))
	}
	hosts := []string{cfg.ConnConfig.Host}
	for _, fb := range cfg.ConnConfig.Fallbacks {
		hosts = append(hosts, fb.Host)
	}
	for _, h := range hosts {
		if strings.ContainsRune(h, '@') {
			// "postgres://u:p@ss@host": pgx took "ss@host" for the host.
			return nil, usageError(errors.New("database URL: its host holds an '@', so part of the password was likely taken for the host: " +
				"percent-encode '@' as %40, ':' as %3A and '/' as %2F in the user name and password"))
		}
	}
	return cfg, nil
}

// poolMaxConnsSet reports whether the connection string dbURL sets
// pool_max_conns (pgxpool's bound on its connections, which it parses):
// in a URL's query, or as a keyword of a keyword/value string.
func poolMaxConnsSet(dbURL string) bool {
	if u, err := url.Parse(dbURL); err == nil && u.Scheme != "" {
		return u.Query().Has("pool_max_conns")
	}
	return poolMaxConnsKeyword.MatchString(dbURL)
}

var poolMaxConnsKeyword = regexp.MustCompile(`(^|\s)pool_max_conns\s*=`)
