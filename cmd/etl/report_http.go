package main

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seoetl/etl/report"
)

// reportParams are the query parameters of /report, sorted; any other is
// a 400 (a misspelt ?month=3 answered the default report).
var reportParams = []string{"job", "months", "targets", "top"}

// reportHandler serves GET /report: the report of etl report, drawn anew
// for each request from the warehouse, read as etl_analyst in a read-only
// transaction. Query parameters as the flags: months, top, job, targets
// (comma-separated, and may be repeated); config makes the Config of a job and targets (from
// the job spec as last loaded: the job's targets, the caps).
// A bad parameter, an unknown one or one given twice is a 400 naming it; a failure to read the warehouse a
// 500 whose message passes sanitize (it may carry the database URL).
func reportHandler(db report.Querier, config func(job string, targets []string) (report.Config, error), sanitize func(string) string, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		for name, values := range q {
			switch {
			case !slices.Contains(reportParams, name):
				http.Error(w, "unknown parameter "+strconv.Quote(name)+" (known: "+strings.Join(reportParams, ", ")+")", http.StatusBadRequest)
				return
			case len(values) > 1 && name != "targets":
				http.Error(w, name+" given twice", http.StatusBadRequest)
				return
			}
		}
		_, given := q["targets"]
		targets, err := reportTargets(q["targets"], given)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		cfg, err := config(q.Get("job"), targets)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, p := range []struct {
			name string
			into *int
		}{{"months", &cfg.Months}, {"top", &cfg.Top}} {
			if v := q.Get(p.name); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					http.Error(w, p.name+" must be a whole number of at least 1, got "+strconv.Quote(v), http.StatusBadRequest)
					return
				}
				*p.into = n
			}
		}
		d, err := report.Load(r.Context(), db, cfg)
		if err != nil {
			status := http.StatusInternalServerError
			var bad *report.ConfigError
			if errors.As(err, &bad) {
				status = http.StatusBadRequest
			}
			msg := sanitize(err.Error())
			log.LogAttrs(r.Context(), slog.LevelWarn, "report failed", slog.String("error", msg))
			http.Error(w, msg, status)
			return
		}
		var b bytes.Buffer
		if err := report.Render(&b, d); err != nil {
			http.Error(w, sanitize(err.Error()), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; font-src data:; img-src data:")
		http.ServeContent(w, r, "report.html", time.Time{}, bytes.NewReader(b.Bytes()))
	})
}
