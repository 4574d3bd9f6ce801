package jobspec

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
	// (Endpoint is then ListingsEndpoint).
	Listings *ListingSpec
	// Bound is the largest limit the API is known to accept on the
	// endpoint (api_bounds), for a task that pages with a limit
	// (LearnsLimit); 0: none known. The runner and the planner set it.
	Bound int
	// MaxAge is how old the task's data may be before a run buys it
	// again: the endpoint's, the keywords' or the job's max_age (0: every
	// run buys). A backfill's tasks have none: --reprocess says what a
	// backfill buys again.
	MaxAge time.Duration
	// AskFrom narrows a summary task to the months the warehouse does not
	// hold as closed (see planning.Holdings): its date_from, when later than the
	// job's; zero: the months the job asks for. Not part of Key.
	AskFrom time.Time
	// HeldMonths counts the closed months of a summary task's range that
	// AskFrom leaves out: the warehouse holds them (Narrow).
	HeldMonths int
	// Unlearned says the planner found no bound and counts the task's
	// requests at the endpoint's default page instead (Planner.pageBounds).
	Unlearned bool
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

// Request describes the task for the quarantine table.
func (t Task) Request() string {
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
		tasks = append(tasks, Task{Endpoint: ListingsEndpoint, Listings: j.Listings, Month: load.MonthStart(now)})
	}
	return tasks
}

// PageSize is the limit of each request of the task. A task that pages
// with a limit asks for pages as large as the API allows: the job's limit
// lowered to the API's bound, or without one the bound (at most
// FirstLimitProbe), or while the bound is not known FirstLimitProbe, which
// the API's refusal teaches it (internal/apibound). Any other (summary, whose
// limit counts months) asks for the job's limit, or the endpoint's
// default.
func (t Task) PageSize() int {
	switch {
	case !t.LearnsLimit() && t.Spec.Limit > 0:
		return t.Asked(t.Spec.Limit)
	case !t.LearnsLimit():
		return t.Asked(t.Endpoint.DefaultLimit)
	case t.Spec.Limit > 0 && t.Bound > 0:
		return min(t.Spec.Limit, t.Bound)
	case t.Spec.Limit > 0:
		return t.Spec.Limit
	case t.Bound > 0:
		return min(t.Bound, FirstLimitProbe)
	}
	return FirstLimitProbe
}

// Asked cuts the limit of a narrowing task (summary) narrowed to the
// months it does not hold (AskFrom) to those months: it asks for no line
// it will not be sent, so it reserves, and a plan prices, no more.
func (t Task) Asked(limit int) int {
	if _, ranged := t.Endpoint.Param("date_to"); t.AskFrom.IsZero() || !ranged || t.Paged() {
		return limit
	}
	top := t.Top()
	months := (top.Year()-t.AskFrom.Year())*12 + int(top.Month()) - int(t.AskFrom.Month()) + 1
	return max(1, min(limit, months))
}

// DateFrom is the date_from a task sends: AskFrom where it narrows the
// job's, else the job's ("" for none).
func (t Task) DateFrom() string {
	if !t.AskFrom.IsZero() {
		if f := t.AskFrom.Format("2006-01"); f > t.Spec.DateFrom {
			return f
		}
	}
	return t.Spec.DateFrom
}

// LearnsLimit reports whether the task pages with a limit (offset and
// limit), and so asks for pages as large as the API allows, learning its
// bound of limit (internal/apibound). Summary takes a limit but no offset: its
// Limit counts months, capped by available history (spec 4.3), not a
// page.
func (t Task) LearnsLimit() bool {
	_, ok := t.Endpoint.Param("limit")
	return ok && t.Paged()
}

// Limit is the page size the task sends, or 0 where the endpoint takes no
// limit.
func (t Task) Limit() int {
	if _, ok := t.Endpoint.Param("limit"); ok {
		return t.PageSize()
	}
	return 0
}

// PageLimit is the limit of the task's next request once it has read rows
// rows: the page size, cut to what max_rows still allows (0: no limit).
func (t Task) PageLimit(rows int64) int {
	limit := t.Limit()
	if t.Spec.MaxRows > 0 && limit > 0 {
		return min(limit, t.Spec.MaxRows-int(rows))
	}
	return limit
}

// Shrinks reports whether the task's next request may be cut to the
// lines the budget affords: only a paged task may, as it asks for the
// Rest from the next offset afterwards. A request that is not paged
// (summary, whose limit counts months; score profile, comparison) cut
// short would lose the lines it left out, or buy them twice when asked
// again whole, so it is sent whole or not at all.
func (t Task) Shrinks() bool {
	return t.Limit() > 0 && t.Paged()
}

// Narrows reports whether a task that is not paged can still ask for the
// Rest of a cut answer: summary, whose rows are the months from date_to
// (default the current month) back, newest first (spec 4.3 note 4, 8.4),
// so the rest of an answer that brought n months starts n months before.
func (t Task) Narrows() bool {
	_, ok := t.Endpoint.Param("date_to")
	return ok && !t.Paged() && t.Limit() > 0
}

// Top is the newest month a narrowing task asks for: date_to, or the
// task's month.
func (t Task) Top() time.Time {
	if m, err := time.Parse("2006-01", t.Spec.DateTo); err == nil {
		return m
	}
	return load.MonthStart(t.Month)
}

// Rest is the most lines a narrowing task still asks for once it has
// loaded good rows and covered the months from its top down to offset
// months below it (next, asked for with date_to = top - offset); false
// when none are left (its limit is read, or the months left are before
// date_from).
func (t Task) Rest(offset, good int64) (int, bool) {
	rest := t.Limit() - int(good)
	if rest <= 0 {
		return 0, false
	}
	to := t.Top().AddDate(0, -int(offset), 0)
	if from, err := time.Parse("2006-01", t.DateFrom()); err == nil && to.Before(from) {
		return 0, false
	}
	return rest, true
}

// Below is the offset of a narrowing task whose oldest loaded month is
// oldest: the months from its top down to oldest are covered, and the
// Rest is asked for from the month before. The count is taken from the
// months the answer held, not from how many rows it had: the API's newest
// month may be older than the task's (its data lags at the turn of a
// month, or its clock is another zone's), and it may skip a month.
func (t Task) Below(oldest time.Time) int64 {
	top := t.Top()
	return int64((top.Year()-oldest.Year())*12+int(top.Month())-int(oldest.Month())) + 1
}

// Done reports whether the task asks for no further page after one of
// PageLimit that returned got rows, rows in all.
func (t Task) Done(got, pageLimit int, rows int64) bool {
	return !t.Paged() || got < pageLimit || got == 0 ||
		(t.Spec.MaxRows > 0 && rows >= int64(t.Spec.MaxRows))
}

// WorstLines is the most lines one request of the task may return: the
// page's limit, or where the endpoint takes none, its bound (comparison:
// one per url).
func (t Task) WorstLines(limit int) int {
	switch {
	case limit > 0:
		return limit
	case t.Set != nil:
		return len(t.Set.URLs)
	}
	return t.Endpoint.MaxRows
}

// Paged reports whether the task pages by offset.
func (t Task) Paged() bool {
	_, ok := t.Endpoint.Param("offset")
	return ok
}

// Params builds the query of the request that fetches rows
// [offset, offset+limit) of the task, in t.format().
func (t Task) Params(offset, limit int) url.Values {
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
	set("filter", t.Filter())
	if s.Incremental != "" {
		set("order_by", s.Incremental)
		set("direction", "ASC")
	} else {
		set("order_by", s.OrderBy)
		set("direction", s.Direction)
	}
	set("date_from", t.DateFrom())
	if t.Narrows() {
		// The rest of a cut answer asks for the months before those it
		// brought. Otherwise the range ends at the task's top, named
		// even when the job names no date_to: the API's default is its
		// current month, which is a month later than the task's for a
		// run that started before a month ended and asks after it (a
		// narrowed request, date_from and a limit of the months it
		// wants, would be answered with the new month instead of the
		// one that ended, and that month held as closed unseen).
		set("date_to", t.Top().AddDate(0, -offset, 0).Format("2006-01"))
	} else {
		set("date_to", s.DateTo)
	}
	if limit > 0 {
		set("limit", strconv.Itoa(limit))
	}
	if t.Paged() {
		set("offset", strconv.Itoa(offset))
	}
	set("format", t.Format())
	return q
}

// Filter is the job's filter, and for an incremental task with a
// watermark, the condition that asks only for rows past it.
func (t Task) Filter() string {
	if t.Spec.Incremental == "" || t.Since.IsZero() {
		return t.Spec.Filter
	}
	past := fmt.Sprintf("%s > %s", t.Spec.Incremental, t.Since.UTC().Format("2006-01-02T15:04:05"))
	if t.Spec.Filter == "" {
		return past
	}
	return "(" + t.Spec.Filter + ") AND " + past
}

// Watermark names the task's watermark.
func (t Task) Watermark(job string) load.WatermarkKey {
	return load.WatermarkKey{Job: job, Endpoint: t.Endpoint.Name, Request: t.Request(), Filter: t.Spec.Filter, Field: t.Spec.Incremental}
}

// Format is the answer format the task asks for: CSV, which streams
// cheapest, wherever the endpoint offers it.
func (t Task) Format() string {
	if t.Endpoint.AllowsCSV() {
		return "csv"
	}
	return "json"
}

// Key is the task's identity across runs: its endpoint, what it is about
// (a target's url and scope, a target set's name, a keyword, country and
// month) and the parameters of its requests, without paging (offset,
// limit), the answer format, an incremental task's watermark, or the
// date_to a summary task sends when the job names none (its month's). Two runs
// that ask for the same data have tasks of the same key;
// task_checkpoints.task holds it.
func (t Task) Key() string {
	if t.Listings != nil {
		// Its size and status policy change how, not what, it pulls.
		return t.Endpoint.Name + " " + t.Request()
	}
	about := t.Request()
	if t.Set != nil {
		about = "set=" + t.Set.Name + " " + about
	}
	t.Since, t.AskFrom = time.Time{}, time.Time{}
	q := t.Params(0, 0)
	q.Del("offset")
	q.Del("limit")
	q.Del("format")
	if t.Spec.DateTo == "" {
		q.Del("date_to") // the task's top, which its month says
	}
	return t.Endpoint.Name + " " + about + "?" + q.Encode()
}

// FirstLimitProbe is the limit a paged task whose spec gives no limit
// asks for while the endpoint's bound is not known, once the API has
// answered a request of the run (before that, the run's requests ask the
// endpoint's default page: see runTask), and the largest page such a task
// asks for at all: 100,000 lines. A bound below it is learned from the
// refusal; above it, pages stay at it. Not the
// int32 maximum that the size of Get locations is probed with: a line of
// links costs 45 units, and every request reserves its worst case before
// it is sent (100,000 lines of links: 4.5 million units; 2^31-1 lines: 97
// billion, which a crash would leave booked). Larger pages buy no speed:
// at the API's 10 requests a second, pages of 100,000 lines carry
// 1,000,000 lines a second, many times what the loader writes; and a crash
// loses the pages in flight, which the next run buys again.
const FirstLimitProbe = 100_000

// UnknownPageNote says how a plan counts the requests of a task that
// pages with a limit while the API's bound of it is not known: at the
// endpoint's default page (page lines), the most requests the run sends.
func UnknownPageNote(page int) string {
	return fmt.Sprintf("the API's bound of limit is not known yet: once the API has answered the run, a request asks for %d lines and learns it; requests counted at the default page of %d, the most the run sends",
		FirstLimitProbe, page)
}

// PageNote says, for a plan, how a task that pages with a limit sizes its
// pages.
func (t Task) PageNote() string {
	switch {
	case t.Unlearned:
		return UnknownPageNote(t.PageSize())
	case t.Bound == 0:
		return fmt.Sprintf("pages of %d (the job's limit; the API's bound is not known yet)", t.PageSize())
	case t.Spec.Limit > t.Bound:
		return fmt.Sprintf("pages of %d, the API's bound (the job's limit %d is above it)", t.PageSize(), t.Spec.Limit)
	case t.Spec.Limit > 0:
		return fmt.Sprintf("pages of %d (the job's limit)", t.PageSize())
	case t.Bound > FirstLimitProbe:
		return fmt.Sprintf("pages of %d, the most a page asks for (the API accepts %d)", t.PageSize(), t.Bound)
	}
	return fmt.Sprintf("pages of %d (the API's bound of limit)", t.PageSize())
}

// Narrow sets AskFrom and HeldMonths of a summary task to skip the
// oldest months of its range that closed holds (months ended when they
// were fetched); all reports that every month of the range is held (the
// task asks nothing).
func (t *Task) Narrow(closed map[time.Time]bool, cur time.Time) (all bool) {
	t.AskFrom, t.HeldMonths = time.Time{}, 0
	top := t.Top()
	low := top.AddDate(0, 1-t.Limit(), 0)
	if from, err := time.Parse("2006-01", t.Spec.DateFrom); err == nil && from.After(low) {
		low = from
	}
	m := low
	for !m.After(top) && m.Before(cur) && closed[m] {
		m = m.AddDate(0, 1, 0)
	}
	if m.After(top) {
		t.HeldMonths = t.Limit()
		return true
	}
	if m.After(low) {
		t.AskFrom = m
		t.HeldMonths = (m.Year()-low.Year())*12 + int(m.Month()) - int(low.Month())
	}
	return false
}

// AskedRange is the range of months a summary task asks for: from its
// date_from (or as far back as its limit reaches) to its top; ok is false
// for a task that asks for no range.
func (t Task) AskedRange() (from, to time.Time, ok bool) {
	if !t.Narrows() {
		return time.Time{}, time.Time{}, false
	}
	to = t.Top()
	from = to.AddDate(0, 1-t.Limit(), 0)
	if f, err := time.Parse("2006-01", t.DateFrom()); err == nil && f.After(from) {
		from = f
	}
	return from, to, true
}

// Bounded reports whether the task's cost has a bound without knowing its
// total: it is not paged, or max_rows caps it.
func (t Task) Bounded() bool {
	return !t.Paged() || t.Spec.MaxRows > 0
}

// SmallestRequest is the least the ledger lets the task's next request
// cost: one line of a paged request, which may shrink, else its whole
// worst case.
func (t Task) SmallestRequest() int64 {
	if t.Shrinks() {
		return t.Endpoint.Price.Units
	}
	return t.Endpoint.Price.Worst(t.WorstLines(t.PageLimit(0)))
}
