package main

import (
	"encoding/json"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
)

// Arm HB's runs of the last month run on the day of the backfill (the
// sandbox's clock is pinned), when a rerun would buy nothing: each must
// still load, and time, pages, and the report hold no NaN.
func TestMeasureBackfillTimesThePagesOfTheLastMonth(t *testing.T) {
	t.Parallel()
	full, empty := pgtest.NewPool(t), pgtest.NewPool(t)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	h, err := measureBackfill(t.Context(), log, full, empty, time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), 1)
	require.NoError(t, err)
	require.Equal(t, 3, h.Months, "2026-09 to 2026-11")
	require.Positive(t, h.Tasks)
	require.Positive(t, h.Pages, "the run of the last month loads pages")
	for name, s := range map[string]spread{"empty": h.EmptyPageMS, "after the backfill": h.HistoryPageMS} {
		require.False(t, math.IsNaN(s.Median) || math.IsNaN(s.Min) || math.IsNaN(s.Max), "the pages on the warehouse %s: %+v", name, s)
		require.Positive(t, s.Min, "the pages on the warehouse %s", name)
	}
	require.Positive(t, h.Ratio)
	_, err = json.Marshal(&report{History: &historyReport{Backfill: h}})
	require.NoError(t, err)
}
