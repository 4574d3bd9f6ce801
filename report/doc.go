// Package report owns the offline HTML report of the warehouse (etl
// report, and /report of etl schedule --http): Load reads the analytic
// views of migration 0024 (target_authority, link_changes,
// ref_domain_changes, link_velocity, competitor_gap, spend_by_day,
// spend_by_month, listing_problem_weeks, listing_open_problems) and runs,
// in one read-only transaction as etl_analyst, so a report shows nothing
// an analyst could not read; Render writes one self-contained HTML
// document.
//
// # The document
//
// Every chart is inline SVG with a title, labelled axes with their units,
// and all its numbers in a table beside it (for screen readers and for
// copying; a long table scrolls): the link velocity's table has every day
// its line draws, the spikes marked. A series of one point (one month of
// history) is drawn as a dot. The one font, Liberation Sans, is embedded
// once as a data URL in the page's style, which the SVG text names, so the
// file renders the same on every machine; there is no JavaScript and no
// external reference, so it opens offline and can be mailed. Values from
// the warehouse are escaped: by html/template in the page, by the SVG
// writer (which escapes all text it draws) in the charts. A character of
// a value that is not graphic (a control character, a right-to-left
// override U+202E or another bidirectional control) shows as its Go escape
// (\u202e), and each value on the page is isolated in a <bdi>, so that no
// value reorders the text around it (the links of the navigation, a
// caption).
//
// Per target, the Config.Top largest by backlinks that have history in the
// months covered get charts of their own (authority score; backlinks and
// referring domains; new and lost links per month; link velocity with its
// spikes), those without history passed over; every target asked for has
// a row in the targets table. So a warehouse of thousands of targets makes
// a report of bounded charts. Each target set has its competitor gap in
// the newest month its matrix holds within the months covered; each run
// its units from the ledger (as spend_by_run), also a run killed mid-way.
//
// # Why gonum.org/v1/plot
//
// The charts are drawn by gonum.org/v1/plot through its SVG back end
// (vg/vgsvg) rather than by hand: a plotting library of the Gonum project,
// pure Go (no cgo, no browser, no JavaScript runtime), BSD-licensed,
// maintained since 2012, whose SVG canvas escapes text and ships the
// Liberation fonts (SIL Open Font License) as Go bytes we can embed.
// Its plotters (lines, bars, scatter, nominal and custom tick axes, axis
// labels, legends) cover every chart here. github.com/go-analyze/charts
// was the other candidate, younger (v0.x) and themed for dashboards; we
// preferred the library with the longer record. go-echarts renders
// through JavaScript loaded from a CDN, which an offline report cannot.
package report
