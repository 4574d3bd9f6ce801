package suggest

import "strings"

// maxDistance is the most edits (Levenshtein, ignoring case) a name may be
// from a candidate for the candidate to be suggested: two covers a swapped
// pair of letters (overveiw), a letter missing or doubled, or one wrong.
const maxDistance = 2

// Closest returns the candidate closest to name when it is close enough to
// be a typo of it, else "". Case does not count (root_domain suggests
// ROOT_DOMAIN); of candidates equally close, the first wins. A name that is
// itself a candidate is returned as it is.
func Closest(name string, candidates []string) string {
	lower := strings.ToLower(name)
	best, bestD := "", maxDistance+1
	for _, c := range candidates {
		if abs(len(name)-len(c)) >= bestD {
			continue // the distance is at least the difference in length
		}
		if d := distance(lower, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func abs(n int) int { return max(n, -n) }

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
