package report

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/seoetl/etl/internal/plain"
)

// figure is a chart with its numbers as a table beside it.
type figure struct {
	Title text
	SVG   template.HTML // empty: no data, Empty says why
	Empty string
	Table table
}

// table is a figure's numbers, every one of them (a long table scrolls):
// Num marks the columns right-aligned, Data those whose values come from
// the warehouse as text (a url, a job, a domain), which are shown
// isolated (shown).
type table struct {
	Head []string
	Num  []bool
	Data []bool
	Rows [][]string
}

// section is a heading and its figures.
type section struct {
	ID      string
	Title   text
	Intro   text
	Figures []figure
}

// page is what the template renders.
type page struct {
	Title     text
	Font      template.URL
	Generated string
	From, To  string
	Targets   table
	Sections  []section
}

// text is prose of ours with values from the warehouse in it, in the two
// forms a page shows it: Plain for the SVG writer, which escapes it, and
// for attributes and the <title>; HTML for the page's text, each value in
// a <bdi> of its own. Both show each value as shown does.
type text struct {
	Plain string
	HTML  template.HTML
}

// textf is format (prose of ours, every %s a value) with values put in.
func textf(format string, values ...string) text {
	parts := strings.Split(format, "%s")
	if len(parts) != len(values)+1 {
		panic(fmt.Sprintf("report: textf(%q) with %d values", format, len(values)))
	}
	var p, h strings.Builder
	for i, part := range parts {
		p.WriteString(part)
		h.WriteString(template.HTMLEscapeString(part))
		if i < len(values) {
			v := shown(values[i])
			p.WriteString(v)
			h.WriteString("<bdi>" + template.HTMLEscapeString(v) + "</bdi>")
		}
	}
	return text{Plain: p.String(), HTML: template.HTML(h.String())} // #nosec G203 -- every part escaped above
}

// shown is a value from the warehouse as the report shows it: a
// character that is not graphic (a control character, a right-to-left
// override U+202E or another bidirectional control, a zero-width one)
// as its Go escape (\u202e), so that it can reorder nothing around it,
// nor hide in the value. The page isolates each value besides (<bdi>),
// so that the letters of a right-to-left script reorder nothing beside it
// either.
func shown(s string) string { return plain.Text(s, 0) }

// Render writes the report of d as one self-contained HTML document: the
// charts are inline SVG, the font is embedded, nothing is fetched and
// nothing runs (no JavaScript). Every value from the warehouse is escaped
// by html/template (tables) or by the SVG writer (charts).
func Render(w io.Writer, d *Data) error {
	pg := page{
		Title:     textf("etl report"),
		Font:      template.URL("data:font/ttf;base64," + base64.StdEncoding.EncodeToString(liberationsansregular.TTF)), // #nosec G203 -- our own bytes
		Generated: d.Generated.Format(time.RFC3339),
		From:      d.From.Format("2006-01"),
		To:        d.To.Format("2006-01"),
	}
	if d.Job != "" {
		pg.Title = textf("etl report: job %s", d.Job)
	}
	pg.Targets = table{Head: []string{"target", "scope", "score", "backlinks", "referring domains", "charts"},
		Num: []bool{false, false, true, true, true, false}, Data: []bool{true}}
	for _, t := range d.Targets {
		l := t.Latest()
		charts := ""
		if t.Charted {
			charts = "below"
		}
		pg.Targets.Rows = append(pg.Targets.Rows, []string{t.URL, t.Scope, num(l.Score), num(l.Backlinks), num(l.RefDomains), charts})
	}
	for _, t := range d.Targets {
		if !t.Charted {
			continue
		}
		s, err := targetSection(t)
		if err != nil {
			return err
		}
		pg.Sections = append(pg.Sections, s)
	}
	for _, build := range []func(*Data) (section, error){gapSection, spendSection, runsSection, listingsSection} {
		s, err := build(d)
		if err != nil {
			return err
		}
		pg.Sections = append(pg.Sections, s)
	}
	return pageTemplate.Execute(w, pg)
}

func num(n int64) string { return strconv.FormatInt(n, 10) }

func month(t time.Time) string { return t.Format("2006-01") }

func day(t time.Time) string { return t.Format(time.DateOnly) }

// targetSection draws one target's authority, backlinks, new and lost
// links, and link velocity.
func targetSection(t Target) (section, error) {
	s := section{ID: fmt.Sprintf("target-%d", t.ID), Title: textf("%s ("+t.Scope+")", t.URL)}
	for _, draw := range []func(Target) (figure, error){authorityFigure, backlinksFigure, changesFigure, velocityFigure} {
		f, err := draw(t)
		if err != nil {
			return s, err
		}
		s.Figures = append(s.Figures, f)
	}
	return s, nil
}

// authorityFigure draws the authority score of t by month.
func authorityFigure(t Target) (figure, error) {
	f := figure{Title: textf("Authority score of %s", t.URL), Table: table{Head: []string{"month", "score"}, Num: []bool{false, true}}}
	var score plotter.XYs
	for _, a := range t.Authority {
		score = append(score, plotter.XY{X: monthX(a.Month), Y: float64(a.Score)})
		f.Table.Rows = append(f.Table.Rows, []string{month(a.Month), num(a.Score)})
	}
	if len(score) == 0 {
		f.Empty = "No overview or summary history in these months."
		return f, nil
	}
	p := newPlot(f.Title.Plain, "month", "authority score (0-100)")
	p.X.Tick.Marker = monthTicks{}
	p.Y.Max = 100
	if err := line(p, "", blue, score); err != nil {
		return f, err
	}
	return f.withSVG(p, false)
}

// backlinksFigure draws the backlinks and referring domains of t by
// month.
func backlinksFigure(t Target) (figure, error) {
	f := figure{Title: textf("Backlinks and referring domains of %s", t.URL), Table: table{Head: []string{"month", "backlinks", "referring domains"}, Num: []bool{false, true, true}}}
	var links, domains plotter.XYs
	for _, a := range t.Authority {
		links = append(links, plotter.XY{X: monthX(a.Month), Y: float64(a.Backlinks)})
		domains = append(domains, plotter.XY{X: monthX(a.Month), Y: float64(a.RefDomains)})
		f.Table.Rows = append(f.Table.Rows, []string{month(a.Month), num(a.Backlinks), num(a.RefDomains)})
	}
	if len(links) == 0 {
		f.Empty = "No overview or summary history in these months."
		return f, nil
	}
	p := newPlot(f.Title.Plain, "month", "count")
	p.X.Tick.Marker = monthTicks{}
	if err := line(p, "backlinks", blue, links); err != nil {
		return f, err
	}
	if err := line(p, "referring domains", orange, domains); err != nil {
		return f, err
	}
	return f.withSVG(p, true)
}

// changesFigure draws the new and lost links of t per month.
func changesFigure(t Target) (figure, error) {
	f := figure{Title: textf("New and lost links per month, %s", t.URL), Table: table{Head: []string{"month", "links stored", "new", "lost"}, Num: []bool{false, true, true, true}}}
	var labels []string
	var newV, lostV plotter.Values
	for _, c := range t.Changes {
		labels = append(labels, month(c.Month))
		newV, lostV = append(newV, float64(c.NewLinks)), append(lostV, float64(c.LostLinks))
		f.Table.Rows = append(f.Table.Rows, []string{month(c.Month), num(c.Links), num(c.NewLinks), num(c.LostLinks)})
	}
	if len(labels) == 0 {
		f.Empty = "No links stored in these months."
		return f, nil
	}
	p := newPlot(f.Title.Plain, "month fetched", "links")
	if err := bars(p, labels, []barSeries{{"new (first seen in the month)", green, newV}, {"lost in the month", red, lostV}}); err != nil {
		return f, err
	}
	return f.withSVG(p, true)
}

// velocityFigure draws the link velocity of t: the rolling 30-day sum of
// the links first seen each day, and the spike days. Every day the chart
// draws is a row of its table, the spikes marked.
func velocityFigure(t Target) (figure, error) {
	f := figure{Title: textf("Link velocity of %s", t.URL), Table: table{Head: []string{"day", "new links", "30-day sum", "spike"}, Num: []bool{false, true, true, false}}}
	var rolling, spikes plotter.XYs
	for _, v := range t.Velocity {
		rolling = append(rolling, plotter.XY{X: monthX(v.Day), Y: float64(v.New30d)})
		spike := ""
		if v.Spike {
			spikes = append(spikes, plotter.XY{X: monthX(v.Day), Y: float64(v.NewLinks)})
			spike = "spike"
		}
		f.Table.Rows = append(f.Table.Rows, []string{day(v.Day), num(v.NewLinks), num(v.New30d), spike})
	}
	if len(rolling) == 0 {
		f.Empty = "No link first seen in these months."
		return f, nil
	}
	p := newPlot(f.Title.Plain, "day first seen", "links first seen")
	p.X.Tick.Marker = monthTicks{}
	if err := line(p, "rolling 30-day sum", blue, rolling); err != nil {
		return f, err
	}
	if len(spikes) > 0 {
		if err := dots(p, "spike day (> 3 sd above its trailing 30 days): its new links", red, 3, spikes); err != nil {
			return f, err
		}
	}
	return f.withSVG(p, true)
}

// withSVG is f with p drawn as its chart (legend as svgOf's).
func (f figure) withSVG(p *plot.Plot, legend bool) (figure, error) {
	var err error
	f.SVG, err = svgOf(p, legend)
	return f, err
}

// gapSection draws the best domains of each set's competitor gap.
func gapSection(d *Data) (section, error) {
	s := section{ID: "gap", Title: textf("Competitor gap")}
	if len(d.Gap) == 0 {
		s.Intro = textf("No matrix fetched in these months.")
		return s, nil
	}
	s.Intro = textf("Domains that link to a rival of the set and not to its first target, best first, each set in the newest month of its matrix.")
	for _, g := range d.Gap {
		f := figure{Title: textf("Competitor gap of %s (set %s), matrix of "+month(g.Month), g.Target, g.Name),
			Table: table{Head: []string{"rank", "domain", "domain score", "rivals linking", "backlinks to rivals"}, Num: []bool{true, false, true, true, true}, Data: []bool{false, true}}}
		var names []string
		var scores plotter.Values
		for i := len(g.Domains) - 1; i >= 0; i-- { // best on top
			names = append(names, shown(g.Domains[i].Domain))
			scores = append(scores, float64(g.Domains[i].Score))
		}
		for _, x := range g.Domains {
			f.Table.Rows = append(f.Table.Rows, []string{num(x.Rank), x.Domain, num(x.Score), num(x.RivalsLinking), num(x.RivalBacklinks)})
		}
		p := newPlot(f.Title.Plain, "domain score (0-100)", "")
		b, err := plotter.NewBarChart(scores, vg.Points(11))
		if err != nil {
			return s, err
		}
		b.Horizontal, b.Color, b.LineStyle.Width = true, blue, 0
		p.Add(b)
		p.X.Min, p.X.Max = 0, 100
		p.X.Tick.Marker = intTicks{}
		p.NominalY(names...)
		if f.SVG, err = svgOf(p, false); err != nil {
			return s, err
		}
		s.Figures = append(s.Figures, f)
	}
	return s, nil
}

// spendSection draws units per day and per month against the caps.
func spendSection(d *Data) (section, error) {
	s := section{ID: "spend", Title: textf("API units spent")}
	const intro = "From the unit ledger: a request counts at what it cost, or at its reservation while unsettled. Days and months are UTC."
	s.Intro = textf(intro)
	if d.Job != "" {
		s.Intro = textf(intro+" Job %s only; the installation's daily and monthly caps count every job.", d.Job)
	}
	// Per day, all jobs shown together.
	f := figure{Title: textf("API units per day"), Table: table{Head: []string{"day", "requests", "units"}, Num: []bool{false, true, true}}}
	perDay := map[time.Time][2]int64{}
	var days []time.Time
	for _, x := range d.SpendDays {
		if _, ok := perDay[x.Period]; !ok {
			days = append(days, x.Period)
		}
		v := perDay[x.Period]
		perDay[x.Period] = [2]int64{v[0] + x.Requests, v[1] + x.Units}
	}
	var xys plotter.XYs
	for _, dd := range days {
		xys = append(xys, plotter.XY{X: monthX(dd), Y: float64(perDay[dd][1])})
		f.Table.Rows = append(f.Table.Rows, []string{day(dd), num(perDay[dd][0]), num(perDay[dd][1])})
	}
	if len(xys) == 0 {
		f.Empty = "Nothing spent in these months."
	} else {
		p := newPlot(f.Title.Plain, "day (UTC)", "API units")
		p.X.Tick.Marker = monthTicks{}
		err := dots(p, "units spent that day", blue, 2.5, xys)
		if err != nil {
			return s, err
		}
		if d.Caps.Daily > 0 {
			if err := capLine(p, "daily cap "+thousands(d.Caps.Daily), d.Caps.Daily, monthX(d.From), monthX(d.To.AddDate(0, 1, -1))); err != nil {
				return s, err
			}
		}
		if f.SVG, err = svgOf(p, true); err != nil {
			return s, err
		}
	}
	s.Figures = append(s.Figures, f)

	// Per month, per job.
	f = figure{Title: textf("API units per month"), Table: table{Head: []string{"month", "job", "runs", "requests", "units", "job's monthly cap"},
		Num: []bool{false, false, true, true, true, true}, Data: []bool{false, true}}}
	var labels []string
	idx := map[time.Time]int{}
	for m := d.From; !m.After(d.To); m = m.AddDate(0, 1, 0) {
		idx[m] = len(labels)
		labels = append(labels, month(m))
	}
	total := make(plotter.Values, len(labels))
	for _, x := range d.SpendMonth {
		total[idx[x.Period]] += float64(x.Units)
		capText := ""
		if c := d.Caps.JobMonthly[x.Job]; c > 0 {
			capText = num(c)
		}
		f.Table.Rows = append(f.Table.Rows, []string{month(x.Period), x.Job, num(x.Runs), num(x.Requests), num(x.Units), capText})
	}
	if len(d.SpendMonth) == 0 {
		f.Empty = "Nothing spent in these months."
	} else {
		p := newPlot(f.Title.Plain, "month (UTC)", "API units")
		name := "units, every job"
		if d.Job != "" {
			name = "units of job " + shown(d.Job)
		}
		if err := bars(p, labels, []barSeries{{name, blue, total}}); err != nil {
			return s, err
		}
		hi := float64(len(labels)) - 0.5
		if d.Caps.Monthly > 0 {
			if err := capLine(p, "monthly cap (every job) "+thousands(d.Caps.Monthly), d.Caps.Monthly, -0.5, hi); err != nil {
				return s, err
			}
		}
		if c := d.Caps.JobMonthly[d.Job]; d.Job != "" && c > 0 {
			if err := capLine(p, "monthly cap of job "+shown(d.Job)+" "+thousands(c), c, -0.5, hi); err != nil {
				return s, err
			}
		}
		var err error
		if f.SVG, err = svgOf(p, true); err != nil {
			return s, err
		}
	}
	s.Figures = append(s.Figures, f)
	return s, nil
}

// runsSection draws the units and rows of each run, with its status and
// duration in the table.
func runsSection(d *Data) (section, error) {
	s := section{ID: "runs", Title: textf("Runs")}
	f := figure{Title: textf("API units per run"), Table: table{
		Head: []string{"run", "job", "trigger", "status", "started (UTC)", "duration", "rows", "units"},
		Num:  []bool{true, false, false, false, false, true, true, true}, Data: []bool{false, true}}}
	var labels []string
	var units plotter.Values
	for _, r := range d.Runs {
		labels = append(labels, num(r.ID))
		units = append(units, float64(r.Units))
		dur := "running"
		if !r.Unfinished {
			dur = r.Duration.Round(time.Millisecond).String()
		}
		f.Table.Rows = append(f.Table.Rows, []string{num(r.ID), r.Job, r.Trigger, r.Status, r.Started.UTC().Format("2006-01-02 15:04"), dur, num(r.Rows), num(r.Units)})
	}
	if len(d.Runs) == 0 {
		f.Empty = "No run started in these months."
	} else {
		p := newPlot(f.Title.Plain, "run", "API units")
		if err := bars(p, labels, []barSeries{{"units spent by the run", blue, units}}); err != nil {
			return s, err
		}
		// Each job's per_run cap, where the runs are all of one job.
		job := d.Runs[0].Job
		for _, r := range d.Runs {
			if r.Job != job {
				job = ""
			}
		}
		if c := d.Caps.PerRun[job]; job != "" && c > 0 {
			if err := capLine(p, "per-run cap of job "+shown(job)+" "+thousands(c), c, -0.5, float64(len(labels))-0.5); err != nil {
				return s, err
			}
		}
		var err error
		if f.SVG, err = svgOf(p, true); err != nil {
			return s, err
		}
	}
	s.Figures = append(s.Figures, f)
	return s, nil
}

// listingsSection draws listing problems opened and resolved per week,
// and tables the problems open now.
func listingsSection(d *Data) (section, error) {
	s := section{ID: "listings", Title: textf("Listing problems")}
	f := figure{Title: textf("Listing problems opened and resolved per week"), Table: table{
		Head: []string{"week (Monday)", "account", "opened", "resolved"}, Num: []bool{false, false, true, true}, Data: []bool{false, true}}}
	idx := map[time.Time]int{}
	var labels []string
	var weeks []time.Time
	for _, w := range d.Weeks {
		if _, ok := idx[w.Week]; !ok {
			weeks = append(weeks, w.Week)
			idx[w.Week] = 0
		}
		f.Table.Rows = append(f.Table.Rows, []string{day(w.Week), w.Account, num(w.Opened), num(w.Resolved)})
	}
	sortTimes(weeks)
	for i, w := range weeks {
		idx[w] = i
		labels = append(labels, day(w))
	}
	opened, resolved := make(plotter.Values, len(weeks)), make(plotter.Values, len(weeks))
	for _, w := range d.Weeks {
		opened[idx[w.Week]] += float64(w.Opened)
		resolved[idx[w.Week]] += float64(w.Resolved)
	}
	if len(weeks) == 0 {
		f.Empty = "No listing problem in these months."
	} else {
		p := newPlot(f.Title.Plain, "week (UTC, from Monday)", "problems")
		if err := bars(p, labels, []barSeries{{"opened", red, opened}, {"resolved", green, resolved}}); err != nil {
			return s, err
		}
		var err error
		if f.SVG, err = svgOf(p, true); err != nil {
			return s, err
		}
	}
	s.Figures = append(s.Figures, f)
	// Open at each week's end.
	f = figure{Title: textf("Listing problems open at the end of each week"), Table: table{
		Head: []string{"week (Monday)", "open at its end"}, Num: []bool{false, true}}}
	var openXY plotter.XYs
	for _, w := range d.OpenWeeks {
		openXY = append(openXY, plotter.XY{X: monthX(w.Week), Y: float64(w.Open)})
		f.Table.Rows = append(f.Table.Rows, []string{day(w.Week), num(w.Open)})
	}
	if len(openXY) == 0 {
		f.Empty = "No listing problem in these months."
	} else {
		p := newPlot(f.Title.Plain, "week (UTC, from Monday)", "problems open")
		p.X.Tick.Marker = monthTicks{}
		if err := line(p, "open at the week's end, every account", orange, openXY); err != nil {
			return s, err
		}
		var err error
		if f.SVG, err = svgOf(p, true); err != nil {
			return s, err
		}
	}
	s.Figures = append(s.Figures, f)
	open := figure{Title: textf("Listing problems open now"), Table: table{
		Head: []string{"account", "code", "open", "locations", "open > 7 days", "open > 30 days"}, Num: []bool{false, false, true, true, true, true}, Data: []bool{true, true}}}
	var openV plotter.Values
	var codes []string
	for _, o := range d.Open {
		open.Table.Rows = append(open.Table.Rows, []string{o.Account, o.Code, num(o.Problems), num(o.Locations), num(o.Over7Days), num(o.Over30d)})
		codes = append(codes, shown(o.Account)+" "+shown(o.Code))
		openV = append(openV, float64(o.Problems))
	}
	if len(d.Open) == 0 {
		open.Empty = "No listing problem open."
	} else {
		p := newPlot(open.Title.Plain, "account and error code", "open problems")
		if err := bars(p, codes, []barSeries{{"open problems", orange, openV}}); err != nil {
			return s, err
		}
		var err error
		if open.SVG, err = svgOf(p, true); err != nil {
			return s, err
		}
	}
	s.Figures = append(s.Figures, open)
	return s, nil
}

func sortTimes(ts []time.Time) {
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"right": func(t table, i int) bool { return i < len(t.Num) && t.Num[i] },
	"data":  func(t table, i int) bool { return i < len(t.Data) && t.Data[i] },
	"shown": shown,
}).Parse(pageHTML))
