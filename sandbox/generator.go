package sandbox

import (
	"bufio"
	"net/http"
	"strconv"

	"github.com/seoetl/etl/catalog"
)

// A generator answers a validated request to one endpoint. Serving another
// catalog endpoint is adding a generator to generators: routing, auth,
// validation, formats, usage and logging are shared.
type generator func(seed int64, q *request) (*answer, *apiError)

// generators maps catalog endpoint names to their generator; New checks
// that every endpoint of the catalog has one.
var generators = map[string]generator{
	"overview":        overview,
	"summary":         summary,
	"links":           links,
	"ref-domains":     refDomains,
	"ref-ips":         refIPs,
	"pages":           indexedPages,
	"anchors":         anchors,
	"score-profile":   scoreProfileOf,
	"competitors":     competitors,
	"comparison":      comparison,
	"matrix":          matrix,
	"keyword-metrics": keywordMetrics,
}

// answer is what a generator returns: the meta echoes, and rows produced on
// demand so that a body of millions of rows is never held in memory.
type answer struct {
	echoes []echo
	// rows is the number of rows to write; object endpoints have one.
	rows int64
	// load makes row i the current row; nil when there is a single row.
	load func(i int64)
	// cols gives, for every row field of the endpoint, the value of that
	// field in the current row. Generators key it by the catalog's field
	// names, never by position.
	cols map[string]func() value
}

// echo is a member of meta that echoes the request: a string, an int64, a
// list of strings, or nil (JSON null).
type echo struct {
	name string
	v    any
}

// fixed returns a column function of a value that does not change by row.
func fixed(v value) func() value { return func() value { return v } }

// bodyBuffer is the size of the buffer between row encoding and the
// connection: the most of a body held in memory at once.
const bodyBuffer = 32 << 10

// writeAnswer writes a as the response body in the requested format and
// returns the number of rows written. The header is written only once every
// requested field is known to have a generator; after that an error can only
// be a failed write (the client went away).
func writeAnswer(w http.ResponseWriter, q *request, a *answer, requestID string) (int64, *apiError, error) {
	cols := make([]func() value, len(q.fields))
	for i, name := range q.fields {
		f, ok := a.cols[name]
		if !ok {
			return 0, internal("the sandbox cannot generate field %s of %s", name, q.ep.Name), nil
		}
		cols[i] = f
	}
	vals := make([]value, len(cols))
	fill := func(i int64) {
		if a.load != nil {
			a.load(i)
		}
		for j, f := range cols {
			vals[j] = f()
		}
	}
	bw := bufio.NewWriterSize(w, bodyBuffer)
	var rows int64
	if q.format == "csv" {
		w.Header().Set("Content-Type", "text/csv")
		w.WriteHeader(http.StatusOK)
		cw := csvWriter{w: bw}
		if err := cw.header(q.fields); err != nil {
			return 0, nil, err
		}
		for ; rows < a.rows; rows++ {
			fill(rows)
			if err := cw.row(vals); err != nil {
				return rows, nil, err
			}
		}
		return rows, nil, bw.Flush()
	}

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	buf := appendMeta(make([]byte, 0, 512), requestID, a.echoes)
	buf = append(buf, `,"data":`...)
	if q.ep.Shape == catalog.Object {
		fill(0)
		buf = appendObject(buf, q.fields, vals)
		rows = 1
	} else {
		buf = append(buf, '[')
		for ; rows < a.rows; rows++ {
			if rows > 0 {
				buf = append(buf, ',')
			}
			fill(rows)
			buf = appendObject(buf, q.fields, vals)
			if len(buf) >= bodyBuffer/2 {
				if _, err := bw.Write(buf); err != nil {
					return rows, nil, err
				}
				buf = buf[:0]
			}
		}
		buf = append(buf, ']')
	}
	buf = append(buf, "}\n"...)
	if _, err := bw.Write(buf); err != nil {
		return rows, nil, err
	}
	return rows, nil, bw.Flush()
}

// appendMeta opens the envelope and writes meta: request_id, status_code,
// success, then the endpoint's echoes in order.
func appendMeta(dst []byte, requestID string, echoes []echo) []byte {
	dst = append(dst, `{"meta":{"request_id":`...)
	dst = appendJSONString(dst, requestID)
	dst = append(dst, `,"status_code":200,"success":true`...)
	for _, e := range echoes {
		dst = append(dst, ',')
		dst = appendJSONString(dst, e.name)
		dst = append(dst, ':')
		switch v := e.v.(type) {
		case string:
			dst = appendJSONString(dst, v)
		case int64:
			dst = strconv.AppendInt(dst, v, 10)
		case []string:
			dst = textListV(v).appendJSON(dst)
		case nil:
			dst = append(dst, "null"...)
		default:
			panic("sandbox: echo of unexpected type")
		}
	}
	return append(dst, '}')
}

// appendObject writes one row as a JSON object with keys in field order.
func appendObject(dst []byte, names []string, vals []value) []byte {
	dst = append(dst, '{')
	for i, name := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, name)
		dst = append(dst, ':')
		dst = vals[i].appendJSON(dst)
	}
	return append(dst, '}')
}

// targetOf returns the parsed url and scope of a backlink request (both
// validated already).
func targetOf(q *request) (target, catalog.Scope, *apiError) {
	t, err := parseTarget(q.get("url"))
	if err != nil {
		return target{}, "", invalidf("url", "url %q is not a usable target: %v", q.get("url"), err)
	}
	return t, catalog.Scope(q.get("scope")), nil
}

// scopedOf derives the target of a backlink request at its scope, and its
// echoes url, effective_url and scope.
func scopedOf(seed int64, q *request) (*scoped, map[string]any, *apiError) {
	t, scope, aerr := targetOf(q)
	if aerr != nil {
		return nil, nil, aerr
	}
	s, effective := newScoped(seed, q.clock, t, scope)
	return s, map[string]any{"url": t.raw, "effective_url": effective, "scope": string(scope)}, nil
}

// overview answers the backlink overview (spec 2.2): the counts of the
// target at its scope, so they equal what the list endpoints return in
// total.
func overview(seed int64, q *request) (*answer, *apiError) {
	s, vals, aerr := scopedOf(seed, q)
	if aerr != nil {
		return nil, aerr
	}
	c := s.c
	return &answer{
		echoes: []echo{{"effective_url", vals["effective_url"]}, {"scope", vals["scope"]}, {"url", vals["url"]}},
		rows:   1,
		cols: map[string]func() value{
			"backlinks_count":  fixed(intV(c.backlinks)),
			"domains_count":    fixed(intV(c.domains)),
			"urls_count":       fixed(intV(c.urls)),
			"follows_count":    fixed(intV(s.follows())),
			"nofollows_count":  fixed(intV(c.nofollows)),
			"sponsored_count":  fixed(intV(c.sponsored)),
			"ugc_count":        fixed(intV(c.ugc)),
			"frames_count":     fixed(intV(c.frames)),
			"forms_count":      fixed(intV(c.forms)),
			"images_count":     fixed(intV(c.images)),
			"texts_count":      fixed(intV(c.backlinks - c.images)),
			"ips_count":        fixed(intV(c.ips)),
			"ip_class_c_count": fixed(intV(c.classC)),
			"new_count":        fixed(intV(c.new)),
			"lost_count":       fixed(intV(c.lost)),
			"score":            fixed(intV(s.score)),
		},
	}, nil
}

// summary answers the monthly history (spec 2.3, 4.3 note 4): one row per
// month of the requested range that has history, newest first, at most
// limit rows. The current month's row equals the overview.
func summary(seed int64, q *request) (*answer, *apiError) {
	s, vals, aerr := scopedOf(seed, q)
	if aerr != nil {
		return nil, aerr
	}
	current, oldest := q.clock.month, s.oldestMonth()
	to := current
	if q.has("date_to") {
		to, _ = parseMonth(q.get("date_to"))
	}
	from := min(oldest, to)
	if q.has("date_from") {
		from, _ = parseMonth(q.get("date_from"))
		if from > to {
			return nil, invalid(detail{"date_from", "date_from " + formatMonth(from) +
				" is after date_to " + formatMonth(to)})
		}
	}
	lo, hi := max(from, oldest), min(to, current)
	total := max(0, int64(hi-lo+1))
	var m monthStat
	return &answer{
		echoes: []echo{
			{"date_from", formatMonth(from)}, {"date_to", formatMonth(to)},
			{"effective_url", vals["effective_url"]}, {"scope", vals["scope"]}, {"url", vals["url"]}, {"total", total},
		},
		rows: min(total, q.int("limit")),
		load: func(i int64) { m = s.monthAt(hi - int(i)) },
		cols: map[string]func() value{
			"score":           func() value { return intV(m.score) },
			"backlinks_count": func() value { return intV(m.backlinks) },
			"domains_count":   func() value { return intV(m.domains) },
			"follows_count":   func() value { return intV(m.follows) },
			"month_date":      func() value { return dateV(monthStart(m.month)) },
			"url":             fixed(textV(vals["url"].(string))),
		},
	}, nil
}

// scopedList answers a list endpoint of one target from the rows rowsOf
// derives for it.
func scopedList(seed int64, q *request, rowsOf func(*scoped) *rowSet) (*answer, *apiError) {
	s, vals, aerr := scopedOf(seed, q)
	if aerr != nil {
		return nil, aerr
	}
	return q.listAnswer(rowsOf(s), func(total int64) []echo { return q.listEchoes(total, vals) })
}

// links answers the backlinks of a target (spec 2.4).
func links(seed int64, q *request) (*answer, *apiError) { return scopedList(seed, q, linkRows) }

// refDomains answers the referring domains of a target (spec 2.5).
func refDomains(seed int64, q *request) (*answer, *apiError) {
	return scopedList(seed, q, domainRows)
}

// refIPs answers the referring IPs of a target (spec 2.6).
func refIPs(seed int64, q *request) (*answer, *apiError) { return scopedList(seed, q, ipRows) }

// indexedPages answers the pages of a target that have backlinks (spec 2.7).
func indexedPages(seed int64, q *request) (*answer, *apiError) {
	return scopedList(seed, q, pageRowsOf)
}

// anchors answers the anchor texts of a target's backlinks (spec 2.8).
func anchors(seed int64, q *request) (*answer, *apiError) { return scopedList(seed, q, anchorRowsOf) }

// scoreProfileOf answers the score profile of a target (spec 2.9).
func scoreProfileOf(seed int64, q *request) (*answer, *apiError) {
	return scopedList(seed, q, scoreProfileRowsOf)
}

// competitors answers the competitors of a domain (spec 2.10): of its root
// domain, whatever path or subdomain the parameter names.
func competitors(seed int64, q *request) (*answer, *apiError) {
	raw := q.get("domain")
	t, err := parseTarget(raw)
	if err != nil {
		return nil, invalidf("domain", "domain %q is not a usable domain: %v", raw, err)
	}
	rows := competitorRowsOf(competitorsOf(seed, q.clock, t.root))
	return q.listAnswer(rows, func(total int64) []echo {
		return q.listEchoes(total, map[string]any{"domain": raw})
	})
}

// scopedTargets derives every url of a comparison or matrix request at its
// scope.
func scopedTargets(seed int64, q *request) ([]*scoped, []string, *apiError) {
	scope := catalog.Scope(q.get("scope"))
	var out []*scoped
	for _, u := range q.urls {
		t, err := parseTarget(u)
		if err != nil {
			return nil, nil, invalidf("urls", "urls item %q is not a usable target: %v", u, err)
		}
		s, _ := newScoped(seed, q.clock, t, scope)
		out = append(out, s)
	}
	return out, q.urls, nil
}

// comparison answers one row per url (spec 2.11): the overview's numbers of
// each target at the scope, for the current month.
func comparison(seed int64, q *request) (*answer, *apiError) {
	ts, urls, aerr := scopedTargets(seed, q)
	if aerr != nil {
		return nil, aerr
	}
	var cur int64
	month := dateV(monthStart(q.clock.month))
	rows := tableRows(int64(len(ts)), "", func(id int64) { cur = id }, map[string]func() value{
		"score":           func() value { return intV(ts[cur].score) },
		"backlinks_count": func() value { return intV(ts[cur].c.backlinks) },
		"domains_count":   func() value { return intV(ts[cur].c.domains) },
		"follows_count":   func() value { return intV(ts[cur].follows()) },
		"month_date":      func() value { return month },
		"url":             func() value { return textV(urls[cur]) },
	})
	return q.listAnswer(rows, func(total int64) []echo {
		return q.listEchoes(total, map[string]any{"urls": urls, "scope": q.get("scope")})
	})
}

// matrix answers the referring domains of up to 6 targets with the
// backlinks each sends to each target (spec 2.12).
func matrix(seed int64, q *request) (*answer, *apiError) {
	ts, urls, aerr := scopedTargets(seed, q)
	if aerr != nil {
		return nil, aerr
	}
	return q.listAnswer(matrixRowsOf(seed, ts), func(total int64) []echo {
		return q.listEchoes(total, map[string]any{"urls": urls, "scope": q.get("scope")})
	})
}

// keywordMetrics answers keyword metrics (spec 2.13) for one keyword,
// country and month.
func keywordMetrics(seed int64, q *request) (*answer, *apiError) {
	month := q.clock.month
	if q.has("month") {
		month, _ = parseMonth(q.get("month"))
	}
	kw, country := q.get("keyword"), q.get("country")
	m := newKeywordStats(seed, kw, country, month)
	return &answer{
		echoes: []echo{{"country", country}, {"keyword", kw}, {"month", formatMonth(month)}},
		rows:   1,
		cols: map[string]func() value{
			"competitive_density": fixed(intV(m.competitiveDensity)),
			"cpc":                 fixed(decimalV(m.cpc())),
			"intents":             fixed(textListV(m.intents)),
			"keyword_difficulty":  fixed(intV(m.difficulty)),
			"number_of_results":   fixed(digitsV(m.results)),
			"search_volume":       fixed(digitsV(m.volume)),
			"serp_features":       fixed(textListV(m.serpFeatures)),
			"trends":              fixed(intListV(m.trends)),
		},
	}, nil
}
