package jobspec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/filter"
	"github.com/seoetl/etl/internal/suggest"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/money"
)

// Spec is a parsed and validated job spec file.
type Spec struct {
	File string
	Jobs []*Job
	// Retention is the installation's retention policy; nil when the file
	// sets none (the default: nothing is ever removed).
	Retention *RetentionSpec
	// Budget holds the installation's caps (Daily, Monthly), copied into
	// every job's Caps.
	Budget budget.Caps
	// UnitPrice is what API units cost (unit_price: {per, amount,
	// currency}); nil when the file states no price: then units are
	// shown alone, never priced by a guess.
	UnitPrice *money.Price
}

// RetentionSpec is the `retention:` setting of a job spec: how many months
// of fetched data the warehouse keeps, and for how long the runs'
// bookkeeping is kept in full.
type RetentionSpec struct {
	Line int
	// KeepMonths keeps what was fetched in the current month and the
	// KeepMonths-1 months before it; 0: the data is kept for ever.
	KeepMonths int
	// Detach keeps old partitions aside as standalone tables instead of
	// dropping them.
	Detach bool
	// KeepRunDetail is keep_run_detail: the runs that finished longer ago
	// have their bookkeeping compacted (CompactRuns); 0: never.
	KeepRunDetail time.Duration
	// ExportTo, when set, is a folder that each partition retention drops
	// whole is exported to as Parquet first (package export); a partition
	// that fails to export is not dropped.
	ExportTo string
}

// Job returns the job called name.
func (s *Spec) Job(name string) (*Job, error) {
	for _, j := range s.Jobs {
		if j.Name == name {
			return j, nil
		}
	}
	names := make([]string, len(s.Jobs))
	for i, j := range s.Jobs {
		names[i] = j.Name
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = Quote(n)
	}
	return nil, fmt.Errorf("%s: no job named %s%s (jobs: %s)", s.File, Quote(name), didYouMean(name, names), strings.Join(quoted, ", "))
}

// cronParser reads a job's schedule: the standard five fields, or six with
// seconds first, or a descriptor.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Job is one named job of a spec.
type Job struct {
	Name string
	Line int
	// Schedule is a cron expression ("" for none): five fields, or six
	// with seconds first, or a descriptor such as @daily.
	Schedule string
	// Cron is Schedule parsed; nil without one.
	Cron cron.Schedule
	// Timezone is the IANA zone the schedule is read in; default UTC.
	Timezone string
	// Location is Timezone loaded.
	Location *time.Location
	// CatchUp says what the scheduler does about ticks it missed while it
	// was down: "once" runs the job once, now, for the latest of them
	// (default); "skip" waits for the next tick.
	CatchUp string
	Targets []Target
	// TargetSets are the sets of targets comparison and matrix ask about
	// together, one request per set.
	TargetSets []TargetSet
	Endpoints  []EndpointSpec
	// Keywords configures keyword metrics; nil when the job collects none.
	Keywords *KeywordSpec
	// Caps are the job's caps (PerRun, JobMonthly) with the installation's
	// (Daily, Monthly).
	Caps budget.Caps
	// Account names the OAuth account (etl auth login --account NAME)
	// whose bearer token the job's requests carry instead of ETL_API_KEY;
	// "" for the key. Budgets and the ledger work the same.
	Account string
	// Listings pulls the locations of an account; nil when the job pulls
	// none.
	Listings *ListingSpec
	// MaxAge is how old the data a task would buy may be before a run
	// buys it again (max_age; 0: every run buys): a task whose same
	// request finished within it is held, not sent. An endpoint's or the
	// keywords' own max_age overrides it. Default DefaultMaxAge, cut for
	// a schedule that ticks more often (defaultMaxAge); MaxAgeSet says
	// the spec set it.
	MaxAge    time.Duration
	MaxAgeSet bool
}

// Target is one backlink target of a job.
type Target struct {
	URL   string
	Scope catalog.Scope
	Line  int
}

// TargetSet is a named list of targets, sent together in one comparison
// or matrix request.
type TargetSet struct {
	Name  string
	Scope catalog.Scope
	// URLs in request order: matrix's backlinks_counts follow it.
	URLs []string
	Line int
}

// EndpointSpec configures one backlink endpoint of a job.
type EndpointSpec struct {
	Endpoint  *catalog.Endpoint
	Line      int
	Fields    []string
	Filter    string
	OrderBy   string
	Direction string
	// Limit is the page size; 0 means the endpoint's default.
	Limit int
	// MaxRows caps the rows fetched per target; 0 means all.
	MaxRows int
	// DateFrom and DateTo (YYYY-MM) bound summary history.
	DateFrom, DateTo string
	// Incremental names a timestamp field (first_seen_at): each run asks
	// only for rows past the watermark the last one reached, ordered by it.
	Incremental string
	// MaxAge overrides the job's max_age for this endpoint; nil: the job's.
	MaxAge *time.Duration
}

// KeywordSpec configures keyword metrics: every keyword in every country for
// every month.
type KeywordSpec struct {
	Line      int
	Keywords  []string
	Countries []string
	// Months (YYYY-MM); empty means the current month.
	Months []string
	// MaxAge overrides the job's max_age for keyword metrics; nil: the
	// job's.
	MaxAge *time.Duration
}

// perSetRequest reports whether ep asks about a target set (its urls
// parameter) rather than one target.
func perSetRequest(ep *catalog.Endpoint) bool {
	_, ok := ep.Param("urls")
	return ok
}

// Problem is one thing wrong with a spec, at a place in its file.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// SpecError lists everything wrong with a spec file.
type SpecError struct {
	Problems []Problem
}

func (e *SpecError) Error() string {
	s := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		s[i] = p.String()
	}
	return strings.Join(s, "\n")
}

// MaxSpecBytes bounds the size of a job spec LoadSpec reads: far above any
// real one, and low enough that a wrong path (a device, a pipe that never
// ends, a data file) fails at once instead of exhausting memory.
const MaxSpecBytes = 8 << 20

// LoadSpec reads and validates the job spec at path. now gives the current
// month for month bounds.
func LoadSpec(path string, now time.Time) (*Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading job spec: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading job spec: %w", err)
	}
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("reading job spec: %s is larger than %d MiB: is it the job spec?", path, MaxSpecBytes>>20)
	}
	return ParseSpec(path, data, now)
}

// ParseSpec parses and validates a job spec; file names it in messages.
func ParseSpec(file string, data []byte, now time.Time) (*Spec, error) {
	p := &parser{file: file, now: now.UTC(), skip: map[*yaml.Node]bool{}}
	spec := p.parse(data)
	if len(p.problems) > 0 {
		slices.SortStableFunc(p.problems, func(a, b Problem) int { return a.Line - b.Line })
		return nil, &SpecError{Problems: p.problems}
	}
	return spec, nil
}

type parser struct {
	file     string
	now      time.Time
	problems []Problem
	// skip holds the keys already refused as a whole (given twice,
	// holding a NUL): what they say is not read.
	skip map[*yaml.Node]bool
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.problems = append(p.problems, Problem{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) parse(data []byte) *Spec {
	root, ok := p.readYAML(data)
	if !ok {
		return nil
	}
	spec := &Spec{File: p.file}
	if root == nil {
		p.problems = append(p.problems, Problem{File: p.file, Line: 1, Msg: "the file is empty; it needs a top-level `jobs:` list"})
		return spec
	}
	var jobs *yaml.Node
	meant := map[string]bool{} // keys mistyped
	p.mapping(root, "the file", func(key string, k, v *yaml.Node) {
		switch key {
		case "jobs":
			jobs = v
		case "retention":
			spec.Retention = p.retention(v)
		case "budget":
			p.caps(v, "the installation's budget", map[string]*int64{"daily": &spec.Budget.Daily, "monthly": &spec.Budget.Monthly})
		case "unit_price":
			spec.UnitPrice = p.unitPrice(v)
		default:
			p.unknown(meant, k, "unknown top-level key %s%s (expected: %s)", []string{"jobs", "retention", "budget", "unit_price"})
		}
	})
	if jobs == nil {
		if root.Kind == yaml.MappingNode && !meant["jobs"] {
			p.errorf(root, "missing top-level `jobs:` list")
		}
		return spec
	}
	if jobs.Kind != yaml.SequenceNode {
		p.errorf(jobs, "jobs must be a list of jobs")
		return spec
	}
	seen := map[string]int{}
	for _, jn := range jobs.Content {
		j := p.job(jn)
		if j == nil {
			continue
		}
		if first, dup := seen[j.Name]; dup {
			p.errorf(jn, "job %s is defined twice (first at line %d)", Quote(j.Name), first)
		}
		seen[j.Name] = j.Line
		spec.Jobs = append(spec.Jobs, j)
	}
	if len(jobs.Content) == 0 {
		p.errorf(jobs, "jobs is empty")
	}
	for _, j := range spec.Jobs {
		j.Caps.Daily, j.Caps.Monthly = spec.Budget.Daily, spec.Budget.Monthly
	}
	return spec
}

// mapping calls fn for each key of a mapping node, reporting a non-mapping.
func (p *parser) mapping(n *yaml.Node, what string, fn func(key string, k, v *yaml.Node)) bool {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping (key: value)", what)
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !p.skip[n.Content[i]] {
			fn(n.Content[i].Value, n.Content[i], n.Content[i+1])
		}
	}
	return true
}

// unknown reports key k, which is none of want. format has three verbs:
// the key, the one of want it is likely a typo of, and want. It records
// that one in meant, so that the key is not reported missing as well.
func (p *parser) unknown(meant map[string]bool, k *yaml.Node, format string, want []string) {
	p.errorf(k, format, Quote(k.Value), didYouMean(k.Value, want), strings.Join(want, ", "))
	if s := suggest.Closest(k.Value, want); s != "" {
		meant[s] = true
	}
}

// didYouMean suggests the one of want that name is likely a typo of.
func didYouMean(name string, want []string) string {
	if s := suggest.Closest(name, want); s != "" && s != name {
		return "; did you mean " + Quote(s) + "?"
	}
	return ""
}

func (p *parser) str(n *yaml.Node, field string) string {
	if n.Kind != yaml.ScalarNode {
		p.errorf(n, "%s must be a single value", field)
		return ""
	}
	return n.Value
}

// integer reads a whole number from min to max. A number out of range,
// however large (past what an int holds too), is refused naming both
// bounds.
func (p *parser) integer(n *yaml.Node, field string, min, max int) int {
	s := p.str(n, field)
	v, err := strconv.Atoi(s)
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && (v < min || v > max):
		p.errorf(n, "%s must be between %d and %d, got %s", field, min, max, number(s))
	case err != nil:
		p.errorf(n, "%s must be an integer, got %s", field, Quote(s))
		return 0
	}
	return v
}

func (p *parser) strings(n *yaml.Node, field string) []string {
	if n.Kind == yaml.ScalarNode {
		// "a, b" or a single value
		var out []string
		for _, s := range strings.Split(n.Value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "%s must be a list", field)
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		out = append(out, p.str(c, field+" item"))
	}
	return out
}

func (p *parser) job(n *yaml.Node) *Job {
	j := &Job{Line: n.Line, Timezone: "UTC", Location: time.UTC, CatchUp: "once"}
	var nodes jobNodes
	meant := map[string]bool{} // keys mistyped
	ok := p.mapping(n, "a job", func(key string, k, v *yaml.Node) {
		if !p.jobKey(j, &nodes, key, v) {
			p.unknown(meant, k, "unknown job key %s%s (expected: %s)", jobKeys)
		}
	})
	if !ok {
		return nil
	}
	if nodes.schedule != nil && j.Cron.Next(p.now.In(j.Location)).IsZero() {
		// robfig/cron looks five years ahead and gives up with the zero time.
		p.errorf(nodes.schedule, "schedule %s never fires: no time in the next five years matches it; fix the day of month or the month (a day the month never has, such as 30 February?)", Quote(j.Schedule))
	}
	if j.Name == "" && !meant["name"] {
		p.errorf(n, "job has no name")
	}
	if !j.MaxAgeSet {
		j.MaxAge = defaultMaxAge(j.Cron, p.now)
	}
	listed := p.jobContents(j, nodes)
	p.jobCollects(n, j, nodes, listed, meant)
	p.jobScopes(j)
	return j
}

// jobNodes are the values of the keys of a job read after the others:
// what they hold depends on the job's account, or is checked against one
// another.
type jobNodes struct {
	targets, sets, endpoints, keywords, listings *yaml.Node
	schedule                                     *yaml.Node // a schedule that parsed
}

// jobKey reads the key of a job into j, or holds its value in nodes to be
// read once the others are: false when a job has no such key.
func (p *parser) jobKey(j *Job, nodes *jobNodes, key string, v *yaml.Node) bool {
	switch key {
	case "name":
		j.Name = p.str(v, "name")
	case "schedule":
		j.Schedule = p.str(v, "schedule")
		if j.Cron = p.cron(v, j.Schedule); j.Cron != nil {
			nodes.schedule = v
		}
	case "timezone":
		j.Timezone = p.str(v, "timezone")
		if loc := p.timezone(v, j.Timezone); loc != nil {
			j.Location = loc
		}
	case "catch_up":
		j.CatchUp = p.str(v, "catch_up")
		if j.CatchUp != "once" && j.CatchUp != "skip" {
			p.errorf(v, "catch_up %s: want once (run once for the ticks missed while the scheduler was down) or skip", Quote(j.CatchUp))
		}
	case "targets":
		nodes.targets = v
	case "target_sets":
		nodes.sets = v
	case "endpoints":
		nodes.endpoints = v
	case "keywords":
		nodes.keywords = v
	case "listings":
		nodes.listings = v
	case "budget":
		p.caps(v, "a job's budget", map[string]*int64{"per_run": &j.Caps.PerRun, "monthly": &j.Caps.JobMonthly})
	case "max_age":
		if d, ok := p.age(v); ok {
			j.MaxAge, j.MaxAgeSet = d, true
		}
	case "account":
		j.Account = p.str(v, "account")
		if err := auth.CheckName(j.Account); err != nil {
			p.errorf(v, "%v (sign it in with etl auth login --account NAME)", err)
		}
	default:
		return false
	}
	return true
}

// jobContents reads the targets, target sets, endpoints, keywords and
// listings of j: the number of endpoints listed, known or not.
func (p *parser) jobContents(j *Job, nodes jobNodes) (listed int) {
	if nodes.targets != nil {
		j.Targets = p.targets(nodes.targets)
	}
	if nodes.sets != nil {
		j.TargetSets = p.targetSets(nodes.sets)
	}
	if nodes.endpoints != nil {
		p.mapping(nodes.endpoints, "endpoints", func(name string, k, v *yaml.Node) {
			listed++
			if es, ok := p.endpoint(name, k, v); ok {
				j.Endpoints = append(j.Endpoints, es)
			}
		})
	}
	if nodes.keywords != nil {
		j.Keywords = p.keywords(nodes.keywords)
	}
	if nodes.listings != nil {
		j.Listings = p.listings(nodes.listings, j.Account)
	}
	return listed
}

// jobCollects reports a job (n) whose endpoints have nothing to ask about,
// whose target sets no endpoint asks about, or that collects nothing; a key
// meant but mistyped is reported as that already.
func (p *parser) jobCollects(n *yaml.Node, j *Job, nodes jobNodes, listed int, meant map[string]bool) {
	var perTarget, perSet []string
	for _, es := range j.Endpoints {
		if perSetRequest(es.Endpoint) {
			perSet = append(perSet, es.Endpoint.Name)
		} else {
			perTarget = append(perTarget, es.Endpoint.Name)
		}
	}
	if len(perTarget) > 0 && len(j.Targets) == 0 && !meant["targets"] {
		p.errorf(n, "%s has endpoints (%s) but no targets", named("job", j.Name), strings.Join(perTarget, ", "))
	}
	if len(perSet) > 0 && len(j.TargetSets) == 0 && !meant["target_sets"] {
		p.errorf(n, "%s collects %s but has no target_sets to ask about", named("job", j.Name), strings.Join(perSet, " and "))
	}
	if len(perSet) == 0 && len(j.TargetSets) > 0 {
		p.errorf(nodes.sets, "target_sets are asked about by comparison and matrix only, and %s collects neither", named("job", j.Name))
	}
	if listed == 0 && j.Keywords == nil && nodes.listings == nil && !meant["endpoints"] && !meant["keywords"] && !meant["listings"] {
		p.errorf(n, "%s collects nothing: give it endpoints (with targets), keywords or listings", named("job", j.Name))
	}
}

// jobScopes reports each target (or target set) of j whose scope an
// endpoint of j does not allow.
func (p *parser) jobScopes(j *Job) {
	for _, es := range j.Endpoints {
		if perSetRequest(es.Endpoint) {
			p.checkSets(es, j.TargetSets)
			continue
		}
		if len(es.Endpoint.Scopes) == 0 {
			continue // competitors takes a domain, whatever the target's scope
		}
		for _, t := range j.Targets {
			if t.Scope != "" && !es.Endpoint.AllowsScope(t.Scope) {
				p.problems = append(p.problems, Problem{File: p.file, Line: t.Line, Msg: fmt.Sprintf(
					"%s has scope %s, which %s does not allow (allowed: %s; %s is at line %d)",
					named("target", t.URL), t.Scope, es.Endpoint.Name, catalog.ScopeNames(es.Endpoint.Scopes), es.Endpoint.Name, es.Line)})
			}
		}
	}
}

var jobKeys = []string{"name", "schedule", "timezone", "catch_up", "targets", "target_sets", "endpoints", "keywords", "listings", "budget", "account", "max_age"}

// cronHelp says how to write a schedule.
const cronHelp = "minute hour day-of-month month day-of-week, optionally seconds first, or @daily, @hourly..."

// cron parses the schedule s (read from n); nil when it is not one.
func (p *parser) cron(n *yaml.Node, s string) cron.Schedule {
	var reason string
	switch {
	case n.Kind != yaml.ScalarNode:
		return nil // reported by str
	case s == "":
		p.errorf(n, "schedule is empty; write a cron expression (%s), or leave the key out for a job without a schedule", cronHelp)
		return nil
	case strings.HasPrefix(s, "CRON_TZ=") || strings.HasPrefix(s, "TZ="):
		reason = "give the time zone as the job's timezone"
	case strings.HasPrefix(s, "@every"):
		// Its ticks count from whenever a scheduler starts, so two
		// schedulers would not agree on them.
		reason = "@every is not supported: schedulers sharing the database must agree on each tick; use a cron expression (*/15 * * * *)"
	}
	var c cron.Schedule
	if reason == "" {
		var err error
		if c, err = cronParser.Parse(s); err != nil {
			reason = cronReason(err)
		}
	}
	if reason != "" {
		p.errorf(n, "schedule %s is not a cron expression (%s): %s", Quote(s), cronHelp, reason)
		return nil
	}
	return c
}

// cronReason is robfig/cron's reason for refusing a schedule without the
// part of the schedule it echoes (after ": "), which the message quotes
// already; the one field it names is quoted.
func cronReason(err error) string {
	reason, _, _ := strings.Cut(err.Error(), ": ")
	if field, ok := strings.CutPrefix(reason, "failed to parse int from "); ok {
		return fmt.Sprintf("field %s is not a number or a name (JAN-DEC, SUN-SAT)", Quote(field))
	}
	return reason
}

// timezone loads the zone name (read from n); nil when it is none, or the
// machine's own zone, on which a job must not depend.
func (p *parser) timezone(n *yaml.Node, name string) *time.Location {
	const iana = "write an IANA name such as UTC or Europe/Berlin"
	switch {
	case n.Kind != yaml.ScalarNode:
		return nil // reported by str
	case name == "":
		p.errorf(n, "timezone is empty; %s, or leave it out for UTC", iana)
	case name == "Local":
		p.errorf(n, "timezone %s is the zone of whatever machine runs the job; %s", Quote(name), iana)
	default:
		loc, err := time.LoadLocation(name)
		if err == nil {
			return loc
		}
		p.errorf(n, "timezone %s is not a time zone this machine knows; %s", Quote(name), iana)
	}
	return nil
}

func (p *parser) targets(n *yaml.Node) []Target {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "targets must be a list of {url, scope}")
		return nil
	}
	var out []Target
	seen := map[Target]int{}
	for _, tn := range n.Content {
		t := Target{Line: tn.Line}
		hasScope := false
		meant := map[string]bool{} // keys mistyped
		p.mapping(tn, "a target", func(key string, k, v *yaml.Node) {
			switch key {
			case "url":
				t.URL = p.str(v, "url")
			case "scope":
				t.Scope, hasScope = p.scope(v), true
			default:
				p.unknown(meant, k, "unknown target key %s%s (expected: %s)", []string{"url", "scope"})
			}
		})
		switch {
		case tn.Kind != yaml.MappingNode:
			continue // reported by mapping
		case t.URL == "" && !meant["url"]:
			p.errorf(tn, "target has no url")
		case len(t.URL) > catalog.MaxURLLen:
			p.errorf(tn, "target url is %d characters; the API accepts at most %d", len(t.URL), catalog.MaxURLLen)
		}
		if !hasScope && !meant["scope"] {
			p.errorf(tn, "%s has no scope (one of %s)", named("target", t.URL), catalog.ScopeNames(catalog.AllScopes))
		}
		key := Target{URL: t.URL, Scope: t.Scope}
		if first, dup := seen[key]; dup && t.Scope != "" {
			p.errorf(tn, "%s %s is listed twice (first at line %d)", named("target", t.URL), t.Scope, first)
		}
		seen[key] = t.Line
		out = append(out, t)
	}
	return out
}

// scope reads the scope of a target or a target set; "" when it is not one
// (reported).
func (p *parser) scope(n *yaml.Node) catalog.Scope {
	if n.Kind != yaml.ScalarNode {
		p.str(n, "scope")
		return ""
	}
	s := catalog.Scope(n.Value)
	if !slices.Contains(catalog.AllScopes, s) {
		names := make([]string, len(catalog.AllScopes))
		for i, sc := range catalog.AllScopes {
			names[i] = string(sc)
		}
		p.errorf(n, "unknown scope %s%s (expected one of %s)", Quote(n.Value), didYouMean(n.Value, names), catalog.ScopeNames(catalog.AllScopes))
		return ""
	}
	return s
}

// caps reads a budget mapping: each key of fields, a number of API units
// from 1 to catalog.MaxUnits.
func (p *parser) caps(n *yaml.Node, what string, fields map[string]*int64) {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	meant := map[string]bool{} // none is required
	p.mapping(n, what, func(key string, k, v *yaml.Node) {
		f, ok := fields[key]
		if !ok {
			p.unknown(meant, k, "unknown key %s of "+what+"%s (expected: %s, each a number of API units)", names)
			return
		}
		s := strings.ReplaceAll(p.str(v, key), "_", "")
		units, err := strconv.ParseInt(s, 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange) || err == nil && units > catalog.MaxUnits:
			p.errorf(v, "%s must be between 1 and %d API units, got %s", key, catalog.MaxUnits, number(v.Value))
		case err != nil:
			p.errorf(v, "%s must be a whole number of API units, got %s", key, Quote(v.Value))
		case units < 1:
			p.errorf(v, "%s must be between 1 and %d API units, got %d (leave it out for no cap)", key, catalog.MaxUnits, units)
		default:
			*f = units
		}
	})
}

// unitPrice reads unit_price: {per, amount, currency}, all three needed:
// amount (an exact decimal, up to money.Decimals decimals) buys per
// units. It returns nil when the setting is wrong.
func (p *parser) unitPrice(n *yaml.Node) *money.Price {
	var price money.Price
	bad := false
	meant := map[string]bool{} // keys mistyped
	seen := map[string]bool{}
	if !p.mapping(n, "unit_price", func(key string, k, v *yaml.Node) {
		seen[key] = true
		if v.Kind != yaml.ScalarNode && (key == "per" || key == "amount" || key == "currency") {
			p.str(v, key) // says it must be a single value
			bad = true
			return
		}
		switch key {
		case "per":
			s := strings.ReplaceAll(p.str(v, key), "_", "")
			per, err := strconv.ParseInt(s, 10, 64)
			switch {
			case errors.Is(err, strconv.ErrRange) || err == nil && (per < 1 || per > money.MaxPer):
				p.errorf(v, "per must be between 1 and %d API units, got %s", money.MaxPer, number(v.Value))
				bad = true
			case err != nil:
				p.errorf(v, "per must be a whole number of API units, got %s", Quote(v.Value))
				bad = true
			default:
				price.Per = per
			}
		case "amount":
			micros, err := money.ParseAmount(p.str(v, key))
			if err != nil {
				p.errorf(v, "amount %s, got %s", err, Quote(v.Value))
				bad = true
			}
			price.Micros = micros
		case "currency":
			c := p.str(v, key)
			if err := money.CheckCurrency(c); err != nil {
				p.errorf(v, "currency %s, got %s", err, Quote(c))
				bad = true
			}
			price.Currency = c
		default:
			p.unknown(meant, k, "unknown unit_price key %s%s (expected: %s)", []string{"per", "amount", "currency"})
			bad = true
		}
	}) {
		return nil
	}
	var missing []string
	for _, key := range []string{"per", "amount", "currency"} {
		if !seen[key] && !meant[key] {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		p.errorf(n, "unit_price needs %s (for example unit_price: {per: 1000000, amount: 50, currency: USD}: 50 USD per million units)", strings.Join(missing, ", "))
		return nil
	}
	if bad {
		return nil
	}
	return &price
}

func (p *parser) retention(n *yaml.Node) *RetentionSpec {
	r := &RetentionSpec{Line: n.Line}
	meant := map[string]bool{} // keys mistyped
	gave := false              // keep_months or keep_run_detail, right or wrong
	p.mapping(n, "retention", func(key string, k, v *yaml.Node) {
		switch key {
		case "keep_months":
			gave = true
			r.KeepMonths = p.integer(v, "keep_months", 1, load.MaxKeepMonths)
		case "detach":
			switch s := p.str(v, "detach"); s {
			case "true":
				r.Detach = true
			case "false":
			default:
				p.errorf(v, "detach must be true or false, got %s", Quote(s))
			}
		case "export_to":
			if r.ExportTo = p.str(v, "export_to"); r.ExportTo == "" {
				p.errorf(v, "export_to must be a folder, got an empty string")
			}
		case "keep_run_detail":
			gave = true
			s := p.str(v, "keep_run_detail")
			if v.Kind != yaml.ScalarNode {
				break
			}
			d, err := parseDuration("keep_run_detail", s, MaxRunDetail)
			switch {
			case err != nil:
				p.errorf(v, "%v", err)
			case d < MinRunDetail:
				p.errorf(v, "keep_run_detail %s is less than %s: runs keep their whole detail at least a day (leave the key out to keep it for ever)", Quote(s), FormatAge(MinRunDetail))
			default:
				r.KeepRunDetail = d
			}
		default:
			p.unknown(meant, k, "unknown retention key %s%s (expected: %s)", []string{"keep_months", "detach", "keep_run_detail", "export_to"})
		}
	})
	if r.KeepMonths == 0 && r.KeepRunDetail == 0 && !gave && !meant["keep_months"] && !meant["keep_run_detail"] {
		p.errorf(n, "retention needs keep_months (at least 1: the months of fetched data to keep, the current one included) or keep_run_detail (such as 90d: how long runs keep their task checkpoints and ledger rows in full)")
	} else if r.ExportTo != "" && r.KeepMonths == 0 && !meant["keep_months"] && gave {
		p.errorf(n, "export_to exports what keep_months drops, and this retention sets no keep_months: nothing would ever be exported")
	}
	return r
}

func (p *parser) targetSets(n *yaml.Node) []TargetSet {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "target_sets must be a list of {name, scope, urls}")
		return nil
	}
	var out []TargetSet
	names := map[string]int{}
	for _, sn := range n.Content {
		ts := TargetSet{Line: sn.Line}
		var urls *yaml.Node
		hasScope := false
		meant := map[string]bool{} // keys mistyped
		if !p.mapping(sn, "a target set", func(key string, k, v *yaml.Node) {
			switch key {
			case "name":
				ts.Name = p.str(v, "name")
			case "scope":
				ts.Scope, hasScope = p.scope(v), true
			case "urls":
				urls = v
				ts.URLs = p.unique(v, p.strings(v, "urls"), "url")
			default:
				p.unknown(meant, k, "unknown target set key %s%s (expected: %s)", []string{"name", "scope", "urls"})
			}
		}) {
			continue
		}
		set := named("target set", ts.Name)
		if ts.Name == "" && !meant["name"] {
			p.errorf(sn, "target set has no name")
		} else if first, dup := names[ts.Name]; dup {
			p.errorf(sn, "%s is defined twice (first at line %d)", set, first)
		}
		names[ts.Name] = ts.Line
		if !hasScope && !meant["scope"] {
			p.errorf(sn, "%s has no scope (one of %s)", set, catalog.ScopeNames(catalog.AllScopes))
		}
		if len(ts.URLs) == 0 && !meant["urls"] {
			p.errorf(sn, "%s has no urls", set)
		}
		for _, u := range ts.URLs {
			switch {
			case len(u) > catalog.MaxURLLen:
				p.errorf(urls, "url %s of %s is %d characters; the API accepts at most %d", Quote(u), set, len(u), catalog.MaxURLLen)
			case strings.Contains(u, ","):
				p.errorf(urls, "url %s of %s holds a comma; the API takes urls comma separated, so it cannot be sent", Quote(u), set)
			}
		}
		out = append(out, ts)
	}
	return out
}

// checkSets reports the target sets the set endpoint es cannot ask about:
// too many urls, or a scope it does not allow.
func (p *parser) checkSets(es EndpointSpec, sets []TargetSet) {
	ep := es.Endpoint
	urls, _ := ep.Param("urls")
	for _, ts := range sets {
		if len(ts.URLs) > urls.Max {
			p.problems = append(p.problems, Problem{File: p.file, Line: ts.Line, Msg: fmt.Sprintf(
				"%s has %d urls; %s takes at most %d (%s is at line %d)", named("target set", ts.Name), len(ts.URLs), ep.Name, urls.Max, ep.Name, es.Line)})
		}
		if ts.Scope != "" && !ep.AllowsScope(ts.Scope) {
			p.problems = append(p.problems, Problem{File: p.file, Line: ts.Line, Msg: fmt.Sprintf(
				"%s has scope %s, which %s does not allow (allowed: %s; %s is at line %d)",
				named("target set", ts.Name), ts.Scope, ep.Name, catalog.ScopeNames(ep.Scopes), ep.Name, es.Line)})
		}
	}
}

var monthRE = regexp.MustCompile(`^\d{4}-(0[1-9]|1[0-2])$`)

// month validates a YYYY-MM value between first and the current month; ""
// when it is not a month.
func (p *parser) month(n *yaml.Node, field, first string) string {
	s := p.str(n, field)
	switch {
	case n.Kind != yaml.ScalarNode:
		return "" // reported by str
	case !monthRE.MatchString(s):
		p.errorf(n, "%s %s is not a month (YYYY-MM)", field, Quote(s))
		return ""
	case first != "" && s < first:
		p.errorf(n, "%s %s is before %s, the oldest month the API has", field, s, first)
	case s > p.now.Format("2006-01"):
		p.errorf(n, "%s %s is after the current month %s", field, s, p.now.Format("2006-01"))
	}
	return s
}

func (p *parser) endpoint(name string, k, v *yaml.Node) (EndpointSpec, bool) {
	ep, ok := p.backlinkEndpoint(name, k)
	if !ok {
		return EndpointSpec{}, false
	}
	es := EndpointSpec{Endpoint: ep, Line: k.Line}
	if v.Kind == yaml.ScalarNode && (v.Tag == "!!null" || v.Value == "") {
		return es, true // "overview:" with no options
	}
	o := endpointReader{p: p, ep: ep, es: &es, fieldsOK: true}
	meant := map[string]bool{} // none is required
	p.mapping(v, name, func(key string, kn, vn *yaml.Node) {
		if !o.option(key, kn, vn) {
			p.unknown(meant, kn, "unknown option %s of "+ep.Name+"%s (options: %s where the endpoint takes them)", endpointOptions)
		}
	})
	o.agree(v)
	return es, true
}

// backlinkEndpoint looks up the endpoint a job names (k its key), reporting
// one the catalog does not have or that is configured elsewhere.
func (p *parser) backlinkEndpoint(name string, k *yaml.Node) (*catalog.Endpoint, bool) {
	ep, ok := catalog.Lookup(name)
	if !ok || ep.Name == "keyword-metrics" {
		hint := ""
		if ok {
			hint = "; keyword metrics are configured under `keywords:`"
		}
		p.errorf(k, "unknown endpoint %s%s (backlink endpoints: %s)%s", Quote(name), didYouMean(name, backlinkNames()), strings.Join(backlinkNames(), ", "), hint)
		return nil, false
	}
	return ep, true
}

// endpointReader reads the options of one endpoint of a job into es.
type endpointReader struct {
	p  *parser
	ep *catalog.Endpoint
	es *EndpointSpec
	// Whether the options that name fields name fields: only then are
	// they checked against one another.
	fieldsOK, orderOK, incOK bool
}

// option reads the option key (kn its key, vn its value): false when ep has
// no such option at all.
func (o *endpointReader) option(key string, kn, vn *yaml.Node) bool {
	p, ep, es := o.p, o.ep, o.es
	switch key {
	case "fields":
		if o.accepts(kn, "fields") {
			o.fields(vn)
		}
	case "filter":
		if o.accepts(kn, "filter") {
			es.Filter = p.str(vn, "filter")
			// The same parser the API's stand-in uses: a filter the
			// API would refuse is refused here, before a unit is spent.
			if _, err := filter.Parse(es.Filter, ep); err != nil {
				p.errorf(vn, "filter of %s: %v", ep.Name, err)
			}
		}
	case "order_by":
		if o.accepts(kn, "order_by") {
			es.OrderBy, o.orderOK = o.field(vn, "to order by")
		}
	case "direction":
		if o.accepts(kn, "direction") {
			es.Direction = p.str(vn, "direction")
			if vn.Kind == yaml.ScalarNode && es.Direction != "ASC" && es.Direction != "DESC" {
				p.errorf(vn, "direction must be ASC or DESC, got %s", Quote(es.Direction))
			}
		}
	case "limit":
		if o.accepts(kn, "limit") {
			es.Limit = p.integer(vn, "limit", 1, catalog.MaxLimit)
		}
	case "max_rows":
		if _, ok := ep.Param("limit"); !ok {
			p.errorf(kn, "%s takes no limit, so max_rows cannot cap it", ep.Name)
			break
		}
		es.MaxRows = p.integer(vn, "max_rows", 1, catalog.MaxTaskRows)
	case "date_from", "date_to":
		if o.accepts(kn, key) {
			m := p.month(vn, key, "")
			if key == "date_from" {
				es.DateFrom = m
			} else {
				es.DateTo = m
			}
		}
	case "incremental":
		o.incremental(kn, vn)
	case "max_age":
		if d, ok := p.age(vn); ok {
			es.MaxAge = &d
		}
	default:
		return false
	}
	return true
}

// accepts reports whether ep takes param, reporting it (at kn) when not.
func (o *endpointReader) accepts(kn *yaml.Node, param string) bool {
	if _, ok := o.ep.Param(param); !ok {
		o.p.errorf(kn, "%s takes no %s", o.ep.Name, param)
		return false
	}
	return true
}

// field reads a field name of ep, reporting one that is none (what says
// what it is for): ok when it is one.
func (o *endpointReader) field(vn *yaml.Node, what string) (name string, ok bool) {
	name = o.p.str(vn, what)
	if vn.Kind != yaml.ScalarNode {
		return name, false
	}
	if _, ok := o.ep.Field(name); !ok {
		o.p.errorf(vn, "%s has no field %s %s%s (fields: %s)", o.ep.Name, Quote(name), what, didYouMean(name, o.ep.FieldNames()), strings.Join(o.ep.FieldNames(), ", "))
		return name, false
	}
	return name, true
}

// fields reads the fields option, reporting each name that is not a field
// of ep.
func (o *endpointReader) fields(vn *yaml.Node) {
	ep := o.ep
	o.es.Fields = o.p.strings(vn, "fields")
	for _, f := range o.es.Fields {
		if _, ok := ep.Field(f); !ok {
			o.p.errorf(vn, "%s has no field %s%s (fields: %s)", ep.Name, Quote(f), didYouMean(f, ep.FieldNames()), strings.Join(ep.FieldNames(), ", "))
			o.fieldsOK = false
		}
	}
}

// incremental reads the incremental option: a timestamp field of an
// endpoint that takes a filter and an offset.
func (o *endpointReader) incremental(kn, vn *yaml.Node) {
	p, ep, es := o.p, o.ep, o.es
	_, paged := ep.Param("offset")
	_, filtered := ep.Param("filter")
	if !paged || !filtered {
		es.Incremental = p.str(vn, "incremental")
		p.errorf(kn, "%s cannot be pulled incrementally: it takes no filter and offset", ep.Name)
		return
	}
	es.Incremental, o.incOK = o.field(vn, "to pull incrementally by")
	if f, _ := ep.Field(es.Incremental); o.incOK && f.Kind != catalog.Timestamp {
		p.errorf(vn, "incremental needs a timestamp field of %s; %s is not one", ep.Name, es.Incremental)
	}
}

// agree reports the options that contradict one another (v the endpoint's
// options): fields without the keys, an incremental pull ordered otherwise,
// an order by a field not returned, dates the wrong way round.
func (o *endpointReader) agree(v *yaml.Node) {
	p, ep, es := o.p, o.ep, o.es
	if len(es.Fields) > 0 {
		for _, f := range ep.Required() {
			if !slices.Contains(es.Fields, f) {
				p.errorf(v, "%s's fields must include %s: the warehouse keys its rows on it", ep.Name, f)
			}
		}
	}
	if o.incOK {
		if o.orderOK && es.OrderBy != es.Incremental {
			p.errorf(v, "incremental pulls are ordered by %s; order_by %s cannot apply", es.Incremental, es.OrderBy)
		}
		if es.Direction == "DESC" {
			p.errorf(v, "incremental pulls are ordered by %s ascending; direction DESC cannot apply", es.Incremental)
		}
		if len(es.Fields) > 0 && !slices.Contains(es.Fields, es.Incremental) {
			p.errorf(v, "%s's fields must include %s: incremental pulls track it", ep.Name, es.Incremental)
		}
	}
	if o.orderOK && o.fieldsOK && len(es.Fields) > 0 && !slices.Contains(es.Fields, es.OrderBy) {
		p.errorf(v, "order_by %s must be among the fields returned (%s)", es.OrderBy, strings.Join(es.Fields, ", "))
	}
	if es.DateFrom != "" && es.DateTo != "" && es.DateFrom > es.DateTo {
		p.errorf(v, "date_from %s is after date_to %s", es.DateFrom, es.DateTo)
	}
}

// endpointOptions are the options of an endpoint of a job.
var endpointOptions = []string{"fields", "filter", "order_by", "direction", "limit", "max_rows", "date_from", "date_to", "incremental", "max_age"}

func backlinkNames() []string {
	var names []string
	for _, e := range catalog.All() {
		if e.PerTarget || e.PerSet {
			names = append(names, e.Name)
		}
	}
	return names
}

func (p *parser) keywords(n *yaml.Node) *KeywordSpec {
	ks := &KeywordSpec{Line: n.Line}
	meant := map[string]bool{} // keys mistyped
	p.mapping(n, "keywords", func(key string, k, v *yaml.Node) {
		switch key {
		case "keywords":
			ks.Keywords = p.unique(v, p.strings(v, "keywords"), "keyword")
			for _, kw := range ks.Keywords {
				if l := len([]rune(kw)); l < catalog.MinKeywordLen || l > catalog.MaxKeywordLen {
					p.errorf(v, "keyword %s is %d characters; the API accepts %d to %d", Quote(kw), l, catalog.MinKeywordLen, catalog.MaxKeywordLen)
				}
			}
		case "countries":
			ks.Countries = p.unique(v, p.strings(v, "countries"), "country")
			for _, c := range ks.Countries {
				if !catalog.ValidCountry(c) {
					p.errorf(v, "unknown country %s (the API's codes are uppercase ISO 3166-1 alpha-2, plus UK)", Quote(c))
				}
			}
		case "months":
			for _, mn := range p.seq(v, "months") {
				if m := p.month(mn, "month", catalog.FirstKeywordMonth); m != "" {
					ks.Months = append(ks.Months, m)
				}
			}
			ks.Months = p.unique(v, ks.Months, "month")
		case "max_age":
			if d, ok := p.age(v); ok {
				ks.MaxAge = &d
			}
		default:
			p.unknown(meant, k, "unknown keywords key %s%s (expected: %s)", []string{"keywords", "countries", "months", "max_age"})
		}
	})
	if len(ks.Keywords) == 0 && !meant["keywords"] {
		p.errorf(n, "keywords needs at least one keyword")
	}
	if len(ks.Countries) == 0 && !meant["countries"] {
		p.errorf(n, "keywords needs at least one country")
	}
	return ks
}

// unique reports items listed twice (each would be a task paid twice) and
// returns the list without the repeats.
func (p *parser) unique(n *yaml.Node, items []string, what string) []string {
	var out []string
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		if seen[it] {
			p.errorf(n, "%s %s is listed twice; it would be paid for twice", what, Quote(it))
			continue
		}
		seen[it] = true
		out = append(out, it)
	}
	return out
}

// seq returns the items of a list node (a scalar counts as a list of one).
func (p *parser) seq(n *yaml.Node, field string) []*yaml.Node {
	switch n.Kind {
	case yaml.SequenceNode:
		return n.Content
	case yaml.ScalarNode:
		return []*yaml.Node{n}
	}
	p.errorf(n, "%s must be a list", field)
	return nil
}

// MinRunDetail and MaxRunDetail bound keep_run_detail.
const (
	MinRunDetail = 24 * time.Hour
	MaxRunDetail = 100 * 366 * 24 * time.Hour
)
