package pipeline

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/load"
)

// Task is one unit of work: an endpoint for one target or one target set,
// or keyword metrics for one keyword, country and month.
type Task struct {
	Endpoint *catalog.Endpoint
	Spec     EndpointSpec
	// Target is set for backlink endpoints of one target.
	Target *Target
	// Set is set for the endpoints of a target set (comparison, matrix).
	Set *TargetSet
	// Keyword, Country and Month are set for keyword metrics.
	Keyword, Country string
	Month            time.Time
	// Since is the watermark of an incremental task: it asks only for rows
	// whose Spec.Incremental field is past it (zero: all rows). For a
	// listings task, when its pull began (its first attempt).
	Since time.Time
	// Listings is set for the task that pulls an account's locations
	// (Endpoint is then listingsEndpoint).
	Listings *ListingSpec
	// Bound is the largest limit the API is known to accept on the
	// endpoint (api_bounds), for a task that pages with a limit
	// (learnsLimit); 0: none known. The runner and the planner set it.
	Bound int
	// MaxAge is how old the task's data may be before a run buys it
	// again: the endpoint's, the keywords' or the job's max_age (0: every
	// run buys). A backfill's tasks have none: --reprocess says what a
	// backfill buys again.
	MaxAge time.Duration
	// AskFrom narrows a summary task to the months the warehouse does not
	// hold as closed (see holdings): its date_from, when later than the
	// job's; zero: the months the job asks for. Not part of Key.
	AskFrom time.Time
	// heldMonths counts the closed months AskFrom leaves out (HeldMonths).
	heldMonths int
	// unlearned says the planner found no bound and counts the task's
	// requests at the endpoint's default page instead (Planner.pageBounds).
	unlearned bool
}

// String names the task in logs and summaries.
func (t Task) String() string {
	if t.Listings != nil {
		return "listings of account " + t.Listings.Account
	}
	if t.Target != nil {
		return fmt.Sprintf("%s %s (%s)", t.Endpoint.Name, t.Target.URL, t.Target.Scope)
	}
	if t.Set != nil {
		return fmt.Sprintf("%s set %s (%s)", t.Endpoint.Name, t.Set.Name, t.Set.Scope)
	}
	return fmt.Sprintf("%s %q %s %s", t.Endpoint.Name, t.Keyword, t.Country, t.Month.Format("2006-01"))
}

// request describes the task for the quarantine table.
func (t Task) request() string {
	if t.Listings != nil {
		return "account=" + t.Listings.Account
	}
	if t.Target != nil {
		return fmt.Sprintf("url=%s scope=%s", t.Target.URL, t.Target.Scope)
	}
	if t.Set != nil {
		return fmt.Sprintf("urls=%s scope=%s", strings.Join(t.Set.URLs, ","), t.Set.Scope)
	}
	return fmt.Sprintf("keyword=%s country=%s month=%s", t.Keyword, t.Country, t.Month.Format("2006-01"))
}

// Tasks expands the job into its tasks, in spec order: each endpoint for
// each target (comparison and matrix: for each target set), then each
// keyword in each country for each month, then the listings pull. now gives the current month where
// the spec names none.
func (j *Job) Tasks(now time.Time) []Task {
	var tasks []Task
	for _, es := range j.Endpoints {
		age := j.MaxAge
		if es.MaxAge != nil {
			age = *es.MaxAge
		}
		if perSetRequest(es.Endpoint) {
			for i := range j.TargetSets {
				tasks = append(tasks, Task{Endpoint: es.Endpoint, Spec: es, Set: &j.TargetSets[i], Month: load.MonthStart(now), MaxAge: age})
			}
			continue
		}
		for i := range j.Targets {
			tasks = append(tasks, Task{Endpoint: es.Endpoint, Spec: es, Target: &j.Targets[i], Month: load.MonthStart(now), MaxAge: age})
		}
	}
	if ks := j.Keywords; ks != nil {
		ep, _ := catalog.Lookup("keyword-metrics")
		age := j.MaxAge
		if ks.MaxAge != nil {
			age = *ks.MaxAge
		}
		months := ks.Months
		if len(months) == 0 {
			months = []string{now.UTC().Format("2006-01")}
		}
		for _, kw := range ks.Keywords {
			for _, c := range ks.Countries {
				for _, m := range months {
					mt, _ := time.Parse("2006-01", m) // validated by the parser
					tasks = append(tasks, Task{Endpoint: ep, Keyword: kw, Country: c, Month: mt, MaxAge: age})
				}
			}
		}
	}
	if j.Listings != nil {
		tasks = append(tasks, Task{Endpoint: listingsEndpoint, Listings: j.Listings, Month: load.MonthStart(now)})
	}
	return tasks
}

// pageSize is the limit of each request of the task. A task that pages
// with a limit asks for pages as large as the API allows: the job's limit
// lowered to the API's bound, or without one the bound (at most
// firstLimitProbe), or while the bound is not known firstLimitProbe, which
// the API's refusal teaches it (see apiBound). Any other (summary, whose
// limit counts months) asks for the job's limit, or the endpoint's
// default.
func (t Task) pageSize() int {
	switch {
	case !t.learnsLimit() && t.Spec.Limit > 0:
		return t.asked(t.Spec.Limit)
	case !t.learnsLimit():
		return t.asked(t.Endpoint.DefaultLimit)
	case t.Spec.Limit > 0 && t.Bound > 0:
		return min(t.Spec.Limit, t.Bound)
	case t.Spec.Limit > 0:
		return t.Spec.Limit
	case t.Bound > 0:
		return min(t.Bound, firstLimitProbe)
	}
	return firstLimitProbe
}

// asked cuts the limit of a narrowing task (summary) narrowed to the
// months it does not hold (AskFrom) to those months: it asks for no line
// it will not be sent, so it reserves, and a plan prices, no more.
func (t Task) asked(limit int) int {
	if _, ranged := t.Endpoint.Param("date_to"); t.AskFrom.IsZero() || !ranged || t.paged() {
		return limit
	}
	top := t.top()
	months := (top.Year()-t.AskFrom.Year())*12 + int(top.Month()) - int(t.AskFrom.Month()) + 1
	return max(1, min(limit, months))
}

// dateFrom is the date_from a task sends: AskFrom where it narrows the
// job's, else the job's ("" for none).
func (t Task) dateFrom() string {
	if !t.AskFrom.IsZero() {
		if f := t.AskFrom.Format("2006-01"); f > t.Spec.DateFrom {
			return f
		}
	}
	return t.Spec.DateFrom
}

// learnsLimit reports whether the task pages with a limit (offset and
// limit), and so asks for pages as large as the API allows, learning its
// bound of limit (see apiBound). Summary takes a limit but no offset: its
// limit counts months, capped by available history (spec 4.3), not a
// page.
func (t Task) learnsLimit() bool {
	_, ok := t.Endpoint.Param("limit")
	return ok && t.paged()
}

// limit is the page size the task sends, or 0 where the endpoint takes no
// limit.
func (t Task) limit() int {
	if _, ok := t.Endpoint.Param("limit"); ok {
		return t.pageSize()
	}
	return 0
}

// pageLimit is the limit of the task's next request once it has read rows
// rows: the page size, cut to what max_rows still allows (0: no limit).
func (t Task) pageLimit(rows int64) int {
	limit := t.limit()
	if t.Spec.MaxRows > 0 && limit > 0 {
		return min(limit, t.Spec.MaxRows-int(rows))
	}
	return limit
}

// shrinks reports whether the task's next request may be cut to the
// lines the budget affords: only a paged task may, as it asks for the
// rest from the next offset afterwards. A request that is not paged
// (summary, whose limit counts months; score profile, comparison) cut
// short would lose the lines it left out, or buy them twice when asked
// again whole, so it is sent whole or not at all.
func (t Task) shrinks() bool {
	return t.limit() > 0 && t.paged()
}

// narrows reports whether a task that is not paged can still ask for the
// rest of a cut answer: summary, whose rows are the months from date_to
// (default the current month) back, newest first (spec 4.3 note 4, 8.4),
// so the rest of an answer that brought n months starts n months before.
func (t Task) narrows() bool {
	_, ok := t.Endpoint.Param("date_to")
	return ok && !t.paged() && t.limit() > 0
}

// top is the newest month a narrowing task asks for: date_to, or the
// task's month.
func (t Task) top() time.Time {
	if m, err := time.Parse("2006-01", t.Spec.DateTo); err == nil {
		return m
	}
	return load.MonthStart(t.Month)
}

// rest is the most lines a narrowing task still asks for once it has
// loaded good rows and covered the months from its top down to offset
// months below it (next, asked for with date_to = top - offset); false
// when none are left (its limit is read, or the months left are before
// date_from).
func (t Task) rest(offset, good int64) (int, bool) {
	rest := t.limit() - int(good)
	if rest <= 0 {
		return 0, false
	}
	to := t.top().AddDate(0, -int(offset), 0)
	if from, err := time.Parse("2006-01", t.dateFrom()); err == nil && to.Before(from) {
		return 0, false
	}
	return rest, true
}

// below is the offset of a narrowing task whose oldest loaded month is
// oldest: the months from its top down to oldest are covered, and the
// rest is asked for from the month before. The count is taken from the
// months the answer held, not from how many rows it had: the API's newest
// month may be older than the task's (its data lags at the turn of a
// month, or its clock is another zone's), and it may skip a month.
func (t Task) below(oldest time.Time) int64 {
	top := t.top()
	return int64((top.Year()-oldest.Year())*12+int(top.Month())-int(oldest.Month())) + 1
}

// done reports whether the task asks for no further page after one of
// pageLimit that returned got rows, rows in all.
func (t Task) done(got, pageLimit int, rows int64) bool {
	return !t.paged() || got < pageLimit || got == 0 ||
		(t.Spec.MaxRows > 0 && rows >= int64(t.Spec.MaxRows))
}

// worstLines is the most lines one request of the task may return: the
// page's limit, or where the endpoint takes none, its bound (comparison:
// one per url).
func (t Task) worstLines(limit int) int {
	switch {
	case limit > 0:
		return limit
	case t.Set != nil:
		return len(t.Set.URLs)
	}
	return t.Endpoint.MaxRows
}

// paged reports whether the task pages by offset.
func (t Task) paged() bool {
	_, ok := t.Endpoint.Param("offset")
	return ok
}

// params builds the query of the request that fetches rows
// [offset, offset+limit) of the task, in t.format().
func (t Task) params(offset, limit int) url.Values {
	q := url.Values{}
	if t.Set != nil {
		q.Set("urls", strings.Join(t.Set.URLs, ","))
		q.Set("scope", string(t.Set.Scope))
	} else if t.Target != nil {
		if _, ok := t.Endpoint.Param("domain"); ok {
			q.Set("domain", t.Target.URL) // competitors: no url, no scope
		} else {
			q.Set("url", t.Target.URL)
			q.Set("scope", string(t.Target.Scope))
		}
	} else {
		q.Set("keyword", t.Keyword)
		q.Set("country", t.Country)
		q.Set("month", t.Month.Format("2006-01"))
	}
	s := t.Spec
	set := func(name, v string) {
		if v == "" {
			return
		}
		if _, ok := t.Endpoint.Param(name); ok {
			q.Set(name, v)
		}
	}
	// Always name the fields: the API's default field list differs from
	// its CSV column list on some endpoints (summary leaves out url).
	fields := s.Fields
	if len(fields) == 0 {
		fields = t.Endpoint.FieldNames()
	}
	set("fields", strings.Join(fields, ","))
	set("filter", t.filter())
	if s.Incremental != "" {
		set("order_by", s.Incremental)
		set("direction", "ASC")
	} else {
		set("order_by", s.OrderBy)
		set("direction", s.Direction)
	}
	set("date_from", t.dateFrom())
	if t.narrows() {
		// The rest of a cut answer asks for the months before those it
		// brought. Otherwise the range ends at the task's top, named
		// even when the job names no date_to: the API's default is its
		// current month, which is a month later than the task's for a
		// run that started before a month ended and asks after it (a
		// narrowed request, date_from and a limit of the months it
		// wants, would be answered with the new month instead of the
		// one that ended, and that month held as closed unseen).
		set("date_to", t.top().AddDate(0, -offset, 0).Format("2006-01"))
	} else {
		set("date_to", s.DateTo)
	}
	if limit > 0 {
		set("limit", strconv.Itoa(limit))
	}
	if t.paged() {
		set("offset", strconv.Itoa(offset))
	}
	set("format", t.format())
	return q
}

// filter is the job's filter, and for an incremental task with a
// watermark, the condition that asks only for rows past it.
func (t Task) filter() string {
	if t.Spec.Incremental == "" || t.Since.IsZero() {
		return t.Spec.Filter
	}
	past := fmt.Sprintf("%s > %s", t.Spec.Incremental, t.Since.UTC().Format("2006-01-02T15:04:05"))
	if t.Spec.Filter == "" {
		return past
	}
	return "(" + t.Spec.Filter + ") AND " + past
}

// watermark names the task's watermark.
func (t Task) watermark(job string) load.WatermarkKey {
	return load.WatermarkKey{Job: job, Endpoint: t.Endpoint.Name, Request: t.request(), Filter: t.Spec.Filter, Field: t.Spec.Incremental}
}

// format is the answer format the task asks for: CSV, which streams
// cheapest, wherever the endpoint offers it.
func (t Task) format() string {
	if t.Endpoint.AllowsCSV() {
		return "csv"
	}
	return "json"
}
