package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestARunKeepsWhatThePlanExpected: etl run records what its plan
// expected (runs.expected_units), equal to etl plan's total, and
// spend_by_run sets the run's units against it: units as the sandbox
// charged, over_expected their difference.
func TestARunKeepsWhatThePlanExpected(t *testing.T) {
	t.Parallel()
	sb, env := runWorld(t, "k")
	dbURL := env["DATABASE_URL"]
	jobs := writeSpec(t, "jobs:\n  - name: s\n    targets: [{url: example.com, scope: ROOT_DOMAIN}, {url: n300.example, scope: ROOT_DOMAIN}]\n"+
		"    endpoints: {overview: {}}\n    keywords: {keywords: [seo tools], countries: [US, DE]}\n")
	now := cliNow.Format(time.RFC3339)
	r := etl(t, env, "plan", "--jobs", jobs, "--json", "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	var plan planJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan), r.stdout)
	require.NotNil(t, plan.Total.Expected, r.stdout)
	expected := *plan.Total.Expected

	r = etl(t, env, "run", "--jobs", jobs, "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	conn, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var got struct {
		requests, units int64
		expected, over  *int64
	}
	_, err = conn.Exec(t.Context(), `SET ROLE etl_analyst`)
	require.NoError(t, err)
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT requests, units, expected_units, over_expected FROM spend_by_run WHERE run_id = 1`).
		Scan(&got.requests, &got.units, &got.expected, &got.over))
	require.NotNil(t, got.expected)
	require.Equal(t, expected, *got.expected, "what etl plan said")
	require.Equal(t, sb.Usage("k").UnitsSpent, got.units)
	require.Equal(t, got.units-expected, *got.over)
	require.Equal(t, sb.Usage("k").Requests, got.requests)
}
