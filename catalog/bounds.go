package catalog

import "math"

// Bounds the spec leaves open, chosen here. A job spec is refused past
// them, before a unit is spent, so that no count of lines or units this
// tool computes from a job spec can overflow an int64.
const (
	// MaxLimit is the largest limit (page size) a job may ask for. The
	// spec does not show the upper bound of limit ("Upper bound accepted
	// for limit and size: not shown", 8.2) and types it only as an
	// integer (4.1); the one paging size whose width it gives, size of
	// Get locations (4.5), is an int32, and so is page. A limit past the
	// int32 range can mean nothing to such an API; and at most 2^31-1
	// lines a page, one page's worst case stays below 2^31 x the dearest
	// per-line price (45 units): about 10^11 units, far from overflowing.
	MaxLimit = math.MaxInt32
	// MaxTaskRows is the largest max_rows (rows fetched per target or
	// target set) a job may ask for. Rows are paged by offset, an integer
	// the spec types no more than limit; read as the same int32, no page
	// can start past it, so a larger max_rows could never be reached. It
	// also bounds a task's worst case to about 10^11 units, as MaxLimit
	// does a page's.
	MaxTaskRows = math.MaxInt32
	// MaxUnits is the largest number of API units a job spec may give (a
	// cap: per_run, monthly, daily, a job's monthly). 10^15 units is far
	// past what any account could buy at the spec's prices (1 to 45 units
	// a line), and leaves int64 room to spare: a cap plus the worst case
	// of a request (at most MaxLimit lines, about 10^11 units) is below
	// 2^63 (about 9.2 x 10^18) with a margin of more than 9,000 times.
	MaxUnits int64 = 1_000_000_000_000_000
)

// AddUnits returns a+b, or math.MaxInt64 (math.MinInt64) where the sum
// would overflow an int64: a count of units that saturates rather than
// wraps, so that an overflowing cost can never look small, or fit a cap.
func AddUnits(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// MulUnits returns a*b, saturated at math.MaxInt64 (math.MinInt64) where
// it would overflow, as AddUnits.
func MulUnits(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		if (a > 0) == (b > 0) {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return p
}
