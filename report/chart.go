package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart sizes: wide enough for 24 months of labels, small enough for two
// side by side with their tables on a laptop screen.
const (
	chartW = 15 * vg.Centimeter
	chartH = 7.5 * vg.Centimeter
)

// Colours (Okabe-Ito, distinguishable with the common colour blindnesses).
var (
	blue   = color.RGBA{0, 114, 178, 255}
	orange = color.RGBA{230, 159, 0, 255}
	red    = color.RGBA{213, 94, 0, 255}
	green  = color.RGBA{0, 158, 115, 255}
)

// newPlot is a plot with the report's title, axis labels and font
// (Liberation Sans, which the HTML embeds once).
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	for _, s := range []*draw.TextStyle{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		s.Font.Variant = "Sans"
	}
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Legend.Top = true
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Y.Tick.Marker = intTicks{}
	return p
}

// svgOf draws p as an SVG element for inlining into HTML: without the XML
// prelude, and sized by the page (its viewBox keeps the proportions). A
// plot with a legend gets headroom above its data for it.
func svgOf(p *plot.Plot, legend bool) (template.HTML, error) {
	if legend {
		p.Y.Max *= 1.35
	}
	c := vgsvg.New(chartW, chartH)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("report: drawing %q: %w", p.Title.Text, err)
	}
	s := b.String()
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", fmt.Errorf("report: drawing %q: no <svg> element", p.Title.Text)
	}
	s = s[i:]
	// role and aria-label: the title for screen readers (the table beside
	// holds the numbers).
	s = strings.Replace(s, "<svg ", fmt.Sprintf(`<svg role="img" aria-label="%s" class="chart" `, template.HTMLEscapeString(p.Title.Text)), 1)
	return template.HTML(s), nil // #nosec G203 -- vgsvg escapes every text it draws (html.EscapeString)
}

// monthX is the x value of a month or day: Unix seconds.
func monthX(t time.Time) float64 { return float64(t.Unix()) }

// monthTicks labels the first day of months, at most about 8 of them.
type monthTicks struct{}

func (monthTicks) Ticks(lo, hi float64) []plot.Tick {
	from := time.Unix(int64(lo), 0).UTC()
	to := time.Unix(int64(hi), 0).UTC()
	m := time.Date(from.Year(), from.Month(), 1, 0, 0, 0, 0, time.UTC)
	if m.Before(from) {
		m = m.AddDate(0, 1, 0)
	}
	n := 0
	for t := m; !t.After(to); t = t.AddDate(0, 1, 0) {
		n++
	}
	step := max(1, (n+7)/8)
	var ticks []plot.Tick
	for i, t := 0, m; !t.After(to); i, t = i+1, t.AddDate(0, 1, 0) {
		label := ""
		if i%step == 0 {
			label = t.Format("2006-01")
		}
		ticks = append(ticks, plot.Tick{Value: monthX(t), Label: label})
	}
	return ticks
}

// intTicks are plot.DefaultTicks without fractions, and with thousands
// written out.
type intTicks struct{}

func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(lo, hi) {
		if t.Label != "" && t.Value != math.Trunc(t.Value) {
			continue
		}
		if t.Label != "" {
			t.Label = thousands(int64(t.Value))
		}
		out = append(out, t)
	}
	return out
}

// thousands writes n with thin spaces between groups of three digits.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// dots is a scatter of points, in colour c and of radius r, named in
// the legend.
func dots(p *plot.Plot, name string, c color.Color, r vg.Length, xys plotter.XYs) error {
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Color, sc.GlyphStyle.Radius = c, r
	p.Add(sc)
	p.Legend.Add(name, sc)
	return nil
}

// line is a line of points, in colour c. A line of one point (one month
// of history, one day) draws nothing, so its point is drawn as a dot, and
// the x axis spans a month on each side of it.
func line(p *plot.Plot, name string, c color.Color, xys plotter.XYs) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color, l.Width = c, vg.Points(1.5)
	p.Add(l)
	var dot *plotter.Scatter
	if len(xys) == 1 {
		if dot, err = plotter.NewScatter(xys); err != nil {
			return err
		}
		dot.GlyphStyle.Color, dot.GlyphStyle.Radius, dot.GlyphStyle.Shape = c, vg.Points(3), draw.CircleGlyph{}
		p.Add(dot)
		const month = 31 * 24 * 3600
		p.X.Min, p.X.Max = math.Min(p.X.Min, xys[0].X-month), math.Max(p.X.Max, xys[0].X+month)
	}
	if name != "" {
		if dot != nil {
			p.Legend.Add(name, l, dot)
		} else {
			p.Legend.Add(name, l)
		}
	}
	return nil
}

// capLine is a dashed horizontal line at a cap, across [x0, x1].
func capLine(p *plot.Plot, name string, cap int64, x0, x1 float64) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: float64(cap)}, {X: x1, Y: float64(cap)}})
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = red, vg.Points(1.2), []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// bars adds one or more series of bars over nominal x labels, side by
// side; labels past about 12 are thinned out.
func bars(p *plot.Plot, labels []string, series []barSeries) error {
	w := vg.Points(math.Max(2, math.Min(14, 300/float64(max(1, len(labels)*len(series))))))
	for i, s := range series {
		b, err := plotter.NewBarChart(s.values, w)
		if err != nil {
			return err
		}
		b.Color, b.LineStyle.Width = s.color, 0
		b.Offset = w * vg.Length(float64(i)-float64(len(series)-1)/2)
		p.Add(b)
		p.Legend.Add(s.name, b)
	}
	shown := make([]string, len(labels))
	step := max(1, (len(labels)+7)/8)
	for i, l := range labels {
		if i%step == 0 {
			shown[i] = l
		}
	}
	p.NominalX(shown...)
	return nil
}

type barSeries struct {
	name   string
	color  color.Color
	values plotter.Values
}
