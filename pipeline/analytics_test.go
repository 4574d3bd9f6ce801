package pipeline_test

import (
	"cmp"
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
	"golang.org/x/text/width"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
	"github.com/seoetl/etl/sandbox"
)

var updateGuide = flag.Bool("update-guide", false, "rewrite the outputs of docs/warehouse.md's analytic views")

// analyticsTargets are the targets of the analytics warehouse: two small
// targets whose every link is stored, and one larger than the links limit.
const analyticsTargets = "{url: n240.example, scope: ROOT_DOMAIN}, {url: n300.example, scope: ROOT_DOMAIN}, {url: n1200.example, scope: ROOT_DOMAIN}"

// analyticsFirst and analyticsLast are the months the analytics warehouse
// holds.
var (
	analyticsFirst = time.Date(2024, 12, 1, 0, 0, 0, 0, time.UTC)
	analyticsLast  = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
)

// loadAnalytics loads 24 months of the guide job for analyticsTargets
// through the runner, the sandbox's clock moved to the 20th of each month
// before its run, and the guide's listings pulled daily over the two
// weeks before 2026-11-21.
func loadAnalytics(t *testing.T) *fixture {
	t.Helper()
	var clock atomic.Int64
	f := newWorld(t, testworld.Options{Now: func() time.Time { return time.Unix(clock.Load(), 0).UTC() },
		Sandbox: sandbox.Config{RatePerSecond: -1, MaxConcurrent: -1}})
	client, err := extract.New(extract.Config{BaseURL: f.URL, APIKey: "test-key", RatePerSecond: -1, MaxConcurrent: -1})
	require.NoError(t, err)
	// The pages make the partitions as they go, 8 at once: the loader's
	// partition visibility (load.Loader.synced) is exercised here too.
	for m := analyticsFirst; !m.After(analyticsLast); m = m.AddDate(0, 1, 0) {
		now := m.AddDate(0, 0, 19).Add(3 * time.Hour)
		clock.Store(now.Unix())
		s, err := jobspec.ParseSpec("jobs.yaml", []byte(fmt.Sprintf(guideSpec, analyticsTargets, "")), now)
		require.NoError(t, err)
		r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.Pool, Allocator: f.Mem,
			Now: func() time.Time { return now }, Concurrency: 8})
		require.NoError(t, err)
		// As etl run does: the plan's expectation is kept with the run.
		planner, err := planning.NewPlanner(planning.PlanConfig{Pool: f.Pool, Now: func() time.Time { return now }})
		require.NoError(t, err)
		plan, err := planner.Plan(t.Context(), s.Jobs[0], planning.PlanOptions{})
		require.NoError(t, err)
		sum, err := r.RunWith(t.Context(), s.Jobs[0], pipeline.RunOptions{Expected: plan.Total.Expected})
		require.NoError(t, err)
		require.Zero(t, sum.Failed(), m.Format("2006-01"))
	}
	loadGuideListingsAt(t, f.Pool, time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC))
	_, err = f.Pool.Exec(t.Context(), "ANALYZE")
	require.NoError(t, err)
	return f
}

// asAnalyst runs fn in a transaction as etl_analyst, rolled back.
func asAnalyst(t *testing.T, f *fixture, fn func(tx pgx.Tx)) {
	t.Helper()
	tx, err := f.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { require.NoError(t, tx.Rollback(t.Context())) }()
	_, err = tx.Exec(t.Context(), "SET LOCAL ROLE etl_analyst")
	require.NoError(t, err)
	fn(tx)
}

// collect reads every row of query into Ts by name.
func collect[T any](t *testing.T, tx pgx.Tx, query string, args ...any) []T {
	t.Helper()
	rows, err := tx.Query(t.Context(), query, args...)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	require.NoError(t, err, query)
	return out
}

// monthRange is [m, next month) as UTC instants.
func inMonth(ts *time.Time, m time.Time) bool {
	return ts != nil && !ts.Before(m) && ts.Before(m.AddDate(0, 1, 0))
}

func isTrue(b *bool) bool { return b != nil && *b }

// TestAnalyticViews: on 24 months of three targets loaded through the job
// (and two weeks of listings), each analytic view of migration 0024 shows,
// as etl_analyst, the numbers computed here from the stored rows; a filter
// on the month plans the partitions of that month alone; every column is
// commented; and docs/warehouse.md shows each example query's output on
// this warehouse (go test -run TestAnalyticViews -update-guide rewrites
// them).
func TestAnalyticViews(t *testing.T) {
	t.Parallel()
	f := loadAnalytics(t)
	ctx := t.Context()

	t.Run("link_changes", func(t *testing.T) {
		type link struct {
			TargetID  int64 `db:"target_id"`
			URL       string
			Month     time.Time
			FirstSeen *time.Time `db:"first_seen_at"`
			LastSeen  *time.Time `db:"last_seen_at"`
			IsNew     *bool      `db:"is_new"`
			IsLost    *bool      `db:"is_lost"`
		}
		type change struct {
			TargetID    int64 `db:"target_id"`
			URL         string
			Month       time.Time
			Links       int64
			NewLinks    int64 `db:"new_links"`
			LostLinks   int64 `db:"lost_links"`
			FlaggedNew  int64 `db:"flagged_new"`
			FlaggedLost int64 `db:"flagged_lost"`
		}
		asAnalyst(t, f, func(tx pgx.Tx) {
			stored := collect[link](t, tx, `SELECT b.target_id, t.url, b.month, b.first_seen_at, b.last_seen_at, b.is_new, b.is_lost
				FROM backlinks b JOIN targets t USING (target_id)`)
			want := map[[2]any]*change{}
			for _, l := range stored {
				k := [2]any{l.TargetID, l.Month}
				c := want[k]
				if c == nil {
					c = &change{TargetID: l.TargetID, URL: l.URL, Month: l.Month}
					want[k] = c
				}
				c.Links++
				if inMonth(l.FirstSeen, l.Month) {
					c.NewLinks++
				}
				if isTrue(l.IsLost) && inMonth(l.LastSeen, l.Month) {
					c.LostLinks++
				}
				if isTrue(l.IsNew) {
					c.FlaggedNew++
				}
				if isTrue(l.IsLost) {
					c.FlaggedLost++
				}
			}
			got := collect[change](t, tx, `SELECT target_id, url, month, links, new_links, lost_links, flagged_new, flagged_lost FROM link_changes`)
			require.Len(t, got, 3*24)
			requireSameRows(t, want, got, func(c change) [2]any { return [2]any{c.TargetID, c.Month} })
			require.Positive(t, sumOf(got, func(c change) int64 { return c.NewLinks }))
			require.Positive(t, sumOf(got, func(c change) int64 { return c.LostLinks }))
		})
	})

	t.Run("ref_domain_changes", func(t *testing.T) {
		type domain struct {
			TargetID  int64 `db:"target_id"`
			URL       string
			Month     time.Time
			FirstSeen *time.Time `db:"first_seen_at"`
			LastSeen  *time.Time `db:"last_seen_at"`
			IsNew     *bool      `db:"is_new"`
			IsLost    *bool      `db:"is_lost"`
		}
		type change struct {
			TargetID    int64 `db:"target_id"`
			URL         string
			Month       time.Time
			Domains     int64
			NewDomains  int64 `db:"new_domains"`
			LostDomains int64 `db:"lost_domains"`
			FlaggedNew  int64 `db:"flagged_new"`
			FlaggedLost int64 `db:"flagged_lost"`
		}
		asAnalyst(t, f, func(tx pgx.Tx) {
			stored := collect[domain](t, tx, `SELECT d.target_id, t.url, d.month, d.first_seen_at, d.last_seen_at, d.is_new, d.is_lost
				FROM ref_domains d JOIN targets t USING (target_id)`)
			want := map[[2]any]*change{}
			for _, d := range stored {
				k := [2]any{d.TargetID, d.Month}
				c := want[k]
				if c == nil {
					c = &change{TargetID: d.TargetID, URL: d.URL, Month: d.Month}
					want[k] = c
				}
				c.Domains++
				if inMonth(d.FirstSeen, d.Month) {
					c.NewDomains++
				}
				if isTrue(d.IsLost) && inMonth(d.LastSeen, d.Month) {
					c.LostDomains++
				}
				if isTrue(d.IsNew) {
					c.FlaggedNew++
				}
				if isTrue(d.IsLost) {
					c.FlaggedLost++
				}
			}
			got := collect[change](t, tx, `SELECT target_id, url, month, domains, new_domains, lost_domains, flagged_new, flagged_lost FROM ref_domain_changes`)
			require.Len(t, got, 3*24)
			requireSameRows(t, want, got, func(c change) [2]any { return [2]any{c.TargetID, c.Month} })
			require.Positive(t, sumOf(got, func(c change) int64 { return c.NewDomains }))
		})
	})

	t.Run("link_velocity", func(t *testing.T) {
		type link struct {
			TargetID  int64 `db:"target_id"`
			URL       string
			RowKey    string `db:"row_key"`
			Month     time.Time
			FirstSeen *time.Time `db:"first_seen_at"`
		}
		type velocity struct {
			TargetID       int64 `db:"target_id"`
			URL            string
			Day            time.Time
			NewLinks       int64          `db:"new_links"`
			New30d         int64          `db:"new_30d"`
			New90d         int64          `db:"new_90d"`
			TrailingMean   pgtype.Numeric `db:"trailing_mean"`
			TrailingStddev pgtype.Numeric `db:"trailing_stddev"`
			Spike          bool
		}
		since, until := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
		asAnalyst(t, f, func(tx pgx.Tx) {
			// The months read: from since - 90 days to the month after until.
			from := since.AddDate(0, 0, -90)
			from = time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC)
			stored := collect[link](t, tx, `SELECT b.target_id, t.url, b.row_key::text, b.month, b.first_seen_at
				FROM backlinks b JOIN targets t USING (target_id)
				WHERE b.month >= $1 AND b.month <= $2`, from, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
			type key struct {
				target int64
				row    string
			}
			// Each link's first sight as last observed.
			first, observed := map[key]time.Time{}, map[key]time.Time{}
			urls := map[int64]string{}
			for _, l := range stored {
				if l.FirstSeen == nil {
					continue
				}
				urls[l.TargetID] = l.URL
				k := key{l.TargetID, l.RowKey}
				if m, ok := observed[k]; !ok || l.Month.After(m) {
					first[k], observed[k] = *l.FirstSeen, l.Month
				}
			}
			perDay := map[int64]map[time.Time]int64{}
			for k, ts := range first {
				d := ts.UTC().Truncate(24 * time.Hour)
				if d.Before(since.AddDate(0, 0, -90)) || d.After(until) {
					continue
				}
				if perDay[k.target] == nil {
					perDay[k.target] = map[time.Time]int64{}
				}
				perDay[k.target][d]++
			}
			sumDays := func(days map[time.Time]int64, d time.Time, from, to int) (s, sq float64) {
				for i := from; i <= to; i++ {
					n := float64(days[d.AddDate(0, 0, -i)])
					s, sq = s+n, sq+n*n
				}
				return s, sq
			}
			want := map[[2]any]*velocity{}
			type stats struct{ mean, sd float64 }
			wantStats := map[[2]any]stats{}
			for target, days := range perDay {
				for d, n := range days {
					if d.Before(since) {
						continue
					}
					s30, _ := sumDays(days, d, 0, 29)
					s90, _ := sumDays(days, d, 0, 89)
					ts, tsq := sumDays(days, d, 1, 30)
					mean := ts / 30
					sd := math.Sqrt(max(tsq/30-mean*mean, 0))
					k := [2]any{target, d}
					// n > mean + 3 sd, in integers: (30n - s)^2 > 9 (30 sq - s^2).
					over, spread := 30*n-int64(ts), 30*int64(tsq)-int64(ts)*int64(ts)
					want[k] = &velocity{TargetID: target, URL: urls[target], Day: d, NewLinks: n, New30d: int64(s30), New90d: int64(s90),
						Spike: ts > 0 && over > 0 && over*over > 9*spread}
					wantStats[k] = stats{mean, sd}
				}
			}
			got := collect[velocity](t, tx, `SELECT * FROM link_velocity($1, $2)`, since, until)
			require.NotEmpty(t, got)
			for i := range got {
				k := [2]any{got[i].TargetID, got[i].Day}
				w, ok := wantStats[k]
				require.True(t, ok, "the view shows %v, which the rows do not", k)
				mean, err := got[i].TrailingMean.Float64Value()
				require.NoError(t, err)
				sd, err := got[i].TrailingStddev.Float64Value()
				require.NoError(t, err)
				require.InDelta(t, w.mean, mean.Float64, 0.00006, "%v", k)
				require.InDelta(t, w.sd, sd.Float64, 0.00006, "%v", k)
				got[i].TrailingMean, got[i].TrailingStddev = pgtype.Numeric{}, pgtype.Numeric{}
			}
			requireSameRows(t, want, got, func(v velocity) [2]any { return [2]any{v.TargetID, v.Day} })
			require.True(t, slices.ContainsFunc(got, func(v velocity) bool { return v.Spike }), "some day is a spike")
			require.True(t, slices.ContainsFunc(got, func(v velocity) bool { return !v.Spike && v.New30d > v.NewLinks }), "some day after others is not")
		})
	})

	t.Run("competitor_gap", func(t *testing.T) {
		type cell struct {
			SetID  int64 `db:"set_id"`
			Name   string
			URLs   []string
			Month  time.Time
			Domain string
			Score  *int64 `db:"domain_score"`
			Counts []*int64
		}
		type gap struct {
			SetID          int64 `db:"set_id"`
			SetName        string
			Month          time.Time
			Target         string
			Domain         string
			DomainScore    *int64 `db:"domain_score"`
			RivalsLinking  int64  `db:"rivals_linking"`
			RivalBacklinks int64  `db:"rival_backlinks"`
			GapRank        int64  `db:"gap_rank"`
		}
		asAnalyst(t, f, func(tx pgx.Tx) {
			stored := collect[cell](t, tx, `SELECT m.set_id, s.name, s.urls, m.month, m.domain, m.domain_score, m.backlinks_counts AS counts
				FROM matrix m JOIN target_sets s USING (set_id)`)
			groups := map[[2]any][]*gap{}
			for _, c := range stored {
				g := &gap{SetID: c.SetID, SetName: c.Name, Month: c.Month, Target: c.URLs[0], Domain: c.Domain, DomainScore: c.Score}
				if len(c.Counts) > 0 && c.Counts[0] != nil && *c.Counts[0] != 0 {
					continue
				}
				for _, n := range c.Counts[1:] {
					if n != nil {
						g.RivalBacklinks += *n
						if *n > 0 {
							g.RivalsLinking++
						}
					}
				}
				if g.RivalsLinking > 0 {
					groups[[2]any{c.SetID, c.Month}] = append(groups[[2]any{c.SetID, c.Month}], g)
				}
			}
			want := map[[3]any]*gap{}
			for _, gs := range groups {
				slices.SortFunc(gs, func(a, b *gap) int {
					score := func(g *gap) int64 {
						if g.DomainScore == nil {
							return -1
						}
						return *g.DomainScore
					}
					return cmp.Or(-cmp.Compare(score(a), score(b)), -cmp.Compare(a.RivalsLinking, b.RivalsLinking),
						-cmp.Compare(a.RivalBacklinks, b.RivalBacklinks), strings.Compare(a.Domain, b.Domain))
				})
				for i, g := range gs {
					g.GapRank = int64(i + 1)
					want[[3]any{g.SetID, g.Month, g.Domain}] = g
				}
			}
			require.NotEmpty(t, want)
			got := collect[gap](t, tx, `SELECT set_id, set_name, month, target, domain, domain_score, rivals_linking, rival_backlinks, gap_rank FROM competitor_gap`)
			requireSameRows(t, want, got, func(g gap) [3]any { return [3]any{g.SetID, g.Month, g.Domain} })
		})
	})

	t.Run("target_authority", func(t *testing.T) {
		type authority struct {
			TargetID   int64 `db:"target_id"`
			URL        string
			Month      time.Time
			Source     string
			Score      *int64
			Backlinks  *int64
			RefDomains *int64    `db:"ref_domains"`
			ObservedAt time.Time `db:"observed_at"`
		}
		asAnalyst(t, f, func(tx pgx.Tx) {
			stored := collect[authority](t, tx, `
				SELECT h.target_id, t.url, h.month, 'summary' AS source, h.score, h.backlinks_count AS backlinks, h.domains_count AS ref_domains, h.observed_at
				FROM backlink_history h JOIN targets t USING (target_id)
				UNION ALL
				SELECT o.target_id, t.url, o.month, 'overview', o.score, o.backlinks_count, o.domains_count, o.observed_at
				FROM backlink_overview o JOIN targets t USING (target_id)`)
			want := map[[2]any]*authority{}
			sources := map[string]int{}
			for _, a := range stored {
				k := [2]any{a.TargetID, a.Month}
				if cur := want[k]; cur == nil || a.ObservedAt.After(cur.ObservedAt) || (a.ObservedAt.Equal(cur.ObservedAt) && a.Source == "summary") {
					want[k] = &a
				}
			}
			for _, a := range stored {
				sources[a.Source]++
			}
			require.Len(t, sources, 2, "rows of both sources: %v", sources)
			got := collect[authority](t, tx, `SELECT target_id, url, month, source, score, backlinks, ref_domains, observed_at FROM target_authority`)
			requireSameRows(t, want, got, func(a authority) [2]any { return [2]any{a.TargetID, a.Month} })
		})
	})

	t.Run("spend", func(t *testing.T) {
		type entry struct {
			Job        string
			RunID      int64 `db:"run_id"`
			Reserved   int64
			Spent      *int64
			ReservedAt time.Time `db:"reserved_at"`
		}
		type spend struct {
			Period    time.Time
			Job       string
			Requests  int64
			Reserved  int64
			Units     int64
			Unsettled int64
			Runs      int64
		}
		asAnalyst(t, f, func(tx pgx.Tx) {
			ledger := collect[entry](t, tx, `SELECT job, run_id, reserved, spent, reserved_at FROM unit_ledger`)
			require.NotEmpty(t, ledger)
			byDay, byMonth := map[[2]any]*spend{}, map[[2]any]*spend{}
			runs := map[[2]any]map[int64]bool{}
			for _, e := range ledger {
				at := e.ReservedAt.UTC()
				for _, p := range []struct {
					m      map[[2]any]*spend
					period time.Time
				}{{byDay, at.Truncate(24 * time.Hour)}, {byMonth, time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC)}} {
					k := [2]any{p.period, e.Job}
					s := p.m[k]
					if s == nil {
						s = &spend{Period: p.period, Job: e.Job}
						p.m[k] = s
					}
					s.Requests++
					s.Reserved += e.Reserved
					s.Units += e.Reserved
					if e.Spent != nil {
						s.Units += *e.Spent - e.Reserved
					} else {
						s.Unsettled++
					}
				}
				k := [2]any{time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC), e.Job}
				if runs[k] == nil {
					runs[k] = map[int64]bool{}
				}
				runs[k][e.RunID] = true
			}
			for k, s := range byMonth {
				s.Runs = int64(len(runs[k]))
			}
			key := func(s spend) [2]any { return [2]any{s.Period, s.Job} }
			requireSameRows(t, byDay, collect[spend](t, tx, `SELECT day AS period, job, requests, reserved, units, unsettled, 0::bigint AS runs FROM spend_by_day`), key)
			requireSameRows(t, byMonth, collect[spend](t, tx, `SELECT month AS period, job, requests, reserved, units, unsettled, runs FROM spend_by_month`), key)
			require.Len(t, byMonth, 24)
		})
	})

	t.Run("listings", func(t *testing.T) {
		type problem struct {
			Account    string
			LocationID string `db:"location_id"`
			Code       string
			FirstSeen  time.Time  `db:"first_seen_at"`
			ResolvedAt *time.Time `db:"resolved_at"`
		}
		type open struct {
			Account     string
			Code        string
			Problems    int64
			Locations   int64
			OldestSince time.Time `db:"oldest_since"`
			Over1Day    int64     `db:"over_1_day"`
			Over7Days   int64     `db:"over_7_days"`
			Over30Days  int64     `db:"over_30_days"`
		}
		type week struct {
			Account   string
			Week      time.Time
			Code      string
			Opened    int64
			Resolved  int64
			OpenAtEnd int64 `db:"open_at_end"`
		}
		asAnalyst(t, f, func(tx pgx.Tx) {
			var now time.Time
			require.NoError(t, tx.QueryRow(ctx, "SELECT now()").Scan(&now))
			stored := collect[problem](t, tx, `SELECT account, location_id, code, first_seen_at, resolved_at FROM listing_problems`)
			require.NotEmpty(t, stored)
			wantOpen, wantWeeks := map[[2]string]*open{}, map[[3]any]*week{}
			locations := map[[2]string]map[string]bool{}
			monday := func(ts time.Time) time.Time {
				d := ts.UTC().Truncate(24 * time.Hour)
				return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
			}
			weekOf := func(p problem, at time.Time) *week {
				k := [3]any{p.Account, monday(at), p.Code}
				if wantWeeks[k] == nil {
					wantWeeks[k] = &week{Account: p.Account, Week: monday(at), Code: p.Code}
				}
				return wantWeeks[k]
			}
			for _, p := range stored {
				weekOf(p, p.FirstSeen).Opened++
				if p.ResolvedAt != nil {
					weekOf(p, *p.ResolvedAt).Resolved++
					continue
				}
				k := [2]string{p.Account, p.Code}
				o := wantOpen[k]
				if o == nil {
					o = &open{Account: p.Account, Code: p.Code, OldestSince: p.FirstSeen}
					wantOpen[k], locations[k] = o, map[string]bool{}
				}
				o.Problems++
				locations[k][p.LocationID] = true
				o.Locations = int64(len(locations[k]))
				if p.FirstSeen.Before(o.OldestSince) {
					o.OldestSince = p.FirstSeen
				}
				for _, c := range []struct {
					n    *int64
					days int
				}{{&o.Over1Day, 1}, {&o.Over7Days, 7}, {&o.Over30Days, 30}} {
					if !p.FirstSeen.After(now.AddDate(0, 0, -c.days)) {
						*c.n++
					}
				}
			}
			// Open at each week's end: those first seen before its end and
			// not resolved by then.
			for _, w := range wantWeeks {
				end := w.Week.AddDate(0, 0, 7)
				for _, p := range stored {
					if p.Account == w.Account && p.Code == w.Code && p.FirstSeen.Before(end) && (p.ResolvedAt == nil || !p.ResolvedAt.Before(end)) {
						w.OpenAtEnd++
					}
				}
			}
			require.NotEmpty(t, wantOpen)
			requireSameRows(t, wantOpen, collect[open](t, tx, `SELECT * FROM listing_open_problems`),
				func(o open) [2]string { return [2]string{o.Account, o.Code} })
			requireSameRows(t, wantWeeks, collect[week](t, tx, `SELECT * FROM listing_problem_weeks`),
				func(w week) [3]any { return [3]any{w.Account, w.Week, w.Code} })
			require.Positive(t, sumOf(slices.Collect(func(yield func(week) bool) {
				for _, w := range wantWeeks {
					if !yield(*w) {
						return
					}
				}
			}), func(w week) int64 { return w.Resolved }), "some problem was resolved")
		})
	})

	t.Run("prune", func(t *testing.T) {
		pv := newPlanView(t, f.Pool, partitionsOf(t, f))
		month := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		names := func(table string, from, to time.Time) []string {
			rows, err := f.Pool.Query(ctx, fmt.Sprintf(`SELECT DISTINCT tableoid::regclass::text FROM %s WHERE month >= $1 AND month < $2 ORDER BY 1`, table), from, to)
			require.NoError(t, err)
			out, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			require.NotEmpty(t, out)
			return pv.names(out) // on Citus, tableoid names a shard
		}
		next := month.AddDate(0, 1, 0)
		for _, c := range []struct {
			query string
			want  map[string][]string
		}{
			{`SELECT * FROM link_changes WHERE month = DATE '2026-03-01'`, map[string][]string{"backlinks": names("backlinks", month, next)}},
			{`SELECT * FROM link_changes WHERE url = 'n300.example' AND month >= DATE '2026-03-01' AND month < DATE '2026-04-01'`, map[string][]string{"backlinks": names("backlinks", month, next)}},
			{`SELECT * FROM ref_domain_changes WHERE month = DATE '2026-03-01'`, map[string][]string{"ref_domains": names("ref_domains", month, next)}},
			{`SELECT * FROM competitor_gap WHERE month = DATE '2026-03-01' AND gap_rank <= 10`, map[string][]string{"matrix": names("matrix", month, next)}},
			{`SELECT * FROM target_authority WHERE month = DATE '2026-03-01'`, map[string][]string{
				"backlink_history": names("backlink_history", month, next), "backlink_overview": names("backlink_overview", month, next)}},
			{`SELECT * FROM link_velocity(DATE '2026-03-01', DATE '2026-03-31')`, map[string][]string{
				"backlinks": names("backlinks", time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))}},
		} {
			planned, _ := pv.planned(t, f.Pool, c.query)
			// link_velocity (PL/pgSQL since migration 0028) runs a
			// statement of its own: its plan shows none of the table,
			// and the partitions wanted are those it reads.
			if !strings.Contains(c.query, "link_velocity(") {
				require.Equal(t, c.want, planned, "the partitions the plan keeps, of:\n%s", c.query)
				continue
			}
			require.Empty(t, planned, "a function's statement is in no plan EXPLAIN shows:\n%s", c.query)
			if pgtest.Citus() {
				// On Citus its statement reads the shards on the
				// workers, beyond the coordinator's transaction
				// statistics: what it reads is not seen.
				continue
			}
			require.Equal(t, c.want, pv.read(t, f.Pool, c.query), "the partitions read by:\n%s", c.query)
		}
	})

	t.Run("comments", func(t *testing.T) {
		var missing []string
		require.NoError(t, f.Pool.QueryRow(ctx, `
			SELECT coalesce(array_agg(c.relname || coalesce('.' || a.attname, '')), '{}')
			FROM pg_class c LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND col_description(c.oid, a.attnum) IS NULL
			WHERE c.relname = ANY ($1) AND (a.attname IS NOT NULL OR obj_description(c.oid, 'pg_class') IS NULL)`,
			[]string{"link_changes", "ref_domain_changes", "competitor_gap", "target_authority", "spend_by_day", "spend_by_month",
				"listing_open_problems", "listing_problem_weeks"}).Scan(&missing))
		require.Empty(t, missing)
		var n int
		require.NoError(t, f.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname = ANY ($1) AND relkind = 'v'`,
			[]string{"link_changes", "ref_domain_changes", "competitor_gap", "target_authority", "spend_by_day", "spend_by_month",
				"listing_open_problems", "listing_problem_weeks"}).Scan(&n))
		require.Equal(t, 8, n)
	})

	t.Run("guide", func(t *testing.T) {
		checkAnalyticsGuide(t, f)
	})
}

// requireSameRows requires got to hold exactly the rows of want, by key.
func requireSameRows[K comparable, T any](t *testing.T, want map[K]*T, got []T, key func(T) K) {
	t.Helper()
	gotBy := map[K]T{}
	for _, g := range got {
		k := key(g)
		_, dup := gotBy[k]
		require.False(t, dup, "the view shows %v twice", k)
		gotBy[k] = g
	}
	require.Len(t, gotBy, len(want))
	for k, w := range want {
		g, ok := gotBy[k]
		require.True(t, ok, "the view lacks %v", k)
		require.Equal(t, *w, g, "%v", k)
	}
}

func sumOf[T any](rows []T, f func(T) int64) int64 {
	var s int64
	for _, r := range rows {
		s += f(r)
	}
	return s
}

// partitionsOf maps every partition of the warehouse to its fact table.
func partitionsOf(t *testing.T, f *fixture) map[string]string {
	t.Helper()
	parent := map[string]string{}
	rows, err := f.Pool.Query(t.Context(), `SELECT c.relname, i.inhparent::regclass::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid`)
	require.NoError(t, err)
	var leaf, table string
	_, err = pgx.ForEachRow(rows, []any{&leaf, &table}, func() error { parent[leaf] = table; return nil })
	require.NoError(t, err)
	return parent
}

// analyticsSection is the guide's section on the analytic views, and
// analyticsExample one of its queries with the output block after it.
var (
	analyticsSection = regexp.MustCompile("(?s)\n## Analytic views\n.*?(\n## |$)")
	analyticsExample = regexp.MustCompile("(?s)```sql\n(.*?)```\n(\n```text\n.*?```\n)?")
)

// checkAnalyticsGuide runs each query of the guide's analytic views
// section as etl_analyst and requires the text block after it to be its
// output (rewritten with -update-guide).
func checkAnalyticsGuide(t *testing.T, f *fixture) {
	t.Helper()
	const path = "../docs/warehouse.md"
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	loc := analyticsSection.FindIndex(doc)
	require.NotNil(t, loc, "docs/warehouse.md has a section ## Analytic views")
	section := string(doc[loc[0]:loc[1]])
	examples := 0
	var failed []string
	updated := analyticsExample.ReplaceAllStringFunc(section, func(block string) string {
		m := analyticsExample.FindStringSubmatch(block)
		examples++
		out := "\n```text\n" + queryOutput(t, f, m[1]) + "```\n"
		if m[2] != out {
			failed = append(failed, fmt.Sprintf("%s\nwant:%s\ngot: %s", m[1], m[2], out))
		}
		return "```sql\n" + m[1] + "```\n" + out
	})
	require.GreaterOrEqual(t, examples, 9)
	if *updateGuide {
		require.NoError(t, os.WriteFile(path, []byte(string(doc[:loc[0]])+updated+string(doc[loc[1]:])), 0o644))
		return
	}
	require.Empty(t, failed, "the outputs in docs/warehouse.md are not those of the queries (go test ./pipeline -run TestAnalyticViews -update-guide rewrites them)")
}

// queryOutput runs query as etl_analyst and lays its rows out as psql
// does: a header, a rule, aligned columns (numbers to the right), and
// the row count.
func queryOutput(t *testing.T, f *fixture, query string) string {
	t.Helper()
	var out string
	asAnalyst(t, f, func(tx pgx.Tx) {
		_, err := tx.Exec(t.Context(), "SET LOCAL TimeZone = 'UTC'")
		require.NoError(t, err)
		rows, err := tx.Query(t.Context(), query, pgx.QueryExecModeSimpleProtocol)
		require.NoError(t, err)
		var names []string
		for _, fd := range rows.FieldDescriptions() {
			names = append(names, fd.Name)
		}
		var cells [][]string
		for rows.Next() {
			var row []string
			for _, raw := range rows.RawValues() {
				row = append(row, string(raw))
			}
			cells = append(cells, row)
		}
		require.NoError(t, rows.Err(), query)
		require.NotEmpty(t, cells, "the guide's query finds no rows:\n%s", query)
		out = layOut(names, cells)
	})
	return out
}

var numeric = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// termCells is how many terminal cells s takes: two for an East Asian wide
// or fullwidth rune, as psql counts them.
func termCells(s string) int {
	n := 0
	for _, r := range s {
		switch width.LookupRune(r).Kind() {
		case width.EastAsianWide, width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

func layOut(names []string, cells [][]string) string {
	wide := make([]int, len(names))
	right := make([]bool, len(names))
	for i, n := range names {
		wide[i] = len(n)
		right[i] = true
	}
	for _, row := range cells {
		for i, c := range row {
			wide[i] = max(wide[i], termCells(c))
			if c != "" && !numeric.MatchString(c) {
				right[i] = false
			}
		}
	}
	var b strings.Builder
	line := func(row []string, header bool) {
		for i, c := range row {
			if i > 0 {
				b.WriteString(" | ")
			}
			pad := strings.Repeat(" ", wide[i]-termCells(c))
			switch {
			case header:
				left := (wide[i] - len(c)) / 2
				b.WriteString(strings.Repeat(" ", left) + c + strings.Repeat(" ", wide[i]-len(c)-left))
			case right[i]:
				b.WriteString(pad + c)
			default:
				b.WriteString(c + pad)
			}
		}
		b.WriteString("\n")
	}
	line(names, true)
	for i, w := range wide {
		if i > 0 {
			b.WriteString("-+-")
		}
		b.WriteString(strings.Repeat("-", w))
	}
	b.WriteString("\n")
	for _, row := range cells {
		line(row, false)
	}
	fmt.Fprintf(&b, "(%d rows)\n", len(cells))
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
