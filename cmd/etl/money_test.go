package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMoneyBesideUnits: with unit_price in the spec, plan, run, budget and
// runs show say what units cost, rounded half-up to the cent, in one form
// ("140 units (0.17 EUR)"); without it (runs show with no spec) units
// stand alone.
func TestMoneyBesideUnits(t *testing.T) {
	t.Parallel()
	_, env := runWorld(t, "k")
	now := cliNow.Format(time.RFC3339)
	// 7 keyword-metrics tasks of 20 units: 140 units, 0.1722 EUR.
	jobs := writeSpec(t, `unit_price: {per: 1_000, amount: "1.23", currency: EUR}
budget: {monthly: 1000}
jobs:
  - name: c
    keywords: {keywords: [a, b, c, d, e, f, g], countries: [US]}
`)

	r := etl(t, env, "plan", "--jobs", jobs, "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "7 tasks, 7 requests, expected 140 units (0.17 EUR), worst case 140 (0.17 EUR)\n")
	require.Contains(t, r.stdout, "unit price: 1.23 EUR per 1000 units (unit_price of the job spec)\n")
	// The table per endpoint and the caps too.
	require.Regexp(t, `(?m)^keyword-metrics\s+7\s+7\s+140 \(0\.17 EUR\)\s+140 \(0\.17 EUR\)\s+0\s+700ms$`, r.stdout)
	require.Regexp(t, `(?m)^total\s+7\s+7\s+140 \(0\.17 EUR\)\s+140 \(0\.17 EUR\)\s+0\s+700ms$`, r.stdout)
	require.Contains(t, r.stdout, "cap: monthly cap 1000 (1.23 EUR): 0 (0.00 EUR) used, 1000 (1.23 EUR) left: fits, the run would spend 140 (0.17 EUR)\n")

	r = etl(t, env, "run", "--jobs", jobs, "--now", now)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Regexp(t, `(?m)^job c: 7 tasks, 7 rows, 0 quarantined, 140 API units \(0\.17 EUR\), `, r.stdout)

	// Held within max_age: the plan says what not buying them saves.
	r = etl(t, env, "plan", "--jobs", jobs, "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "expected 0 units (0.00 EUR), worst case 0 (0.00 EUR)\n")
	require.Contains(t, r.stdout, "saves 140 units (0.17 EUR) (--refetch buys them again)\n")

	r = etl(t, env, "budget", "--jobs", jobs, "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `installation 2026-11\s+1000 \(1\.23 EUR\)\s+140 \(0\.17 EUR\)\s+860 \(1\.06 EUR\)`, r.stdout)
	require.Regexp(t, `job c run 1 \(latest\)\s+none\s+140 \(0\.17 EUR\)\s+-`, r.stdout)
	require.Contains(t, r.stdout, "\nmoney at today's unit price, the past's too: 1.23 EUR per 1000 units (unit_price of "+jobs+")\n")
	// The plan's caps after the run: what is used is priced too.
	r = etl(t, env, "plan", "--jobs", jobs, "--now", now, "--refetch")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "cap: monthly cap 1000 (1.23 EUR): 140 (0.17 EUR) used, 860 (1.06 EUR) left: fits, the run would spend 140 (0.17 EUR)\n")
	r = etl(t, env, "budget", "--jobs", jobs, "--now", now, "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var uses []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &uses), r.stdout)
	eur := func(a string) map[string]any { return map[string]any{"amount": a, "currency": "EUR"} }
	require.Equal(t, map[string]any{"scope": "installation 2026-11", "cap": 1000.0, "used": 140.0, "left": 860.0,
		"cap_cost": eur("1.23"), "used_cost": eur("0.17"), "left_cost": eur("1.06")}, uses[1])
	require.Equal(t, map[string]any{"scope": "installation 2026-11-21", "cap": nil, "used": 140.0, "left": nil,
		"used_cost": eur("0.17")}, uses[0])

	r = etl(t, env, "runs", "show", "1", "--jobs", jobs)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^units\s+140 \(0\.17 EUR\)$`, r.stdout)
	require.Equal(t, 1, strings.Count(r.stdout, "money at today's unit price, the past's too: 1.23 EUR per 1000 units"), r.stdout)
	r = etl(t, env, "runs", "show", "1", "--jobs", jobs, "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var show struct {
		Cost map[string]any `json:"cost"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &show), r.stdout)
	require.Equal(t, eur("0.17"), show.Cost)
	// The list of runs: money beside units, and once that it is today's
	// price.
	r = etl(t, env, "runs", "--jobs", jobs)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^\s*1\s+c\s+manual\s+succeeded\s+1\s+\S+\s+\S+\s+\S+\s+7\s+140 \(0\.17 EUR\)$`, r.stdout)
	require.Equal(t, 1, strings.Count(r.stdout, "money at today's unit price, the past's too: 1.23 EUR per 1000 units"), r.stdout)
	r = etl(t, env, "runs", "--jobs", jobs, "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var listed []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &listed), r.stdout)
	require.Len(t, listed, 1)
	require.Equal(t, eur("0.17"), listed[0]["cost"])
	require.Equal(t, 140.0, listed[0]["units"])
	r = etl(t, env, "runs")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NotContains(t, r.stdout, "EUR")
	// No spec here (the tests run where there is no jobs.yaml): no money.
	r = etl(t, env, "runs", "show", "1")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^units\s+140$`, r.stdout)
	require.NotContains(t, r.stdout, "EUR")
	// --jobs named but not there is an error, not a silent lack of price.
	r = etl(t, env, "runs", "show", "1", "--jobs", jobs+".missing")
	require.Equal(t, exitUsage, r.code, r.stderr)

	r = etl(t, env, "run", "--jobs", jobs, "--now", now, "--refetch", "--json")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	var sum map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum), r.stdout)
	require.Equal(t, 140.0, sum["units"])
	require.Equal(t, eur("0.17"), sum["cost"])
}

// TestNoMoneyWithoutAPrice: a spec without unit_price prints no money
// anywhere, and its run JSON has no cost (none is guessed).
func TestNoMoneyWithoutAPrice(t *testing.T) {
	t.Parallel()
	_, env := runWorld(t, "k")
	now := cliNow.Format(time.RFC3339)
	jobs := writeSpec(t, "jobs:\n  - name: c\n    keywords: {keywords: [a], countries: [US]}\n")
	r := etl(t, env, "run", "--jobs", jobs, "--now", now, "--json")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	var sum map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum), r.stdout)
	require.NotContains(t, sum, "cost")
	for _, args := range [][]string{
		{"plan", "--jobs", jobs, "--now", now},
		{"budget", "--jobs", jobs, "--now", now},
		{"budget", "--jobs", jobs, "--now", now, "--json"},
		{"runs", "show", "1", "--jobs", jobs},
		{"runs", "show", "1", "--jobs", jobs, "--json"},
		{"runs", "--jobs", jobs},
		{"runs", "--jobs", jobs, "--json"},
	} {
		r := etl(t, env, args...)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.NotContains(t, r.stdout, "unit price", args)
		require.NotContains(t, r.stdout, "cost", args)
		require.NotRegexp(t, `\d \(\d`, r.stdout, args)
	}
}
