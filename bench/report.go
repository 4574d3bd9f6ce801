package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seoetl/etl/catalog"
)

// report is what the bench prints and writes to results.json.
type report struct {
	Timestamp      string            `json:"timestamp"`
	Cores          int               `json:"cores"`
	Platform       string            `json:"platform"`
	Go             string            `json:"go"`
	Postgres       string            `json:"postgres"`
	ServerSettings map[string]string `json:"server_settings"` // over PostgreSQL's defaults
	Rows           int               `json:"rows"`            // N
	Target         string            `json:"target"`
	PageRows       int               `json:"page_rows"`
	Reps           int               `json:"reps"`
	CSVBytes       int64             `json:"csv_bytes"`
	DistinctKeys   int64             `json:"distinct_keys"`
	Arms           []armReport       `json:"arms"`
	Ratios         []ratioReport     `json:"ratios"`
	PeakRSS        rssReport         `json:"peak_rss_p1"`
	E2EBound       *boundReport      `json:"e2e_api_bound,omitempty"`
	History        *historyReport    `json:"history,omitempty"` // arms H and HB
	Export         *exportReport     `json:"export,omitempty"`  // arm X
	Targets        []targetReport    `json:"targets"`
	Notes          []string          `json:"notes"`
	TookSeconds    float64           `json:"took_seconds"` // the whole bench

	started time.Time
}

type armReport struct {
	Name       string   `json:"name"`
	What       string   `json:"what"`
	Seconds    spread   `json:"seconds"`
	RowsPerSec spread   `json:"rows_per_sec"`
	MBPerSec   spread   `json:"mb_per_sec"`  // of the CSV's bytes
	CPUSeconds spread   `json:"cpu_seconds"` // of the arm's process
	PeakRSSMB  *spread  `json:"peak_rss_mb,omitempty"`
	Samples    []sample `json:"samples"`
}

// ratioReport is a ratio of median throughputs.
type ratioReport struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// rssReport is P1's peak RSS in MB: the highest of its timed runs at N
// rows, its one run at 4N, and their ratio.
type rssReport struct {
	AtN   float64 `json:"n_mb,omitempty"`
	At4N  float64 `json:"4n_mb,omitempty"`
	Ratio float64 `json:"4n_over_n,omitempty"`
}

// boundReport is E2E against the API bound: its requests (medians of the
// timed runs), the least time they take at the API's account rate, and
// E2E's time.
type boundReport struct {
	Requests        float64 `json:"requests"`
	Refused         float64 `json:"refused"`
	APIBoundSeconds float64 `json:"api_bound_seconds"`
	E2ESeconds      float64 `json:"e2e_seconds"`
	// Ratio is APIBoundSeconds / E2ESeconds: E2E's throughput over the
	// most the API's rate allows in its pages (1: at the API's pace).
	Ratio float64 `json:"ratio"`
}

// targetReport is one target of issue 7 and whether this run meets it.
type targetReport struct {
	Target string  `json:"target"`
	Value  float64 `json:"value"`
	Met    bool    `json:"met"`
}

func (e *env) newReport(started time.Time, arms []arm, samples map[string][]sample) *report {
	r := &report{
		Timestamp:      started.UTC().Format(time.RFC3339),
		Cores:          runtime.NumCPU(),
		Platform:       runtime.GOOS + "/" + runtime.GOARCH,
		Go:             runtime.Version(),
		Postgres:       e.pgVer,
		ServerSettings: serverSettings,
		Rows:           e.cfg.rows,
		Target:         targetURL(e.cfg.rows),
		PageRows:       e.cfg.limit,
		Reps:           e.cfg.reps,
		CSVBytes:       e.csv.bytes,
		DistinctKeys:   e.keys,
		started:        started,
	}
	throughput := map[string]float64{}
	for _, a := range arms {
		ss := samples[a.name]
		var secs, cpu, rss []float64
		for _, s := range ss {
			secs = append(secs, s.Seconds)
			cpu = append(cpu, s.CPUSeconds)
			if s.PeakRSSMB > 0 {
				rss = append(rss, s.PeakRSSMB)
			}
		}
		ar := armReport{Name: a.name, What: a.what, Seconds: spreadOf(secs),
			RowsPerSec: spreadOf(perSecond(float64(e.csv.rows), secs)),
			MBPerSec:   spreadOf(perSecond(float64(e.csv.bytes)/1e6, secs)), CPUSeconds: spreadOf(cpu), Samples: ss}
		if len(rss) > 0 {
			s := spreadOf(rss)
			ar.PeakRSSMB = &s
		}
		if a.name == "P1" && ar.PeakRSSMB != nil {
			r.PeakRSS.AtN = ar.PeakRSSMB.Max
		}
		throughput[a.name] = ar.RowsPerSec.Median
		r.Arms = append(r.Arms, ar)
	}
	if ss := samples["E2E"]; len(ss) > 0 {
		var reqs, refused, bound, secs []float64
		for _, s := range ss {
			reqs, refused = append(reqs, float64(s.Requests)), append(refused, float64(s.Refused))
			bound, secs = append(bound, s.APIBoundSeconds), append(secs, s.Seconds)
		}
		b := &boundReport{Requests: spreadOf(reqs).Median, Refused: spreadOf(refused).Median,
			APIBoundSeconds: spreadOf(bound).Median, E2ESeconds: spreadOf(secs).Median}
		b.Ratio = finite(ratio(b.APIBoundSeconds, b.E2ESeconds))
		r.E2EBound = b
	}
	for _, p := range [][2]string{{"P1", "B1"}, {"P1", "B2"}, {"P1u", "B2"}, {"E2E", "P1"}, {armP1Citus, "P1"}, {armP1uCitus, "P1u"}} {
		a, okA := throughput[p[0]]
		b, okB := throughput[p[1]]
		if okA && okB {
			r.Ratios = append(r.Ratios, ratioReport{p[0] + "/" + p[1], finite(ratio(a, b))})
		}
	}
	if len(arms) == 0 {
		return r
	}
	r.Notes = []string{
		"times are the wall time of the process of each run (psql, the P1 process, etl run), start-up included; the table is emptied (TRUNCATE) and a CHECKPOINT taken before each run, untimed",
		"client CPU s is the user and system time of that process (median): the client's share of the work, PostgreSQL's not included, nor for E2E the sandbox's",
		"MB/s counts the saved CSV's bytes for every arm; E2E reads the same rows over HTTP in pages, each with its header",
		"psql reads text cells with FORCE_NOT_NULL (an empty cell is the empty string, as transform reads it) and timestamps in UTC",
		"B1: target_id, month and observed_at come from column defaults set on backlinks for the run (ALTER TABLE ... SET DEFAULT), dropped after it",
		"B2: DISTINCT ON the natural key without a tie-break (the CSV has no duplicate key; our upsert keeps a key's last row), then our upsert's ON CONFLICT DO UPDATE ... WHERE",
		"P1u: P1 again over the table P1 loaded, vacuumed and analyzed first as autovacuum would have; every row conflicts and none changes",
		"E2E: the sandbox runs in the bench process, on the same cores, generating the rows as they are read, at its default limits (10 requests/s, 10 in flight, pages of at most 10,000 lines); the job gives links no limit, so etl pages at the bound it learned in the warm-up run (api_bounds)",
		"E2E against the API bound: the requests the sandbox was asked (median of the timed runs) at the API's 10 a second, the least time any client takes for them, over E2E's median time",
		"server: durability on (fsync, synchronous_commit, full_page_writes), autovacuum off, otherwise PostgreSQL's defaults",
		"checked after every run: backlinks holds one row per distinct natural key of the CSV; after each warm-up also an order-independent checksum of its rows (all columns but observed_at) against psql's reading of the CSV",
	}
	return r
}

// finish adds the targets of issue 7 and the bench's own time.
func (r *report) finish() {
	for _, q := range r.Ratios {
		switch q.Name {
		case "P1/B1":
			r.Targets = append(r.Targets, targetReport{"P1 throughput at least 1.0 x B1 (psql's COPY into the table)", q.Value, q.Value >= 1})
		case "P1/B2":
			r.Targets = append(r.Targets, targetReport{"P1 throughput at least 0.8 x B2 (aim past 1.0)", q.Value, q.Value >= 0.8})
		case "P1u/B2":
			r.Targets = append(r.Targets, targetReport{"P1u throughput at least 1.0 x B2 (a rerun that changes nothing)", q.Value, q.Value >= 1})
		case "E2E/P1":
			r.Targets = append(r.Targets, targetReport{"E2E throughput at least 0.7 x P1", q.Value, q.Value >= 0.7})
		}
	}
	if p := r.PeakRSS; p.AtN > 0 {
		peak := max(p.AtN, p.At4N)
		r.Targets = append(r.Targets, targetReport{"P1 peak RSS under 300 MB", peak, peak < 300})
		if p.At4N > 0 {
			r.Targets = append(r.Targets, targetReport{"P1 peak RSS within 20% between N and 4N rows", p.Ratio, math.Abs(p.Ratio-1) <= 0.2})
		}
	}
	if h := r.History; h != nil && h.Links != nil {
		r.Targets = append(r.Targets, targetReport{"H: a rerun of the links upsert with 120 months stored within 1.5 x of 1 month", h.Links.RerunRatio, h.Links.RerunRatio <= 1.5})
	}
	if h := r.History; h != nil && h.Backfill != nil {
		r.Targets = append(r.Targets, targetReport{"HB: the last month's run after a 179-month backfill within 1.5 x a page of the same run on an empty warehouse", h.Backfill.Ratio, h.Backfill.Ratio <= 1.5})
	}
	r.TookSeconds = math.Round(time.Since(r.started).Seconds())
}

func (r *report) print(w io.Writer) {
	if len(r.Arms) > 0 {
		fmt.Fprintf(w, "\nmake bench: %d links of %s (%.1f MB of CSV, %d distinct keys), pages of %d, %d timed runs of each arm after a warm-up of each\n",
			r.Rows, r.Target, float64(r.CSVBytes)/1e6, r.DistinctKeys, r.PageRows, r.Reps)
	} else if r.History != nil {
		fmt.Fprintf(w, "\nmake bench: the history arms, pages of %d, %d timed runs of each after a warm-up\n", r.PageRows, r.Reps)
	} else {
		fmt.Fprintf(w, "\nmake bench: the export arm\n")
	}
	fmt.Fprintf(w, "%d cores, %s, %s, PostgreSQL %s, %s\n", r.Cores, r.Platform, r.Go, r.Postgres, r.Timestamp)
	r.printArms(w)
	r.History.print(w)
	r.Export.print(w)
	r.printTargets(w)
}

// printArms writes the table of the load arms and their ratios.
func (r *report) printArms(w io.Writer) {
	if len(r.Arms) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\tseconds: median (min-max)\trows/s: median (min-max)\tMB/s: median (min-max)\tclient CPU s\tpeak RSS MB\twhat")
	for _, a := range r.Arms {
		rss := "-"
		if a.PeakRSSMB != nil {
			rss = fmt.Sprintf("%.0f (%.0f-%.0f)", a.PeakRSSMB.Median, a.PeakRSSMB.Min, a.PeakRSSMB.Max)
		}
		fmt.Fprintf(tw, "%s\t%.2f (%.2f-%.2f)\t%s (%s-%s)\t%.1f (%.1f-%.1f)\t%.2f\t%s\t%s\n", a.Name,
			a.Seconds.Median, a.Seconds.Min, a.Seconds.Max,
			thousands(a.RowsPerSec.Median), thousands(a.RowsPerSec.Min), thousands(a.RowsPerSec.Max),
			a.MBPerSec.Median, a.MBPerSec.Min, a.MBPerSec.Max, a.CPUSeconds.Median, rss, a.What)
	}
	tw.Flush()
	if len(r.Ratios) > 0 {
		var parts []string
		for _, q := range r.Ratios {
			parts = append(parts, fmt.Sprintf("%s %.2f", q.Name, q.Value))
		}
		fmt.Fprintf(w, "\nthroughput ratios (of the medians): %s\n", strings.Join(parts, "   "))
	}
	if b := r.E2EBound; b != nil {
		fmt.Fprintf(w, "E2E against the API bound: %.0f requests (%.0f refused) take at least %.1f s at the API's %d a second; E2E took %.2f s (API bound / E2E %.2f)\n",
			b.Requests, b.Refused, b.APIBoundSeconds, catalog.AccountRequestsPerSecond, b.E2ESeconds, b.Ratio)
	}
	if p := r.PeakRSS; p.AtN > 0 {
		fmt.Fprintf(w, "peak RSS of P1: %.0f MB at %d rows", p.AtN, r.Rows)
		if p.At4N > 0 {
			fmt.Fprintf(w, ", %.0f MB at %d rows (4N/N %.2f)", p.At4N, 4*r.Rows, p.Ratio)
		}
		fmt.Fprintln(w)
	}
}

// printTargets writes the targets met or not, and the notes.
func (r *report) printTargets(w io.Writer) {
	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "\ntargets (issues 7 and 18):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, t := range r.Targets {
			met := "NOT MET"
			if t.Met {
				met = "met"
			}
			fmt.Fprintf(tw, "  %s\t%.2f\t%s\n", t.Target, t.Value, met)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nnotes:")
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  - %s\n", n)
	}
}

func (r *report) write(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// thousands formats x rounded, with a ',' every three digits.
func thousands(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// finite is x, or 0 when x is NaN or infinite (which JSON cannot hold).
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
