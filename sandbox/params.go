package sandbox

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/filter"
)

// authParam is the query parameter that may carry the API key (spec 5.1);
// every endpoint accepts it besides its catalog parameters.
const authParam = "key"

// request is a validated request to a catalog endpoint.
type request struct {
	ep     *catalog.Endpoint
	clock  clock
	given  map[string]string // parameters present in the query, key excluded
	fields []string          // the row fields to return, in order
	format string            // json or csv
	filter *filter.Expr      // nil when absent
	urls   []string          // the items of urls (comparison, matrix)
}

// get returns the parameter's value, or the catalog's default when absent.
func (q *request) get(name string) string {
	if v, ok := q.given[name]; ok {
		return v
	}
	p, _ := q.ep.Param(name)
	return p.Default
}

// has reports whether the request gave the parameter.
func (q *request) has(name string) bool {
	_, ok := q.given[name]
	return ok
}

// int returns an integer parameter (validated, so it parses).
func (q *request) int(name string) int64 {
	n, _ := strconv.ParseInt(q.get(name), 10, 64)
	return n
}

// offset is the offset parameter; 0 when absent (the spec states no
// default).
func (q *request) offset() int64 { return q.int("offset") }

// limitOr is the limit parameter, its default when absent, or all when the
// endpoint takes no limit.
func (q *request) limitOr(all int64) int64 {
	if _, ok := q.ep.Param("limit"); !ok {
		return all
	}
	return q.int("limit")
}

// order is the field the rows are ordered by (order_by, else def) and
// whether descending (direction, default DESC; endpoints without a
// direction are in their own order).
func (q *request) order(def string) (field string, desc bool) {
	field = def
	if q.has("order_by") {
		field = q.get("order_by")
	}
	return field, q.get("direction") != "ASC"
}

// parseRequest validates the query of a request to ep against the catalog:
// unknown and repeated parameters, required ones, and each value's kind and
// bounds. All problems are reported at once, each naming its parameter.
func parseRequest(ep *catalog.Endpoint, rawQuery string, c clock) (*request, *apiError) {
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, invalid(detail{Message: fmt.Sprintf("the query string is malformed: %v", err)})
	}
	q := &request{ep: ep, clock: c, given: map[string]string{}}
	var problems []detail
	var unknown []string
	// In name order, so the same bad request always gets the same body.
	for _, name := range slices.Sorted(maps.Keys(vals)) {
		vs := vals[name]
		if name == authParam {
			continue
		}
		if _, ok := ep.Param(name); !ok {
			if name == "format" && ep.JSONOnly {
				problems = append(problems, detail{name, fmt.Sprintf("%s answers JSON only; it takes no format parameter", ep.Name)})
				continue
			}
			unknown = append(unknown, name)
			continue
		}
		if len(vs) > 1 {
			problems = append(problems, detail{name, fmt.Sprintf("%s is given %d times; give it once", name, len(vs))})
			continue
		}
		q.given[name] = vs[0]
	}
	slices.Sort(unknown)
	for _, name := range unknown {
		problems = append(problems, detail{name, fmt.Sprintf("unknown parameter %q; %s accepts %s",
			name, ep.Name, strings.Join(paramNames(ep), ", "))})
	}
	for _, p := range ep.Params {
		v, ok := q.given[p.Name]
		if !ok {
			if p.Required && len(vals[p.Name]) == 0 {
				problems = append(problems, detail{p.Name, p.Name + " is required"})
			}
			continue
		}
		if msg := checkParam(ep, p, v, c); msg != "" {
			problems = append(problems, detail{p.Name, msg})
		}
	}
	if len(problems) > 0 {
		return nil, invalid(problems...)
	}
	q.format = q.get("format")
	if q.format == "" {
		q.format = "json"
	}
	q.fields = projection(ep, q.given["fields"], q.has("fields"))
	if v, ok := q.given["urls"]; ok {
		q.urls = strings.Split(v, ",")
	}
	if p := q.crossCheck(); p != nil {
		return nil, invalid(*p)
	}
	return q, nil
}

// crossCheck checks what depends on several parameters: order_by among the
// fields returned, and the filter (parsed here, matrix indexes against the
// number of urls).
func (q *request) crossCheck() *detail {
	if v, ok := q.given["order_by"]; ok {
		f, known := q.ep.Field(v)
		switch {
		case !known:
			return &detail{"order_by", fmt.Sprintf("order_by names %q, which is not a field of %s; its fields are %s",
				v, q.ep.Name, strings.Join(q.ep.FieldNames(), ", "))}
		case f.Kind.IsList():
			return &detail{"order_by", fmt.Sprintf("order_by cannot be %s, a list", v)}
		case !slices.Contains(q.fields, v):
			return &detail{"order_by", fmt.Sprintf("order_by %s must be among the fields returned (%s)", v, strings.Join(q.fields, ", "))}
		}
	}
	if v, ok := q.given["filter"]; ok {
		e, err := filter.Parse(v, q.ep)
		if err == nil && q.urls != nil {
			err = e.CheckTargets(len(q.urls))
		}
		if err != nil {
			return &detail{"filter", filterMessage(v, err)}
		}
		q.filter = e
	}
	return nil
}

// filterMessage is the 400 message of a bad filter: the parser's, with
// where it is.
func filterMessage(expr string, err error) string {
	var fe *filter.Error
	if errors.As(err, &fe) {
		return fmt.Sprintf("filter %q is invalid at column %d: %s", expr, fe.Pos, fe.Msg)
	}
	return fmt.Sprintf("filter %q is invalid: %v", expr, err)
}

func paramNames(ep *catalog.Endpoint) []string {
	names := make([]string, len(ep.Params))
	for i, p := range ep.Params {
		names[i] = p.Name
	}
	return names
}

// projection returns the fields a request returns: those it names, else the
// endpoint's default field list, else every row field in catalog order.
// DefaultFields may name something that is not a row field (comparison names
// scope); such names are left out until an endpoint serves them.
func projection(ep *catalog.Endpoint, fields string, given bool) []string {
	if given {
		return strings.Split(fields, ",")
	}
	if ep.DefaultFields == nil {
		return ep.FieldNames()
	}
	var out []string
	for _, name := range ep.DefaultFields {
		if _, ok := ep.Field(name); ok {
			out = append(out, name)
		}
	}
	return out
}

// checkParam validates one given value; it returns "" when the value is
// fine, else a sentence naming the parameter.
func checkParam(ep *catalog.Endpoint, p catalog.Param, v string, c clock) string {
	switch p.Kind {
	case catalog.PString:
		return checkLength(p, v)
	case catalog.PInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Sprintf("%s must be an integer, got %q", p.Name, v)
		}
		if n < int64(p.Min) || p.Max > 0 && n > int64(p.Max) {
			return fmt.Sprintf("%s must be %s, got %d", p.Name, intRange(p), n)
		}
	case catalog.PEnum, catalog.PDirection:
		if !slices.Contains(p.Enum, v) {
			return fmt.Sprintf("%s must be one of %s, got %q", p.Name, strings.Join(p.Enum, ", "), v)
		}
	case catalog.PList:
		return checkList(ep, p, v)
	case catalog.PMonth:
		m, ok := parseMonth(v)
		if !ok {
			return fmt.Sprintf("%s must be a month written YYYY-MM, got %q", p.Name, v)
		}
		if lo, hi, bounded := monthBounds(ep, p, c); bounded && (m < lo || m > hi) {
			return fmt.Sprintf("%s must be from %s to %s (the current month), got %s",
				p.Name, formatMonth(lo), formatMonth(hi), v)
		}
	case catalog.PFilter:
		// Parsed with the other parameters known (crossCheck).
		if strings.TrimSpace(v) == "" {
			return p.Name + " must not be empty"
		}
	default:
		return fmt.Sprintf("%s has a kind the sandbox does not know (%d)", p.Name, p.Kind)
	}
	return ""
}

// isTargetParam reports whether a string parameter names a target.
func isTargetParam(name string) bool { return name == "url" || name == "domain" }

func checkLength(p catalog.Param, v string) string {
	if !utf8.ValidString(v) {
		return p.Name + " must be valid UTF-8"
	}
	n := utf8.RuneCountInString(v)
	if p.MinLen > 0 && strings.TrimSpace(v) == "" {
		return p.Name + " must not be blank"
	}
	if n < p.MinLen || p.MaxLen > 0 && n > p.MaxLen {
		return fmt.Sprintf("%s must be %d to %d characters long, got %d", p.Name, p.MinLen, p.MaxLen, n)
	}
	if isTargetParam(p.Name) {
		if _, err := parseTarget(v); err != nil {
			return fmt.Sprintf("%s %q is not a usable target: %v", p.Name, v, err)
		}
	}
	return ""
}

func intRange(p catalog.Param) string {
	if p.Max > 0 {
		return fmt.Sprintf("from %d to %d", p.Min, p.Max)
	}
	return fmt.Sprintf("at least %d", p.Min)
}

// checkList validates a comma separated list: no empty item, the catalog's
// bounds on the number and length of items, each item named once, and for
// fields known row fields, for urls usable targets.
func checkList(ep *catalog.Endpoint, p catalog.Param, v string) string {
	items := strings.Split(v, ",")
	if n := len(items); n < p.Min || p.Max > 0 && n > p.Max {
		return fmt.Sprintf("%s must list %s items, got %d", p.Name, intRange(p), n)
	}
	seen := map[string]bool{}
	for _, item := range items {
		if item == "" {
			return fmt.Sprintf("%s has an empty item in %q", p.Name, v)
		}
		if p.MaxLen > 0 && utf8.RuneCountInString(item) > p.MaxLen {
			return fmt.Sprintf("%s has an item longer than %d characters", p.Name, p.MaxLen)
		}
		if seen[item] {
			return fmt.Sprintf("%s names %q twice", p.Name, item)
		}
		seen[item] = true
		switch p.Name {
		case "fields":
			if _, ok := ep.Field(item); !ok {
				return fmt.Sprintf("fields names %q, which is not a field of %s; its fields are %s",
					item, ep.Name, strings.Join(ep.FieldNames(), ", "))
			}
		case "urls":
			if !utf8.ValidString(item) {
				return "urls must be valid UTF-8"
			}
			if _, err := parseTarget(item); err != nil {
				return fmt.Sprintf("urls item %q is not a usable target: %v", item, err)
			}
		}
	}
	return ""
}

// monthBounds returns the allowed range of a month parameter (the
// catalog's MinMonth and UpToNow) when it has one.
func monthBounds(_ *catalog.Endpoint, p catalog.Param, c clock) (lo, hi int, bounded bool) {
	if p.MinMonth == "" && !p.UpToNow {
		return 0, 0, false
	}
	lo, hi = 0, 1<<30
	if p.MinMonth != "" {
		lo, _ = parseMonth(p.MinMonth)
	}
	if p.UpToNow {
		hi = c.month
	}
	return lo, hi, true
}

// parseMonth parses YYYY-MM into a month index.
func parseMonth(s string) (int, bool) {
	if len(s) != 7 || s[4] != '-' {
		return 0, false
	}
	y, err1 := strconv.Atoi(s[:4])
	m, err2 := strconv.Atoi(s[5:])
	if err1 != nil || err2 != nil || s[0] == '+' || s[0] == '-' || s[5] == '+' || s[5] == '-' || y < 1 || m < 1 || m > 12 {
		return 0, false
	}
	return monthIndex(y, time.Month(m)), true
}

// formatMonth writes a month index as YYYY-MM.
func formatMonth(m int) string { return fmt.Sprintf("%04d-%02d", m/12, m%12+1) }
