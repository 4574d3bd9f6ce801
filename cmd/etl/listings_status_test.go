package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListingsStatusAtAgencyScale: an account of 1,500 locations, a push
// that leaves 302 refused (300 phones without the international code, 2
// cities left empty). etl listings status fits a screen: the locations
// as pulled by status, the last push, the pending ones by state and by
// code, then the ten that matter, each with its name and city; --all
// lists all 302, --state and --location those that match. It listed all
// 302, one line each, after one line of totals.
func TestListingsStatusAtAgencyScale(t *testing.T) {
	t.Parallel()
	const account = "x-n1500"
	w := newPushWorld(t, account)
	ctx := t.Context()
	_, err := w.pool.Exec(ctx, `UPDATE desired SET phone = '5125550100' WHERE id IN (SELECT id FROM desired ORDER BY id LIMIT 300)`)
	require.NoError(t, err)
	_, err = w.pool.Exec(ctx, `UPDATE desired SET city = '' WHERE id IN (SELECT id FROM desired ORDER BY id DESC LIMIT 2)`)
	require.NoError(t, err)
	r := etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitPartial, r.code, r.stderr)

	var complete, inZurich int
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*) FROM listings_current WHERE account = $1 AND status = 'COMPLETE'`, account).Scan(&complete))
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT id FROM desired ORDER BY id LIMIT 300) d
		JOIN listings_current c ON c.account = $1 AND c.location_id = d.id WHERE c.city = 'Zürich'`, account).Scan(&inZurich))
	require.Positive(t, inZurich)

	r = etl(t, w.env, "listings", "status", "--account", account)
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.LessOrEqual(t, len(lines), 20, r.stdout)
	require.True(t, strings.HasPrefix(lines[0], fmt.Sprintf("1500 locations of %s pulled: %d COMPLETE, ", account, complete)), lines[0])
	require.Contains(t, r.stdout, "302 locations pending: 302 refused (wait for a change)\n")
	require.Contains(t, r.stdout, "by code: 300 INVALID_PHONE (phone), 2 REQUIRED (city)\n")
	require.Contains(t, r.stdout, "the 10 that matter most")
	details := func(out string) []string {
		var d []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "  ") {
				d = append(d, l)
			}
		}
		return d
	}
	shown := details(r.stdout)
	require.Len(t, shown, 10)
	for _, l := range shown {
		require.Regexp(t, `^  [0-9a-f]{32} "[^"]+" \([^)]+\)  push 1  REFUSED \(waits for a change\)  `, l)
	}

	r = etl(t, w.env, "listings", "status", "--account", account, "--all")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Len(t, details(r.stdout), 302)

	r = etl(t, w.env, "listings", "status", "--account", account, "--state", "refused")
	require.Len(t, details(r.stdout), 302)
	require.Contains(t, r.stdout, "302 of them match:\n")
	r = etl(t, w.env, "listings", "status", "--account", account, "--state", "failed,in-doubt")
	require.Empty(t, details(r.stdout))
	require.Contains(t, r.stdout, "0 of them match:\n")

	r = etl(t, w.env, "listings", "status", "--account", account, "--location", "zür*")
	require.Len(t, details(r.stdout), inZurich, r.stdout)
	for _, l := range details(r.stdout) {
		require.Contains(t, l, "(Zürich)")
	}
	r = etl(t, w.env, "listings", "status", "--account", account, "--location", "ürich")
	require.Len(t, details(r.stdout), inZurich)

	r = etl(t, w.env, "listings", "status", "--account", account, "--state", "stuck")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, `--state "stuck": a state is one of in-doubt, failed, waiting, refused`)

	r = etl(t, w.env, "listings", "status", "--account", account, "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var rep struct {
		Pending []json.RawMessage `json:"pending"`
		Pulled  struct {
			Locations int            `json:"locations"`
			ByStatus  map[string]int `json:"by_status"`
		} `json:"pulled"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.Pending, 302)
	require.Equal(t, 1500, rep.Pulled.Locations)
	require.Equal(t, complete, rep.Pulled.ByStatus["COMPLETE"])
}
