package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// requireTerminalSafe fails when out holds a character that is not
// graphic (a control character, an escape sequence's start, a
// right-to-left override U+202E) other than the newlines between lines,
// or, unless it is JSON (which shows every value whole), a line longer
// than 1,000 bytes.
func requireTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	maxLine := 1000
	if strings.HasPrefix(out, "{") {
		maxLine = len(out)
	}
	for i, line := range strings.Split(out, "\n") {
		require.LessOrEqual(t, len(line), maxLine, "%s: line %d is %d bytes: %.200s...", what, i+1, len(line), line)
		require.False(t, strings.ContainsFunc(line, func(r rune) bool { return r != ' ' && !unicode.IsGraphic(r) }),
			"%s: line %d holds a character that is not graphic: %q", what, i+1, line)
	}
}

// TestListingsOutputsAreTerminalSafe: values of the user's table and of
// the provider (names pushed with a right-to-left override and an escape
// sequence, then pulled back; an address of 5,000 characters; a phone of
// 3,000 digits that the refusal's reason quotes) reach every listing
// output (the dry run, the push, the pull, status, the undo's dry run and
// the undo, each as text and as --json) escaped, and no line of text grows
// with them. Before, --json printed U+202E as it is (encoding/json escapes
// control characters below U+0020 only), which reverses the rest of the
// line in a terminal, and a long value made a line of its length.
func TestListingsOutputsAreTerminalSafe(t *testing.T) {
	t.Parallel()
	const account = "x-n5"
	w := newPushWorld(t, account)
	ctx := t.Context()
	ids := w.desiredIDs(t)
	require.GreaterOrEqual(t, len(ids), 3)
	_, err := w.pool.Exec(ctx, `UPDATE desired SET location_name = 'Evil ' || chr(8238) || 'gnirts' || chr(27) || '[2J ' || id, city = 'Köln' || chr(8238) || 'x'`)
	require.NoError(t, err)
	_, err = w.pool.Exec(ctx, `UPDATE desired SET address = repeat('A', 5000) WHERE id = $1`, ids[0])
	require.NoError(t, err)
	_, err = w.pool.Exec(ctx, `UPDATE desired SET phone = '+' || repeat('1', 3000) WHERE id = $1`, ids[1])
	require.NoError(t, err)

	// check runs a command that changes nothing, as text and as --json.
	check := func(args ...string) {
		t.Helper()
		for _, a := range [][]string{args, append(append([]string{}, args...), "--json")} {
			r := etl(t, w.env, a...)
			require.NotEqual(t, exitFailed, r.code, "%v: %s%s", a, r.stdout, r.stderr)
			requireTerminalSafe(t, strings.Join(a, " ")+" (stdout)", r.stdout)
			requireTerminalSafe(t, strings.Join(a, " ")+" (stderr)", r.stderr)
		}
	}
	check("listings", "push", "--account", account, "--from", "desired", "--dry-run")
	r := etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	requireTerminalSafe(t, "push", r.stdout+r.stderr)
	check("listings", "pull", "--account", account)
	check("listings", "status", "--account", account)
	check("listings", "undo", "--account", account, "--push", "1", "--dry-run")
	r = etl(t, w.env, "listings", "undo", "--account", account, "--push", "1", "--json")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	requireTerminalSafe(t, "undo --json", r.stdout+r.stderr)
	check("listings", "status", "--account", account)
}

// TestListingsPullProviderErrorIsEscaped: a provider answering a pull
// with an error whose code and message hold an escape sequence, a newline
// and a right-to-left override: etl listings pull prints its FAILED line
// and its last line (etl: ...) escaped. They showed the provider's words
// as they came, which cleared the screen and forged a line.
func TestListingsPullProviderErrorIsEscaped(t *testing.T) {
	t.Parallel()
	const account = "x-n5"
	w := newPushWorld(t, account)
	w.setMW(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if !strings.Contains(r.URL.Path, "/locations") {
				next.ServeHTTP(rw, r)
				return
			}
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusBadRequest)
			_, _ = rw.Write([]byte(`{"error":{"code":"BAD\u001b[2J","message":"Evil\u001b[2J\nFORGED \u202e x","details":[]},"requestId":"r"}`))
		})
	})
	r := etl(t, w.env, "listings", "pull", "--account", account)
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, `Get locations: HTTP 400: BAD\x1b[2J: Evil\x1b[2J\nFORGED \u202e x [request r]`)
	requireTerminalSafe(t, "pull (stdout)", r.stdout)
	requireTerminalSafe(t, "pull (stderr)", r.stderr)
}

// TestListingsOutputsEscapeProviderText: what the provider says of a
// FAILED item (its code, detail, field and message) and the name of the
// relation are data too: push and status print their control characters
// and newlines escaped, so that they can neither clear the screen nor
// forge a line of their own.
func TestListingsOutputsEscapeProviderText(t *testing.T) {
	t.Parallel()
	const account = "x-n5"
	w := newPushWorld(t, account)
	ctx := t.Context()
	const evil = "Evil\x1b[2J\nFORGED: UPDATED"
	w.setMW(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/locations") {
				next.ServeHTTP(rw, r)
				return
			}
			var req struct {
				Locations []struct {
					ID string `json:"id"`
				} `json:"locations"`
			}
			require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
			type item struct {
				LocationID string `json:"locationId"`
				State      string `json:"state"`
				Error      any    `json:"error"`
			}
			var items []item
			for _, l := range req.Locations {
				items = append(items, item{l.ID, "FAILED", map[string]any{"code": "BAD\x1b[31m", "message": evil,
					"details": []map[string]string{{"code": "D\nFORGED", "message": evil, "field": "locationName\x1b[2J"}}}})
			}
			rw.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(rw).Encode(map[string]any{"data": items, "requestId": "r1"})
		})
	})
	_, err := w.pool.Exec(ctx, `ALTER TABLE desired RENAME TO "desired`+"\x1b[2J\nX"+`"`)
	require.NoError(t, err)
	_, err = w.pool.Exec(ctx, `UPDATE "desired`+"\x1b[2J\nX"+`" SET location_name = 'Renamed ' || id`)
	require.NoError(t, err)
	from := `"desired` + "\x1b[2J\nX" + `"`

	for _, args := range [][]string{
		{"listings", "push", "--account", account, "--from", from, "--dry-run"},
		{"listings", "push", "--account", account, "--from", from},
		{"listings", "status", "--account", account},
	} {
		r := etl(t, w.env, args...)
		require.NotContains(t, r.stdout, "\x1b", args)
		require.NotContains(t, r.stdout, "\nFORGED", args)
		require.NotContains(t, r.stdout, "\nX", args)
		if args[1] != "status" {
			require.Contains(t, r.stdout, `desired\x1b[2J\nX`, args)
		}
		if args[1] == "status" {
			require.Contains(t, r.stdout, `Evil\x1b[2J\nFORGED: UPDATED`)
		}
	}
}
