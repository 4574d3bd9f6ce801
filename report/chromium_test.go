package report_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/report"
)

var screenshot = flag.String("screenshot", "", "also write the charts of the report's largest target, as Chromium shows them, to this PNG (make screenshot)")

// chromium is the path of Debian's chromium (make test installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed: `make test` installs it (apt-get install chromium, as root); install it by hand otherwise")
	return ""
}

// figureInBrowser is what Chromium shows of a figure.
type figureInBrowser struct {
	Title  string     `json:"title"`
	SVG    bool       `json:"svg"`
	Width  float64    `json:"width"`
	Marks  int        `json:"marks"` // paths drawn inside the plot area
	Tables [][]string `json:"rows"`
}

// TestReportInChromium opens the report of 24 months of three targets in
// headless Chromium: no console message, exception or failed load; every
// chart is an SVG laid out at a visible size with its marks drawn; the
// embedded font is the one loaded; the numbers of a table are the view's.
// A screenshot of the whole page is saved among the test's artifacts
// (go test -artifacts), or in its temporary folder.
func TestReportInChromium(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	pool, spec := loadWarehouse(t, 24)
	d, err := report.Load(t.Context(), pool, report.Config{Months: 24, Caps: caps(spec), Now: func() time.Time { return reportNow }})
	require.NoError(t, err)
	dir := t.ArtifactDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	require.NoError(t, report.Render(&b, d))
	require.NoError(t, os.WriteFile(page, b.Bytes(), 0o644))

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1400, 1000), chromedp.Flag("lang", "en-US"))
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// Every console message, exception and browser log entry, from before
	// the page loads until the tab closes.
	messages := chromedp.Console(ctx)
	var problems []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			problems = append(problems, m.String())
		}
	}()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitReady("body")))
	fonts, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`document.fonts.ready.then(() => [...document.fonts].map(f => f.family + " " + f.status))`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	figs, err := chromedp.Run(ctx, chromedp.Evaluate[[]figureInBrowser](`[...document.querySelectorAll("figure")].map(f => {
		const s = f.querySelector("svg");
		return {
			title: f.querySelector("figcaption").textContent,
			svg: s !== null,
			width: s ? s.getBoundingClientRect().width : 0,
			marks: s ? s.querySelectorAll("path").length : 0,
			rows: [...f.querySelectorAll("table tr")].map(r => [...r.children].map(c => c.textContent)),
		};
	})`))
	require.NoError(t, err)
	// The top of the report, and the charts of the largest target: what
	// the README shows.
	top, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(`section[id^="target-"]`)))
	require.NoError(t, err)
	whole, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	cancel()
	<-done
	require.Empty(t, problems, "the browser reported problems")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.png"), whole, 0o644))
	t.Logf("report and its screenshot: %s", dir)
	if *screenshot != "" {
		require.NoError(t, os.WriteFile(*screenshot, top, 0o644))
	}

	require.Equal(t, []string{"Liberation Sans loaded"}, fonts, "the embedded font is loaded")
	require.Len(t, figs, 3*4+1+2+1+3)
	for _, f := range figs {
		require.True(t, f.SVG, "%s: a chart", f.Title)
		require.Greater(t, f.Width, 300.0, "%s: laid out at a visible size", f.Title)
		require.Greater(t, f.Marks, 10, "%s: data drawn", f.Title)
		require.Greater(t, len(f.Tables), 1, "%s: its numbers beside it", f.Title)
	}
	// The numbers a reader sees are the view's.
	from := time.Date(2024, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range figs {
		switch {
		case f.Title == "API units per month":
			require.Equal(t, viewRows(t, pool, `SELECT to_char(month, 'YYYY-MM'), job, runs, requests, units, '200000' FROM spend_by_month WHERE month >= $1 ORDER BY month`, from), f.Tables[1:])
		case strings.HasPrefix(f.Title, "New and lost links per month, "):
			url := strings.TrimPrefix(f.Title, "New and lost links per month, ")
			require.Equal(t, viewRows(t, pool, `SELECT to_char(month, 'YYYY-MM'), links, new_links, lost_links FROM link_changes WHERE url = $1 AND month >= $2 ORDER BY month`, url, from), f.Tables[1:])
		}
	}
}
