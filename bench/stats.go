package main

import (
	"encoding/json"
	"math"
	"slices"
)

// spread is the median of some numbers with their minimum and maximum.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// MarshalJSON writes a value that is not a finite number (a spread of no
// numbers is NaN) as null: JSON has no NaN, and encoding/json fails on it.
func (s spread) MarshalJSON() ([]byte, error) {
	num := func(x float64) any {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return x
	}
	return json.Marshal(struct {
		Median any `json:"median"`
		Min    any `json:"min"`
		Max    any `json:"max"`
	}{num(s.Median), num(s.Min), num(s.Max)})
}

// spreadOf returns the median (the mean of the two middle values of an even
// count), minimum and maximum of xs; all NaN when xs is empty.
func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{math.NaN(), math.NaN(), math.NaN()}
	}
	s := slices.Sorted(slices.Values(xs))
	mid := len(s) / 2
	med := s[mid]
	if len(s)%2 == 0 {
		med = (s[mid-1] + s[mid]) / 2
	}
	return spread{Median: med, Min: s[0], Max: s[len(s)-1]}
}

// perSecond turns durations in seconds into rates of amount per second.
func perSecond(amount float64, secs []float64) []float64 {
	out := make([]float64, len(secs))
	for i, s := range secs {
		out[i] = amount / s
	}
	return out
}

// ratio is a/b, NaN when either is missing (NaN) or b is 0.
func ratio(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return math.NaN()
	}
	return a / b
}
