package listing

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/seoetl/etl/catalog"
)

// PlanOptions are the assumptions of PlanPush.
type PlanOptions struct {
	// Margin is the fraction under the rate limits at which the push paces
	// its requests (Paced): each limit of N requests per period is read as
	// N per period/(1-Margin). Default DefaultMargin (0.05, 5% under) when
	// zero; a negative Margin means none, the exact limits of spec 8.2. It
	// must be below 1.
	Margin float64
	// BulkLatency is the time assumed from sending a bulk request to its
	// answer; bulk requests go one at a time, so the next is sent no
	// sooner. Default 0: answers are assumed instantaneous. Single
	// updates have no bound on those in flight (spec 8.2), so their
	// answers never hold the next back and need no assumption.
	BulkLatency time.Duration
	// EarlierBulk and EarlierSingle are the update requests of the account
	// sent before the push starts (Update locations and Update location:
	// by an earlier push, perhaps of a process that died), each as how
	// long before the start it was sent. They hold their places in the
	// windows, so that the push's first requests may wait for them to
	// leave. A negative one is taken as sent at the start. Only the last
	// Requests of each limit matter. Default none: the windows start
	// empty.
	EarlierBulk, EarlierSingle []time.Duration
	// Singly are ids that go by single update whatever the split: a bulk
	// request that carried them was refused as a whole (not for the rate
	// or the server), which says nothing of each; alone, each gets an
	// answer of its own. An id of Singly that ids lacks is ignored.
	Singly []string
}

func (o PlanOptions) withDefaults() (PlanOptions, error) {
	switch {
	case o.Margin == 0:
		o.Margin = DefaultMargin
	case o.Margin < 0:
		o.Margin = 0
	}
	if !(o.Margin < 1) {
		return o, fmt.Errorf("the pacing margin must be below 1 (a fraction of the rate limits: 0.05 paces 5%% under them), got %v", o.Margin)
	}
	if o.BulkLatency < 0 {
		return o, fmt.Errorf("the latency of a bulk request must not be negative, got %v", o.BulkLatency)
	}
	return o, nil
}

// Plan is the schedule of a push that finishes soonest under the rate
// limits of spec 8.2 (PlanPush).
type Plan struct {
	// Bulk are the ids of each Update locations request, in the order
	// they are sent: at most catalog.MaxBulkLocations each, none twice.
	Bulk [][]string
	// Single are the ids sent by Update location, one request each.
	Single []string
	// BulkAt and SingleAt are when each request of Bulk and Single is
	// sent, counted from the start of the push: the first request goes at
	// 0 unless the requests sent before it (Options.EarlierBulk,
	// EarlierSingle) fill its window.
	BulkAt   []time.Duration
	SingleAt []time.Duration
	// Requests is len(Bulk) + len(Single).
	Requests int
	// Duration is the time from the start of the push to the last request
	// sent (0 for one request, or none, sent at once), when every request
	// goes as soon as the paced rate limits allow (Window), the windows
	// holding the requests sent before the push (Options.EarlierBulk,
	// EarlierSingle; empty by default), and every bulk answer takes
	// Options.BulkLatency (instantaneous by default). With empty windows
	// the first request goes at the start, and Duration is the time from
	// the first request to the last. It does not count the answer of the
	// last request.
	Duration time.Duration
	// Wait is when the first request goes, counted from the start: 0
	// unless the windows are full of requests sent before the push.
	Wait time.Duration
	// Why says in one sentence how many requests go single and why.
	Why string
	// Repeated are the ids given more than once, after their first
	// occurrence: each id is planned once.
	Repeated []string
	// Options are the assumptions, defaults filled in (Margin 0 when none
	// was asked for).
	Options PlanOptions
}

// Locations returns the number of locations the plan sends.
func (p Plan) Locations() int {
	n := len(p.Single)
	for _, b := range p.Bulk {
		n += len(b)
	}
	return n
}

// PlanPush plans the sending of the locations of ids, each once (a
// repeated id is dropped, listed in Repeated), under the rate limits of
// spec 8.2 paced o.Margin under them: bulk requests (Update locations) of
// at most catalog.MaxBulkLocations ids, one at a time, at most
// catalog.UpdateLocations.Rate.Requests per period, and beside them, under
// a limit of their own, single updates (Update location) at
// catalog.UpdateLocation.Rate. Each limit is a sliding window (Window).
//
// The rule: bulk requests carry the first ids, 50 each, and the last ids
// are sent singly; of the ways to split them, the plan takes the one whose
// last request is sent soonest (Duration), then the one of fewer requests,
// then the one of fewer single updates. Bulk requests are cheap while the
// window has room (the first five go at once), but one more past them
// waits a whole period (a minute), while single updates go five a second:
// so the ids past the last bulk request that fits in time go singly when
// that ends sooner. 250 ids are five bulk requests sent at once; 251 are
// five bulk requests and one single update, not a sixth bulk request a
// minute later; 500 are five bulk requests and 250 single updates (49
// seconds at the exact limits) rather than ten bulk requests (a minute).
// Requests sent before the push (o.EarlierBulk, EarlierSingle) hold their
// places in the windows: three bulk requests sent a few seconds ago leave
// room for two more before the first of them leaves the minute.
//
// Ids are planned as given; an empty id is Check's business.
func PlanPush(ids []string, o PlanOptions) (Plan, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Options: o}
	singly := make(map[string]bool, len(o.Singly))
	for _, id := range o.Singly {
		singly[id] = true
	}
	seen := make(map[string]bool, len(ids))
	unique := make([]string, 0, len(ids))
	var forced []string // the ids of Singly
	for _, id := range ids {
		switch {
		case seen[id]:
			p.Repeated = append(p.Repeated, id)
			continue
		case singly[id]:
			forced = append(forced, id)
		default:
			unique = append(unique, id)
		}
		seen[id] = true
	}
	n, nf := len(unique), len(forced)
	if n+nf == 0 {
		p.Why = "No location to send."
		return p, nil
	}

	bulkRate := Paced(catalog.UpdateLocations.Rate, o.Margin)
	singleRate := Paced(catalog.UpdateLocation.Rate, o.Margin)
	size := catalog.UpdateLocations.MaxItems
	maxBulk := (n + size - 1) / size
	bulkAt := bulkTimes(maxBulk, bulkRate, o.BulkLatency, o.EarlierBulk)
	singleAt := singleTimes(n+nf, singleRate, o.EarlierSingle)
	finish := func(bulk, single int) time.Duration {
		var d time.Duration
		if bulk > 0 {
			d = bulkAt[bulk-1]
		}
		if single > 0 {
			d = max(d, singleAt[single-1])
		}
		return d
	}

	// From the most bulk requests to none, so that of two splits as good
	// in time and requests the one of more bulk requests is kept.
	// bestSingle counts the single updates of unique; the nf of forced go
	// singly too.
	bestBulk, bestSingle := maxBulk, 0
	bestFinish := finish(maxBulk, nf)
	for bulk := maxBulk - 1; bulk >= 0; bulk-- {
		single := n - bulk*size
		d := finish(bulk, single+nf)
		if d < bestFinish || d == bestFinish && bulk+single < bestBulk+bestSingle {
			bestBulk, bestSingle, bestFinish = bulk, single, d
		}
	}

	inBulk := unique[:n-bestSingle]
	for len(inBulk) > 0 {
		k := min(size, len(inBulk))
		p.Bulk = append(p.Bulk, inBulk[:k:k])
		inBulk = inBulk[k:]
	}
	p.Single = append(forced, unique[n-bestSingle:]...)
	p.BulkAt = bulkAt[:bestBulk:bestBulk]
	p.SingleAt = singleAt[: bestSingle+nf : bestSingle+nf]
	p.Requests = bestBulk + bestSingle + nf
	p.Duration = bestFinish
	switch {
	case bestBulk > 0 && bestSingle+nf > 0:
		p.Wait = min(p.BulkAt[0], p.SingleAt[0])
	case bestBulk > 0:
		p.Wait = p.BulkAt[0]
	default:
		p.Wait = p.SingleAt[0]
	}
	if n > 0 {
		p.Why = why(n, maxBulk, finish(maxBulk, nf), bestBulk, bestSingle, bestFinish)
	}
	if nf > 0 {
		p.Why = strings.TrimSpace(fmt.Sprintf("%s singly, each to an answer of its own: a bulk request that carried them was refused as a whole. %s",
			count(nf, "location"), p.Why))
	}
	return p, nil
}

// planOrigin is the start of a push in the plan's arithmetic: any time
// serves, the plan's times are counted from it.
var planOrigin = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// seeded returns a window of rate holding the requests sent earlier
// (how long before the start each was; negative ones at the start).
func seeded(rate catalog.RateLimit, earlier []time.Duration) *Window {
	w := NewWindow(rate)
	times := make([]time.Time, len(earlier))
	for i, ago := range earlier {
		times[i] = planOrigin.Add(-max(ago, 0))
	}
	w.Seed(times)
	return w
}

// bulkTimes returns when each of n bulk requests is sent: one at a time,
// each latency after the one before at the soonest, under the window of
// rate holding the earlier requests.
func bulkTimes(n int, rate catalog.RateLimit, latency time.Duration, earlier []time.Duration) []time.Duration {
	w := seeded(rate, earlier)
	at := make([]time.Duration, n)
	for k := range at {
		ready := planOrigin
		if k > 0 {
			ready = planOrigin.Add(at[k-1] + latency)
		}
		t := w.Next(ready)
		w.Add(t)
		at[k] = t.Sub(planOrigin)
	}
	return at
}

// singleTimes returns when each of n single updates is sent: as soon as
// the window of rate, holding the earlier requests, allows.
func singleTimes(n int, rate catalog.RateLimit, earlier []time.Duration) []time.Duration {
	w := seeded(rate, earlier)
	at := make([]time.Duration, n)
	for k := range at {
		t := w.Next(planOrigin)
		w.Add(t)
		at[k] = t.Sub(planOrigin)
	}
	return at
}

// why explains the split of n locations into bulk requests and single
// updates, against sending them all in maxBulk bulk requests (finishing
// at bulkOnly). It names the spec's rates; the durations are the paced
// ones, and Describe says by how much they are paced.
func why(n, maxBulk int, bulkOnly time.Duration, bulk, single int, d time.Duration) string {
	bulkRate, singleRate := catalog.UpdateLocations.Rate, catalog.UpdateLocation.Rate
	bulkHow := fmt.Sprintf("%s, one at a time", rateText(bulkRate))
	if single == 0 {
		switch {
		case n == 1:
			return "1 location: one bulk request."
		case bulk == 1:
			return fmt.Sprintf("%d locations fit in one bulk request.", n)
		}
		return fmt.Sprintf("%s: %d bulk requests of up to %d, the last sent %s (%s); sending some singly (%s) would not finish sooner.",
			count(n, "location"), bulk, catalog.UpdateLocations.MaxItems, after(d), bulkHow, rateText(singleRate))
	}
	extra := bulk + single - maxBulk
	cost := "with as many requests"
	if extra > 0 {
		cost = "for " + count(extra, "more request")
	}
	last := fmt.Sprintf("the last %d", single)
	if single == 1 {
		last = "the last one"
	}
	how := fmt.Sprintf("sending %s singly (%s) beside %s", last, rateText(singleRate), count(bulk, "bulk request"))
	if bulk == 0 {
		how = fmt.Sprintf("sending them singly (%s)", rateText(singleRate))
	}
	return fmt.Sprintf("%s: bulk alone takes %s, the last sent %s (%s); %s sends the last %s, %s sooner, %s.",
		count(n, "location"), count(maxBulk, "request"), after(bulkOnly), bulkHow, how, after(d), roundDuration(bulkOnly-d), cost)
}

// count is "1 location", "2 locations"; "1 more request", "3 more
// requests".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// after is "at once" for no time, else "after 1m3.2s".
func after(d time.Duration) string {
	if d == 0 {
		return "at once"
	}
	return "after " + roundDuration(d)
}

// roundDuration renders d to a tenth of a second.
func roundDuration(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }

// rateText is "5 a minute", "5 a second", or "5 every 1m3.2s" for a paced
// period.
func rateText(r catalog.RateLimit) string {
	switch r.Per {
	case time.Second:
		return fmt.Sprintf("%d a second", r.Requests)
	case time.Minute:
		return fmt.Sprintf("%d a minute", r.Requests)
	}
	return fmt.Sprintf("%d every %s", r.Requests, roundDuration(r.Per))
}

// Describe says what the push will do, for a dry run: the locations, the
// requests, how long from the first to the last, the assumptions, and
// Why.
func (p Plan) Describe() string {
	var b strings.Builder
	n := p.Locations()
	if n == 0 {
		b.WriteString("No location to send.")
	} else {
		var inBulk []string
		if len(p.Bulk) > 0 {
			inBulk = append(inBulk, fmt.Sprintf("%s (%s)", count(len(p.Bulk), "bulk request"), count(n-len(p.Single), "location")))
		}
		if len(p.Single) > 0 {
			inBulk = append(inBulk, count(len(p.Single), "single update"))
		}
		fmt.Fprintf(&b, "%s in %s: %s, ", count(n, "location"), count(p.Requests, "request"), strings.Join(inBulk, " and "))
		switch {
		case p.Wait > 0 && p.Requests == 1:
			fmt.Fprintf(&b, "sent after %s, once the requests sent before the push leave the rate limit's window", roundDuration(p.Wait))
		case p.Wait > 0:
			fmt.Fprintf(&b, "the first going out after %s, once the requests sent before the push leave the rate limit's window, the last %s after the start",
				roundDuration(p.Wait), roundDuration(p.Duration))
		case p.Requests == 1:
			b.WriteString("sent at once")
		case p.Duration == 0:
			b.WriteString("all sent at once")
		default:
			fmt.Fprintf(&b, "the last going out %s after the first", roundDuration(p.Duration))
		}
		fmt.Fprintf(&b, " (%s", marginText(p.Options.Margin))
		if p.Options.BulkLatency > 0 {
			fmt.Fprintf(&b, ", %s for a bulk answer", roundDuration(p.Options.BulkLatency))
		} else {
			b.WriteString(", answers assumed instantaneous")
		}
		b.WriteString(").\n")
		b.WriteString(p.Why)
	}
	if len(p.Repeated) > 0 {
		fmt.Fprintf(&b, "\n%s given more than once, sent once: %s.", count(len(p.Repeated), "id"), strings.Join(p.Repeated, ", "))
	}
	return b.String()
}

// marginText is "paced 5% under the rate limits" or "at the exact rate
// limits".
func marginText(m float64) string {
	if m == 0 {
		return "at the exact rate limits"
	}
	return "paced " + percent(m) + " under the rate limits"
}

// percent renders a fraction as a percentage with at most one
// decimal: 0.05 is "5%", 0.125 "12.5%".
func percent(m float64) string {
	v := math.Round(m*1000) / 10
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + "%"
}
