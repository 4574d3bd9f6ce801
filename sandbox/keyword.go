package sandbox

import (
	"fmt"
	"math/bits"
	"strings"
)

// The values of intents and serp_features the spec has observed (2.13), in
// the spec's order; the sandbox lists them in that order.
var (
	intentValues      = []string{"COMMERCIAL", "INFORMATIONAL"}
	serpFeatureValues = []string{"SITELINKS", "PEOPLE_ALSO_ASK", "AI_OVERVIEW", "RELATED_SEARCHES"}
	// serpFeatureOdds is the percentage of snapshots showing each feature.
	serpFeatureOdds = []int64{30, 50, 35, 60}
)

// keywordStats are the metrics of one keyword in one country for one month.
type keywordStats struct {
	competitiveDensity int64 // 0-100
	cpcCents           int64
	intents            []string // never empty
	difficulty         int64    // 0-100
	results            int64
	volume             int64    // average monthly searches over trends' months
	serpFeatures       []string // may be empty
	trends             []int64  // the 12 months up to the requested one, oldest first, in percent of the busiest
}

func (k keywordStats) cpc() string { return fmt.Sprintf("%d.%02d", k.cpcCents/100, k.cpcCents%100) }

// normaliseKeyword makes "Running  Shoes" and "running shoes" one keyword,
// as a search engine would.
func normaliseKeyword(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// newKeywordStats derives the metrics from (seed, keyword, country, month).
// What belongs to the keyword (its size, intents, typical cpc) comes from the
// keyword and country; what changes by month comes from the month too. The
// monthly volume of a month is the same whichever request's trends it
// appears in.
func newKeywordStats(seed int64, keyword, country string, month int) keywordStats {
	k := newKey(seed, "keyword", normaliseKeyword(keyword), country)
	mk := k.child(formatMonth(month))
	var s keywordStats

	switch between(k.draw("intents"), 0, 2) {
	case 0:
		s.intents = intentValues[:1]
	case 1:
		s.intents = intentValues[1:]
	default:
		s.intents = intentValues
	}
	commercial := s.intents[0] == "COMMERCIAL"

	base := keywordBase(k)
	var sum, peak int64
	monthly := make([]int64, 12)
	for i := range monthly {
		monthly[i] = monthlyVolume(k, base, month-11+i)
		sum += monthly[i]
		peak = max(peak, monthly[i])
	}
	s.trends = make([]int64, 12)
	for i, v := range monthly {
		if peak > 0 {
			s.trends[i] = (v*100 + peak/2) / peak
		}
	}
	s.volume = roundVolume(sum / 12)

	digits := between(k.draw("results-digits"), 4, 10)
	lo := int64(1)
	for range digits - 1 {
		lo *= 10
	}
	s.results = between(k.draw("results"), lo, lo*10-1) * between(mk.draw("results"), 95, 105) / 100

	cents := between(k.draw("cpc"), 0, 150)
	density := between(k.draw("density"), 0, 40)
	if commercial {
		cents = between(k.draw("cpc"), 5, 2500)
		density = between(k.draw("density"), 30, 100)
	}
	s.cpcCents = cents * between(mk.draw("cpc"), 90, 110) / 100
	s.competitiveDensity = clamp(density+between(mk.draw("density"), -3, 3), 0, 100)
	s.difficulty = clamp(int64(4*bits.Len64(uint64(base)))+between(k.draw("difficulty"), 0, 40)+
		between(mk.draw("difficulty"), -2, 2), 0, 100)

	s.serpFeatures = []string{}
	for i, f := range serpFeatureValues {
		if between(mk.draw(f), 1, 100) <= serpFeatureOdds[i] {
			s.serpFeatures = append(s.serpFeatures, f)
		}
	}
	return s
}

// keywordBase is the keyword's typical monthly volume: uniform over the
// number of digits (1 to 6), then uniform within.
func keywordBase(k key) int64 {
	digits := between(k.draw("volume-digits"), 1, 6)
	lo := int64(1)
	for range digits - 1 {
		lo *= 10
	}
	return between(k.draw("volume"), lo, lo*10-1)
}

// monthlyVolume is the volume of month index m: the base with a seasonal
// factor (by month of the year) and a yearly drift, each 80 to 120 percent.
func monthlyVolume(k key, base int64, m int) int64 {
	season := between(k.child("season").at(int64(m%12)), 80, 120)
	drift := between(k.child("year").at(int64(m/12)), 80, 120)
	return base * season * drift / 10000
}

// roundVolume rounds to two significant digits, as keyword tools report.
func roundVolume(v int64) int64 {
	unit := int64(1)
	for v/unit >= 100 {
		unit *= 10
	}
	return (v + unit/2) / unit * unit
}
