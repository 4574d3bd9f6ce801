package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListingsPushProgressAndSummary: etl listings push, its stderr not a
// terminal, logs a record "progress" with the counts once planned (and at
// most every 10s after), and ends with its summary on stdout; etl
// listings status then lists the location refused, which waits for a
// change.
func TestListingsPushProgressAndSummary(t *testing.T) {
	t.Parallel()
	const account = "x-n30"
	w := newPushWorld(t, account)
	ctx := t.Context()
	var n int
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*) FROM desired`).Scan(&n))
	require.Greater(t, n, 3)
	// One location unchanged, one with a phone the provider would refuse,
	// the others renamed.
	var unchanged, invalid string
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT min(id), max(id) FROM desired`).Scan(&unchanged, &invalid))
	_, err := w.pool.Exec(ctx, `UPDATE desired SET location_name = 'Progress ' || id WHERE id <> $1`, unchanged)
	require.NoError(t, err)
	_, err = w.pool.Exec(ctx, `UPDATE desired SET phone = '555 0100' WHERE id = $1`, invalid)
	require.NoError(t, err)
	toSend := n - 2

	r := etl(t, w.env, "--log-format", "json", "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)

	// The progress records: the first when the push is planned.
	var progress []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "progress" {
			progress = append(progress, rec)
		}
	}
	require.NotEmpty(t, progress, r.stderr)
	first := progress[0]
	for k, v := range map[string]float64{"push_id": 1, "items": float64(n), "to_send": float64(toSend), "sent": 0, "updated": 0,
		"failed": 0, "refused": 1, "skipped": 1, "requests": 0, "requests_planned": 1, "left_seconds": 0} {
		require.Equal(t, v, first[k], "%s in %v", k, first)
	}
	require.Equal(t, account, first["account"])
	require.Contains(t, first, "elapsed_seconds")

	// The summary, its first lines; then the refused one.
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	require.Equal(t, fmt.Sprintf("push 1 of %s from desired: %d rows; sent %d, updated %d, failed 0, refused 1, unchanged 1, waiting 0, in doubt 0, not sent 0", account, n, toSend, toSend),
		lines[0])
	require.Equal(t, "requests: 1 bulk, 0 single, 0 read back, 0 answered 429 (planned 1, the last at once)", lines[1])
	require.Equal(t, "1 refused: 1 INVALID_PHONE (phone)", lines[2])
	// Each location shows with its name and city as pulled.
	var name, city string
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT location_name, city FROM listings_current WHERE account = $1 AND location_id = $2`,
		account, invalid).Scan(&name, &city))
	label := fmt.Sprintf("%s %q (%s)", invalid, name, city)
	require.Contains(t, r.stdout, label+": REFUSED INVALID_PHONE phone: ")
	require.Contains(t, r.stderr, fmt.Sprintf("listings push of %s: 0 failed, 1 refused", account))

	// The refusal waits for a change, and says so.
	r = etl(t, w.env, "listings", "status", "--account", account)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "1 locations pending:")
	require.Contains(t, r.stdout, "  "+label+"  push 1  REFUSED (waits for a change)  INVALID_PHONE  phone  ")
}
