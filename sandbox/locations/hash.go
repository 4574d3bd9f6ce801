package locations

import (
	"fmt"
	"math/bits"
	"strconv"
)

// The integer hashing of package sandbox (hash.go there), repeated: this
// package is imported by the sandbox, so it cannot import it back, and the
// few lines do not deserve a package of their own. No math/rand, no
// floating point: a (seed, account, index, day) gives the same location on
// every machine.

// key is a 64-bit hash naming one thing derived: an account, a location.
type key uint64

// newKey hashes the seed and parts (FNV-1a, parts separated), then mixes.
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
		h ^= 0x1ff
		h *= prime
	}
	return key(mix(h))
}

// mix is the splitmix64 finaliser, a bijection of uint64.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// unmix is the inverse of mix.
func unmix(x uint64) uint64 {
	x ^= x>>31 ^ x>>62
	x *= inverse(0x94d049bb133111eb)
	x ^= x>>27 ^ x>>54
	x *= inverse(0xbf58476d1ce4e5b9)
	x ^= x>>30 ^ x>>60
	return x
}

// inverse is the multiplicative inverse of an odd m modulo 2^64 (Newton's
// iteration: each step doubles the correct low bits, from 3).
func inverse(m uint64) uint64 {
	inv := m
	for range 5 {
		inv *= 2 - m*inv
	}
	return inv
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

// at is the i-th 64-bit draw of k.
func (k key) at(i int64) uint64 {
	return mix(uint64(k) + 0x9e3779b97f4a7c15*uint64(i+1))
}

// sub is the j-th draw derived from draw d, for several values of one
// draw: between reads the high bits of a draw, so a shifted draw would not
// do.
func sub(d uint64, j int) uint64 { return mix(d + 0x9e3779b97f4a7c15*uint64(j)) }

// between maps a draw onto [lo, hi], inclusive.
func between(draw uint64, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	q, _ := bits.Mul64(draw, uint64(hi-lo)+1)
	return lo + int64(q)
}

// pick returns one of items by draw.
func pick[T any](draw uint64, items []T) T {
	return items[between(draw, 0, int64(len(items))-1)]
}

// percent reports whether a draw falls in the first p percent.
func percent(draw uint64, p int64) bool { return between(draw, 0, 99) < p }

// Location ids. An id is 32 lower-case hex digits, as the spec's samples
// show: a = mix(index ^ the account's key), then b = mix(a ^ a second key
// of the account). a is a bijection of the index, so an id names one
// location and gives its index back (unmix) without a table; b checks that
// the id is the account's, so another account's id, or a made-up one, is
// not found.

func (a *account) id(i int) string {
	x := mix(uint64(i) ^ a.idKey)
	return fmt.Sprintf("%016x%016x", x, mix(x^a.checkKey))
}

// index returns the index of the location with id, or false when the
// account has no such location.
func (a *account) index(id string) (int, bool) {
	if len(id) != 32 {
		return 0, false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return 0, false
		}
	}
	x, err1 := strconv.ParseUint(id[:16], 16, 64)
	check, err2 := strconv.ParseUint(id[16:], 16, 64)
	if err1 != nil || err2 != nil || mix(x^a.checkKey) != check {
		return 0, false
	}
	i := unmix(x) ^ a.idKey
	if i >= uint64(a.n) {
		return 0, false
	}
	return int(i), true
}
