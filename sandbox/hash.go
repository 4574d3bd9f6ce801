package sandbox

import (
	"math"
	"math/bits"
)

// Everything the sandbox invents comes from the integer helpers of this file:
// no math/rand, no floating point in derived values (the compiler may fuse
// float operations differently per architecture), so a (seed, request, clock)
// gives the same bytes on every machine and every Go release.

// key is a 64-bit hash naming one thing the sandbox derives data for: a
// profile, a level of a target, a keyword. Draws from a key are named, not
// sequential, so adding a draw never changes the others.
type key uint64

// newKey hashes the seed and parts (FNV-1a, parts separated so that ("ab",
// "c") and ("a", "bc") differ), then mixes the result.
func newKey(seed int64, parts ...string) key {
	h := uint64(14695981039346656037)
	const prime = 1099511628211
	s := uint64(seed)
	for i := 0; i < 8; i++ {
		h ^= s & 0xff
		h *= prime
		s >>= 8
	}
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			h ^= uint64(p[i])
			h *= prime
		}
		h ^= 0x1ff // a separator no byte equals
		h *= prime
	}
	return key(mix(h))
}

// mix is the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// child derives the key of a named part of k.
func (k key) child(name string) key {
	h := uint64(k)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return key(mix(h ^ 0x9e3779b97f4a7c15))
}

// draw is the named 64-bit draw of k.
func (k key) draw(name string) uint64 { return uint64(k.child(name)) }

// at is the i-th 64-bit draw of k, for per-row and per-month values.
func (k key) at(i int64) uint64 {
	return mix(uint64(k) + 0x9e3779b97f4a7c15*uint64(i+1))
}

// between maps a draw onto [lo, hi] (inclusive) without bias worth noting.
func between(draw uint64, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	span := uint64(hi-lo) + 1
	q, _ := bits.Mul64(draw, span)
	return lo + int64(q)
}

// q16 is a fraction in units of 1/65536.
type q16 = int64

const one16 q16 = 1 << 16

// pct converts a percentage to q16 (pct(25) is a quarter).
func pct(p int64) q16 { return p * one16 / 100 }

// mulDiv is floor((a*b + c) / d) computed in 128 bits; d must be positive
// and the quotient must fit in 64 bits.
func mulDiv(a, b, c, d uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	lo, carry := bits.Add64(lo, c, 0)
	hi += carry
	q, _ := bits.Div64(hi, lo, d)
	return q
}

// scale is floor(x * num / den) for non-negative arguments; 0 when den is 0.
func scale(x, num, den int64) int64 {
	if den <= 0 || x <= 0 || num <= 0 {
		return 0
	}
	return int64(mulDiv(uint64(x), uint64(num), 0, uint64(den)))
}

// frac16 is floor(x * f) for a q16 fraction f.
func frac16(x int64, f q16) int64 { return scale(x, f, one16) }

// isqrt is the floor of the square root of x, exact for every uint64.
func isqrt(x uint64) uint64 {
	// math.Sqrt is correctly rounded (IEEE 754) on every platform; the
	// loops only repair the rounding of the uint64 to float64 conversion.
	r := uint64(math.Sqrt(float64(x)))
	for r > 0 && (r > math.MaxUint32 || r*r > x) {
		r--
	}
	for r < math.MaxUint32 && (r+1)*(r+1) <= x {
		r++
	}
	return r
}

// spread marks exactly count of the slots 0..n-1, evenly and with a phase
// (Bresenham). How many marks lie before any slot is a closed formula, so a
// count over a prefix of rows (a month of history, the rows a page skips)
// costs O(1) and always agrees with the per-row flag.
type spread struct {
	n, count, phase int64
}

// newSpread returns a spread of count marks over n slots; the phase is taken
// from draw.
func newSpread(n, count int64, draw uint64) spread {
	if n <= 0 {
		return spread{}
	}
	return spread{n: n, count: min(max(count, 0), n), phase: between(draw, 0, n-1)}
}

// before is the number of marked slots among 0..r-1.
func (s spread) before(r int64) int64 {
	if s.n == 0 || r <= 0 {
		return 0
	}
	r = min(r, s.n)
	return int64(mulDiv(uint64(r), uint64(s.count), uint64(s.phase), uint64(s.n)))
}

// has reports whether slot r is marked.
func (s spread) has(r int64) bool { return s.before(r+1) > s.before(r) }
