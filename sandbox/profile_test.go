package sandbox

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

var modelNow = time.Date(2025, 6, 15, 13, 4, 5, 0, time.UTC)

// smallTargets are targets small enough to count every backlink of.
func smallTargets() []string {
	out := []string{"n0.example", "n1.example", "n2.example", "n7.example", "n64.example", "n2999.example"}
	for i := range 16 {
		out = append(out, fmt.Sprintf("n%d.site%d.example", 50+i*97, i))
	}
	return out
}

// Counting the rows derived one by one gives exactly the scoped target's
// counts, for every aggregate the overview and summary report: the contract
// that lets the list endpoints stream rows and still agree with overview.
func TestRowsAddUpToTheProfile(t *testing.T) {
	t.Parallel()
	c := newClock(modelNow)
	for _, raw := range smallTargets() {
		for _, scope := range catalog.AllScopes {
			for _, path := range []string{"/dir/page", "/", "/blog/", "/pricing"} {
				tg, err := parseTarget(raw + path)
				require.NoError(t, err)
				s, _ := newScoped(1, c, tg, scope)
				name := fmt.Sprintf("%s%s at %s (%d backlinks)", raw, path, scope, s.c.backlinks)
				checkRows(t, s, name)
			}
		}
	}
}

func checkRows(t *testing.T, s *scoped, name string) {
	t.Helper()
	p := s.p
	domains, pages, ips, subnets := map[int64]bool{}, map[int64]bool{}, map[int64]bool{}, map[int64]bool{}
	var nofollow, sponsored, ugc, frames, forms, images, lost, fresh, backlinks int64
	domainOfPage := map[int64]int64{}
	prevSeen := int64(math.MinInt64)
	perMonth := map[int]int64{}
	// Prefix aggregates: distinct domains and follows among the first rows.
	domainsPrefix, followsPrefix := []int64{0}, []int64{0}
	// Plain comparisons per row (require's reflection would dominate the
	// run); the first violations are reported at the end.
	var bad []string
	check := func(ok bool, r int64, what string) {
		if !ok && len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("rank %d: %s", r, what))
		}
	}
	d := s.domains(1)
	for ok := d.first(); ok; ok = d.next() {
		check(s.covers(d.i), d.lo, "a covered IP")
		for r := d.lo; r < d.hi; r++ {
			l := p.linkAt(r)
			backlinks++
			check(l.domain == d.j && l.ip == d.i, r, "the cursor's domain and IP are the rank's")
			check(l.firstSeen >= prevSeen, r, "ranks are in order of first sight")
			prevSeen = l.firstSeen
			check(l.firstSeen >= p.start && l.firstSeen <= l.lastSeen && l.lastSeen <= p.end, r, "start <= first seen <= last seen <= sandbox day")
			check(!l.lost || l.lastSeen >= monthStart(p.currentMonth), r, "lost this month")
			check(l.domain >= 0 && l.domain < p.domains && l.page >= 0 && l.page < p.urls, r, "domain and page in range")
			if dd, seen := domainOfPage[l.page]; seen {
				check(dd == l.domain, r, "a page belongs to one domain")
			}
			domainOfPage[l.page] = l.domain
			domains[l.domain], pages[l.page], ips[l.ip], subnets[l.classC] = true, true, true, true
			domainsPrefix = append(domainsPrefix, int64(len(domains)))
			follows := followsPrefix[len(followsPrefix)-1]
			if !l.nofollow {
				follows++
			}
			followsPrefix = append(followsPrefix, follows)
			perMonth[monthOf(l.firstSeen)]++
			for _, f := range [...]struct {
				on bool
				n  *int64
			}{{l.nofollow, &nofollow}, {l.sponsored, &sponsored}, {l.ugc, &ugc}, {l.frame, &frames},
				{l.form, &forms}, {l.image, &images}, {l.lost, &lost}, {l.new, &fresh}} {
				if f.on {
					*f.n++
				}
			}
		}
	}
	require.Empty(t, bad, name)
	require.Equal(t, s.c.backlinks, backlinks, "%s: backlinks", name)
	require.Equal(t, s.c.domains, int64(len(domains)), "%s: domains", name)
	require.Equal(t, s.c.urls, int64(len(pages)), "%s: referring pages", name)
	require.Equal(t, s.c.ips, int64(len(ips)), "%s: ips", name)
	require.Equal(t, s.c.classC, int64(len(subnets)), "%s: class C", name)
	require.Equal(t, []int64{s.c.nofollows, s.c.sponsored, s.c.ugc, s.c.frames, s.c.forms, s.c.images, s.c.lost, s.c.new},
		[]int64{nofollow, sponsored, ugc, frames, forms, images, lost, fresh}, "%s: flags", name)

	// Every month of history equals counting the rows first seen by its end.
	var cum int64
	for m := p.oldestMonth() - 2; m <= p.currentMonth; m++ {
		cum += perMonth[m]
		st := s.monthAt(m)
		require.Equal(t, cum, st.backlinks, "%s: backlinks of %s", name, formatMonth(m))
		require.Equal(t, domainsPrefix[cum], st.domains, "%s: domains of %s", name, formatMonth(m))
		require.Equal(t, followsPrefix[cum], st.follows, "%s: follows of %s", name, formatMonth(m))
	}
	require.Equal(t, s.c.backlinks, cum, name)
}

// A profile of millions of backlinks costs its struct; any row is derived on
// demand.
func TestLargeTargetsCostNothingUpFront(t *testing.T) {
	t.Parallel()
	c := newClock(modelNow)
	tg, err := parseTarget("n5000000.example")
	require.NoError(t, err)
	s, _ := newScoped(1, c, tg, catalog.RootDomain)
	p := s.p
	require.Equal(t, int64(5_000_000), p.backlinks)
	last := p.linkAt(p.backlinks - 1)
	require.Equal(t, p.end, last.firstSeen, "the newest backlink was seen on the sandbox day")
	require.Equal(t, p.domains-1, last.domain)
	require.Equal(t, p.urls-1, last.page)
	require.Equal(t, p.ips-1, last.ip)
	require.Equal(t, p.classC-1, last.classC)
	require.Equal(t, p.backlinks, s.monthAt(p.currentMonth).backlinks)
	require.Equal(t, p.domains, s.monthAt(p.currentMonth).domains)
}

// Deriving a row allocates nothing, so streaming millions of them is cheap.
// Not parallel: testing.AllocsPerRun refuses to run beside other tests.
func TestLinkAtDoesNotAllocate(t *testing.T) {
	p := rootProfile(1, newClock(modelNow), "n5000000.example")
	require.Zero(t, testing.AllocsPerRun(10, func() { _ = p.linkAt(4_999_999) }))
}

func TestLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url       string
		scope     catalog.Scope
		effective string
		chain     []string // level names; * marks an identity level
	}{
		{"example.com", catalog.RootDomain, "example.com", []string{"example.com"}},
		{"https://www.Example.com:8443/a/b?x=1#frag", catalog.RootDomain, "example.com", []string{"example.com"}},
		{"https://www.example.com/", catalog.Subdomain, "www.example.com", []string{"example.com", "*example.com"}},
		{"blog.example.co.uk/x", catalog.Subdomain, "blog.example.co.uk", []string{"example.co.uk", "blog.example.co.uk"}},
		{"example.com/a/b", catalog.Subfolder, "example.com/a/b/", []string{"example.com", "*example.com", "example.com/a/", "example.com/a/b/"}},
		{"example.com", catalog.Subfolder, "example.com/", []string{"example.com", "*example.com"}},
		{"example.com", catalog.Page, "example.com/", []string{"example.com", "*example.com", "*example.com/"}},
		{"http://user@shop.example.com/c/item?id=3", catalog.Page, "shop.example.com/c/item?id=3",
			[]string{"example.com", "shop.example.com", "shop.example.com/c/", "shop.example.com/c/item?id=3"}},
		{"example.com/docs/", catalog.Page, "example.com/docs/", []string{"example.com", "*example.com", "example.com/docs/", "*example.com/docs/"}},
		{"10.1.2.3/x", catalog.Subdomain, "10.1.2.3", []string{"10.1.2.3", "*10.1.2.3"}},
		{"www.com", catalog.Subdomain, "www.com", []string{"www.com", "*www.com"}},
	} {
		tg, err := parseTarget(tc.url)
		require.NoError(t, err, tc.url)
		chain, effective := tg.levels(tc.scope)
		require.Equal(t, tc.effective, effective, tc.url)
		var names []string
		for _, l := range chain {
			n := l.name
			if l.identity {
				n = "*" + n
			}
			names = append(names, n)
		}
		require.Equal(t, tc.chain, names, "%s at %s", tc.url, tc.scope)
		require.Equal(t, tc.url, tg.raw)
	}
	for _, bad := range []string{"", "https://", "/path/only", "exa mple.com", "a..b", "[::1]/x", "host:port"} {
		_, err := parseTarget(bad)
		require.Error(t, err, bad)
	}
}

func TestNLabel(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]int64{"n250000.example": 250000, "n0.x": 0, "n007.x": 7, "n20000000.x": 20_000_000} {
		n, ok := nLabel(host)
		require.True(t, ok, host)
		require.Equal(t, want, n, host)
	}
	for _, host := range []string{"n.example", "nx1.example", "n1x.example", "m5.example", "n20000001.x", "example.n5"} {
		_, ok := nLabel(host)
		require.False(t, ok, host)
	}
}

func TestArithmetic(t *testing.T) {
	t.Parallel()
	for _, x := range []uint64{0, 1, 2, 3, 4, 15, 16, 17, 1 << 32, 1<<32 - 1, 1<<52 + 1, 1<<63 + 12345, math.MaxUint64, math.MaxUint64 - 1} {
		r := isqrt(x)
		require.LessOrEqual(t, r, uint64(math.MaxUint32))
		require.LessOrEqual(t, r*r, x, "%d", x)
		if r < math.MaxUint32 {
			require.Greater(t, (r+1)*(r+1), x, "%d", x)
		}
	}
	require.Equal(t, uint64(1<<40), mulDiv(1<<40, 1<<40, 0, 1<<40))
	require.Equal(t, int64(3), scale(10, 1, 3))
	require.Zero(t, scale(10, 1, 0))

	for _, tc := range []struct{ n, count int64 }{{0, 0}, {1, 0}, {1, 1}, {10, 3}, {97, 96}, {1000, 1}} {
		s := newSpread(tc.n, tc.count, 0xdeadbeef)
		var marked int64
		for r := range tc.n {
			require.Equal(t, marked, s.before(r))
			if s.has(r) {
				marked++
			}
		}
		require.Equal(t, tc.count, marked)
		require.Equal(t, tc.count, s.before(tc.n))
	}
}

func BenchmarkLinkAt(b *testing.B) {
	p := rootProfile(1, newClock(modelNow), "n5000000.example")
	var r int64
	for b.Loop() {
		_ = p.linkAt(r % p.backlinks)
		r += 7919
	}
}

func BenchmarkSummaryOfALargeTarget(b *testing.B) {
	tg, _ := parseTarget("n5000000.example")
	c := newClock(modelNow)
	for b.Loop() {
		s, _ := newScoped(1, c, tg, catalog.RootDomain)
		for m := s.oldestMonth(); m <= s.p.currentMonth; m++ {
			_ = s.monthAt(m)
		}
	}
}
