package jobspec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"
)

// DefaultMaxAge is how old a task's data may be before a run buys it
// again, for a job that sets no max_age: long enough that a second run the
// same day (make run twice, a run retried by hand) pays nothing, short
// enough that a nightly job buys every night. A job whose schedule ticks
// more often than that gets a shorter default (see defaultMaxAge).
const DefaultMaxAge = 20 * time.Hour

// MaxMaxAge bounds max_age: data older than a year is never fresh.
const MaxMaxAge = 366 * 24 * time.Hour

// ageRE reads a max_age: whole numbers of weeks, days, hours, minutes and
// seconds, largest first (7d, 20h, 1d12h, 90m), or 0.
var ageRE = regexp.MustCompile(`^(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$`)

// ageUnits are the units of ageRE's groups, in order.
var ageUnits = []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second}

// parseAge reads a max_age value.
func parseAge(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	return parseDuration("max_age", s, MaxMaxAge)
}

// parseDuration reads the value s of key, written as max_age is (20h, 7d,
// 1d12h, 90m), at most most.
func parseDuration(key, s string, most time.Duration) (time.Duration, error) {
	m := ageRE.FindStringSubmatch(s)
	if s == "" || m == nil {
		hint := ""
		if key == "max_age" {
			hint = ", or 0 to buy every run"
		}
		return 0, fmt.Errorf("%s %s is not an age: write a number with a unit, such as 20h, 7d, 1d12h or 90m (w, d, h, m, s)%s", key, Quote(s), hint)
	}
	var d time.Duration
	for i, g := range m[1:] {
		if g == "" {
			continue
		}
		n, err := strconv.ParseInt(g, 10, 64)
		// Each part, and the sum so far, within most: the parts of a
		// bound near time.Duration's could overflow it together.
		if err != nil || time.Duration(n) > most/ageUnits[i] || d > most-time.Duration(n)*ageUnits[i] {
			return 0, fmt.Errorf("%s %s is more than %s, the most it may be", key, Quote(s), FormatAge(most))
		}
		d += time.Duration(n) * ageUnits[i]
	}
	if d > most {
		return 0, fmt.Errorf("%s %s is more than %s, the most it may be", key, Quote(s), FormatAge(most))
	}
	return d, nil
}

// age reads the max_age at n; ok is false when it is not one (reported).
func (p *parser) age(n *yaml.Node) (time.Duration, bool) {
	s := p.str(n, "max_age")
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	d, err := parseAge(s)
	if err != nil {
		p.errorf(n, "%v", err)
		return 0, false
	}
	return d, true
}

// FormatAge writes d as max_age is written: 20h, 7d, 1d12h, 90m; 0 for none.
func FormatAge(d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	var b strings.Builder
	for i, u := range ageUnits[1:] { // days and smaller: 14d reads better than 2w
		if n := d / u; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, []string{"d", "h", "m", "s"}[i])
			d -= n * u
		}
	}
	if d > 0 {
		fmt.Fprintf(&b, "%dms", d/time.Millisecond)
	}
	return b.String()
}

// defaultMaxAge is the max_age of a job that sets none: DefaultMaxAge,
// cut to five sixths of the shortest gap between its schedule's next
// ticks, so that each tick of a job scheduled more often than daily still
// buys (a run measures age from when the run that bought the data
// started, and a run starts at its tick or a little after).
func defaultMaxAge(sched cron.Schedule, now time.Time) time.Duration {
	d := DefaultMaxAge
	if sched == nil {
		return d
	}
	t := sched.Next(now)
	for range 64 {
		next := sched.Next(t)
		if next.IsZero() {
			break
		}
		d = min(d, (next.Sub(t) * 5 / 6).Truncate(time.Second))
		t = next
	}
	return max(d, time.Second)
}
