package sandbox

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// stairs: sizes at least one and never growing, starts the running sum of
// the sizes, of the inverse of start; for every shape of profile, from one
// group to sizes past what any request streams.
func TestStairs(t *testing.T) {
	t.Parallel()
	heavy := []tier{{groups: pct(5), share: pct(40)}, {groups: pct(1) / 4, share: pct(25)}}
	cases := []struct {
		n, total int64
		tiers    []tier
	}{
		{0, 0, nil}, {1, 1, nil}, {1, 9, heavy}, {2, 3, nil}, {3, 150, heavy}, {56, 240, heavy},
		{1000, 1000, heavy}, {1000, 50_000, heavy}, {4096, 5000, nil}, {777, 40_000, heavy[:1]},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		n := rng.Int64N(3000) + 1
		cases = append(cases, struct {
			n, total int64
			tiers    []tier
		}{n, n + rng.Int64N(50*n), heavy})
	}
	for _, tc := range cases {
		s := newStairs(tc.n, tc.total, tc.tiers...)
		name := fmt.Sprintf("%d groups of %d", tc.n, tc.total)
		var sum int64
		for g := range tc.n {
			size := s.size(g)
			require.Equal(t, sum, s.start(g), "%s: start(%d)", name, g)
			require.GreaterOrEqual(t, size, int64(1), name)
			if g > 0 {
				require.LessOrEqual(t, size, s.size(g-1), "%s: size(%d) grows", name, g)
			}
			require.Equal(t, g, s.of(sum), name)
			require.Equal(t, g, s.of(sum+size-1), name)
			sum += size
		}
		require.Equal(t, tc.total, sum, name)
		require.Equal(t, tc.total, s.start(tc.n), name)
	}
	// Huge profiles: starts and sizes agree at sampled groups and the last
	// group ends at the total.
	for _, n := range []int64{1 << 20, 1 << 30, 1 << 38} {
		s := newStairs(n/40, n, heavy...)
		for _, g := range []int64{0, 1, 2, s.n / 400, s.n/400 + 1, s.n / 20, s.n / 2, s.n - 2} {
			require.Equal(t, s.start(g)+s.size(g), s.start(g+1), "n %d, group %d", n, g)
			require.LessOrEqual(t, s.size(g+1), s.size(g), "n %d, group %d", n, g)
		}
		require.Equal(t, n, s.start(s.n-1)+s.size(s.n-1))
	}
}

func TestSpreadMarks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, count int64 }{{1, 1}, {10, 3}, {97, 96}, {1000, 1}, {5000, 777}, {12, 12}} {
		for _, draw := range []uint64{0, 0xdeadbeef, 1 << 63} {
			s := newSpread(tc.n, tc.count, draw)
			var k int64
			for r := range tc.n {
				if s.has(r) {
					require.Equal(t, r, s.mark(k), "mark %d of %+v", k, s)
					k++
				}
			}
			require.Equal(t, tc.count, k)
		}
	}
}

// Pool positions have distinct names, scores that never grow, and valid
// text; subnets of a target have distinct prefixes.
func TestPoolAndAddresses(t *testing.T) {
	t.Parallel()
	names := map[string]int64{}
	check := func(g int64) {
		name := poolName(7, g)
		prev, dup := names[name]
		require.False(t, dup, "%q names %d and %d", name, prev, g)
		names[name] = g
		require.NotContains(t, name, " ")
		_, err := parseTarget(name)
		require.NoError(t, err, "a referring domain is a usable target: %q", name)
	}
	for g := range int64(120_000) {
		name := poolName(7, g)
		if prev, dup := names[name]; dup {
			require.Failf(t, "a name twice", "%q names %d and %d", name, prev, g)
		}
		names[name] = g
	}
	for _, g := range []int64{int64(nameSpace) - 1, int64(nameSpace), int64(nameSpace) + 1, 3*int64(nameSpace) + 17, 1 << 40} {
		check(g)
	}
	prev := int64(100)
	for g := int64(0); g < 1<<26; g = g*5/4 + 1 {
		s := poolScore(g)
		require.LessOrEqual(t, s, prev, "score of %d", g)
		require.GreaterOrEqual(t, s, int64(0))
		prev = s
	}
	require.EqualValues(t, 100, poolScore(0))
	require.EqualValues(t, 0, poolScore(1<<40))

	k := newKey(1, "target")
	prefixes := map[[3]byte]bool{}
	for c := range int64(200_000) {
		a, b, cc := subnetPrefix(k, c)
		p := [3]byte{a, b, cc}
		if prefixes[p] || a == 0 || a == 10 || a == 127 || a == 192 {
			require.Failf(t, "a bad subnet", "subnet %d: %v", c, p)
		}
		prefixes[p] = true
	}
}

func TestTimestampFormat(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	times := []int64{0, -1, 86399, 86400, 951782400 /* 2000-02-29 */, 4102444799, -62135596800 /* year 1 */}
	for range 2000 {
		times = append(times, rng.Int64N(253402300799+62135596800)-62135596800)
	}
	for _, u := range times {
		tm := time.Unix(u, 0).UTC()
		require.Equal(t, tm.Format("2006-01-02T15:04:05"), string(appendTimestamp(nil, u, true)), "%d", u)
		require.Equal(t, tm.Format("2006-01-02"), string(appendTimestamp(nil, u, false)), "%d", u)
	}
}

// The generation order of every streamed list is its default order:
// page scores of links, backlinks of domains and domains of IPs never grow
// along it, at every scope, so the default order streams without sorting.
func TestGenerationOrderIsTheDefaultOrder(t *testing.T) {
	t.Parallel()
	c := newClock(modelNow)
	for _, raw := range []string{"n20000.example", "example.com", "https://www.n20000.example/", "n20000.example/blog/"} {
		for _, scope := range catalog.AllScopes {
			tg, err := parseTarget(raw)
			require.NoError(t, err)
			s, _ := newScoped(1, c, tg, scope)
			name := fmt.Sprintf("%s at %s", raw, scope)
			for _, tc := range []struct {
				rows  *rowSet
				field string
			}{{linkRows(s), "page_score"}, {domainRows(s), "backlinks_count"}, {ipRows(s), "domains_count"}, {matrixRowsOf(1, []*scoped{s}), "domain_score"}} {
				require.Equal(t, tc.field, tc.rows.order)
				cur := tc.rows.open(0, 1)
				prev, prevID, n := int64(1<<62), int64(-1), int64(0)
				for {
					id, ok := cur.next()
					if !ok {
						break
					}
					v := tc.rows.cols[tc.field]().i
					if v > prev || id <= prevID {
						require.Failf(t, "out of order", "%s %s: row %d (id %d) has %d after %d (id %d)", name, tc.field, n, id, v, prev, prevID)
					}
					prev, prevID = v, id
					n++
				}
				require.Equal(t, tc.rows.n, n, "%s %s: rows streamed", name, tc.field)
			}
		}
	}
}

// Past the sorting bound a non-default order answers 400 naming order_by.
func TestSortBound(t *testing.T) {
	t.Parallel()
	ep, _ := catalog.Lookup("anchors")
	q, aerr := parseRequest(ep, url.Values{"url": {"x.example"}, "scope": {"ROOT_DOMAIN"}, "order_by": {"anchor"}}.Encode(), newClock(modelNow))
	require.Nil(t, aerr)
	rows := func(n int64) *rowSet {
		var cur int64
		return tableRows(n, "domains_count", func(id int64) { cur = id }, map[string]func() value{
			"anchor":        func() value { return textV("a") },
			"domains_count": func() value { return intV(cur) },
		})
	}
	_, aerr = q.page(rows(maxSortTextRows + 1))
	require.NotNil(t, aerr)
	require.Equal(t, "order_by", aerr.details[0].Parameter)
	require.Contains(t, aerr.message, "at most 250000 rows")

	l, aerr := q.page(rows(maxSortTextRows))
	require.Nil(t, aerr)
	require.EqualValues(t, maxSortTextRows, l.total)
}

// The pages of a site are distinct, and the scopes that name them cover
// exactly them.
func TestSiteNodes(t *testing.T) {
	t.Parallel()
	c := newClock(modelNow)
	for _, root := range []string{"example.com", "n240.example", "n5000000.example", "10.1.2.3"} {
		p := rootProfile(1, c, root)
		s := siteOf(1, &p, root)
		require.Equal(t, root, s.hosts[0])
		seen := map[string]bool{}
		for l := range s.leaves {
			u := s.url(l)
			require.False(t, seen[u], "%s twice", u)
			seen[u] = true
			tg, err := parseTarget(u)
			require.NoError(t, err, u)
			member := s.node(tg, catalog.Page)
			if len(s.leaves) == 1 {
				require.Nil(t, member, "the only page is the whole site")
				continue
			}
			covered := 0
			for _, in := range member {
				if in {
					covered++
				}
			}
			if !member[l] || covered != 1 {
				require.Failf(t, "a page covers itself alone", "%s covers %d pages", u, covered)
			}
		}
		_, isN := nLabel(root)
		if isN || strings.Count(root, ".") == 3 {
			require.Len(t, s.hosts, 1, "a sized target lives on its root host")
		}
	}
}
