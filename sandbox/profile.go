package sandbox

import (
	"math/bits"
	"time"
)

// clock is the sandbox clock read once per request. Data derive from the day
// (UTC midnight), not the instant, so every answer is stable for a day.
type clock struct {
	now   time.Time // UTC
	day   int64     // unix seconds of today's UTC midnight
	month int       // the current month as a month index
}

func newClock(now time.Time) clock {
	now = now.UTC()
	y, m, d := now.Date()
	return clock{
		now:   now,
		day:   time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix(),
		month: monthIndex(y, m),
	}
}

// A month index counts months from year 0: year*12 + month-1.
func monthIndex(y int, m time.Month) int { return y*12 + int(m) - 1 }

// monthStart is the unix time of the first second of month index m.
func monthStart(m int) int64 {
	return time.Date(m/12, time.Month(m%12+1), 1, 0, 0, 0, 0, time.UTC).Unix()
}

// monthOf is the month index of unix time t.
func monthOf(t int64) int {
	u := time.Unix(t, 0).UTC()
	return monthIndex(u.Year(), u.Month())
}

const (
	day = 24 * 60 * 60
	// newDays: a backlink (or a referring domain) is new when first seen
	// within the last 30 days of the sandbox day. The spec says "within the
	// last 30 days" for new_count (2.2) and ref-domains' is_new (2.5) and
	// "less than 31 days ago" for links' is_new (2.4); the sandbox uses one
	// threshold for all three so that new_count counts the links with is_new.
	newDays = 30
)

// profile is the backlink data of one root domain: every count the
// overview reports at ROOT_DOMAIN scope, plus the few parameters from which
// each backlink (rank r of the root, in order of first sight) is derived on
// demand. Nothing is stored per row: a root of five million backlinks costs
// this struct. Narrower scopes select a subset of these backlinks (see
// scoped).
//
// The backlinks are numbered by time rank r in [0, backlinks): rank r was
// first seen at seen(r), a non-decreasing function. On that numbering:
//   - referring domain j owns the contiguous ranks dom.start(j) to
//     dom.start(j+1)-1: every domain has at least one backlink, older
//     domains own more, and no domain owns more than the one before it (so
//     listing domains in order lists them by backlinks, most first);
//   - each domain's ranks are split evenly into its referring pages, every
//     page owning at least one rank (urls in total);
//   - referring IP address i hosts the contiguous domains ip.start(i) to
//     ip.start(i+1)-1, no IP hosting more domains than the one before it;
//     consecutive IPs share a class C subnet (classC in total, at most 254
//     IPs each);
//   - each flag (nofollow, sponsored, ugc, frame, form, image, lost) marks
//     exactly its count of ranks, spread evenly (see spread);
//   - domain j is the global domain pool.mark(j): domains are drawn from one
//     pool shared by every target of a seed (so targets share referring
//     domains: matrix, competitors), in pool order, and a domain's name and
//     domain score are functions of its pool position alone.
//
// So every aggregate of a prefix of ranks (the backlinks of a past month, its
// domains, its follows) is a closed formula or a binary search, and always
// equals what counting the rows would give.
type profile struct {
	key key // seeds every per-row draw of this root

	backlinks, domains, urls, ips, classC                        int64
	nofollows, sponsored, ugc, frames, forms, images, lost       int64
	domainScore                                                  int64
	start, end                                                   int64 // unix: first day of the oldest month; the sandbox day
	curve                                                        q16   // share of linear growth; the rest accelerates
	nofollowS, sponsoredS, ugcS, framesS, formsS, imagesS, lostS spread
	dom                                                          stairs // ranks per referring domain
	ip                                                           stairs // domains per referring IP
	pool                                                         spread // the global pool positions of the domains
	pageTop                                                      int64  // page score of the oldest referring page
	currentMonth                                                 int
	// bursts are the days of the history on which a batch of backlinks
	// was first seen at once (a spike of link velocity), oldest first;
	// the other backlinks follow the curve, over base ranks.
	bursts []burst
	base   int64 // backlinks - the ranks of the bursts
}

// burst is a batch of ranks first seen on one day: ranks lo to lo+size-1,
// spread evenly over the day (so first_seen_at stays distinct enough to
// page by), after the base ranks first seen by then.
type burst struct {
	day, span, lo, size int64 // span: seconds the batch spreads over
}

// Bursts: in about one month in burstOdds of a history, on a drawn day of
// it (one not after the sandbox day), a batch of burstMin to burstMax
// percent of the backlinks is first seen at once; targets of fewer than
// burstFloor backlinks have none. The day and size are drawn from the
// root and the month alone, so every snapshot, at any sandbox day, shows
// a past burst on the same day.
const (
	burstOdds  = 7
	burstMin   = 2
	burstMax   = 6
	burstFloor = 100
)

// Bounds of the invented history and ratios.
const (
	minHistoryMonths = 6
	maxHistoryMonths = 120 // the sane bound of how far back a history goes
	maxIPsPerClassC  = 254
)

// inventBacklinks draws the size of a target: uniform over the number of
// digits (1 to 6), then uniform within.
func inventBacklinks(k key) int64 {
	digits := between(k.draw("digits"), 1, 6)
	lo := int64(1)
	for range digits - 1 {
		lo *= 10
	}
	return between(k.draw("backlinks"), lo, lo*10-1)
}

// rootProfile derives the profile of the root domain called name: exactly
// N backlinks when its first label is n<digits>, else a drawn size.
func rootProfile(seed int64, c clock, name string) profile {
	k := newKey(seed, "level", "0", name)
	n, ok := nLabel(name)
	if !ok {
		n = inventBacklinks(k)
	}
	return freshProfile(k, n, c)
}

// freshProfile invents every ratio of a target of n backlinks from its key.
func freshProfile(k key, n int64, c clock) profile {
	p := profile{key: k, backlinks: n, currentMonth: c.month}
	p.domains = frac16(n, between(k.draw("domains"), pct(2), pct(60)))
	p.urls = p.domains + frac16(n-p.domains, between(k.draw("urls"), pct(15), pct(85)))
	p.ips = frac16(p.domains, between(k.draw("ips"), pct(40), pct(95)))
	p.classC = frac16(p.ips, between(k.draw("classc"), pct(55), pct(98)))
	p.nofollows = frac16(n, between(k.draw("nofollows"), pct(8), pct(45)))
	p.sponsored = frac16(n, between(k.draw("sponsored"), 0, pct(4)))
	p.ugc = frac16(n, between(k.draw("ugc"), 0, pct(8)))
	p.frames = frac16(n, between(k.draw("frames"), 0, pct(1)))
	p.forms = frac16(n, between(k.draw("forms"), 0, pct(1)/2))
	p.images = frac16(n, between(k.draw("images"), pct(3), pct(30)))
	// The share of lost backlinks: the root's, moved up or down by up to a
	// half in each month, so the lost links vary month by month.
	lost := between(k.draw("lost"), pct(1), pct(12))
	p.lost = frac16(n, lost/2+frac16(lost, between(k.child("lost-month").at(int64(c.month)), 0, one16)))
	if n > 0 {
		p.domainScore = min(100, int64(3*bits.Len64(uint64(n)))+between(k.draw("score"), 0, 30))
	}
	months := between(k.draw("history"), minHistoryMonths, maxHistoryMonths)
	p.start = monthStart(c.month - int(months-1))
	p.end = c.day
	p.curve = between(k.draw("curve"), 0, one16)
	p.pageTop = between(k.draw("page-top"), 55, 98)
	p.settle()
	p.drawBursts()
	return p
}

// drawBursts draws the bursts of the history's months (see burstOdds) and
// places them among the ranks.
func (p *profile) drawBursts() {
	p.bursts, p.base = nil, p.backlinks
	if p.backlinks < burstFloor {
		return
	}
	k := p.key.child("bursts")
	var total int64
	for m := monthOf(p.start); m <= p.currentMonth; m++ {
		d := k.at(int64(m))
		if between(d, 0, burstOdds-1) != 0 {
			continue
		}
		days := (monthStart(m+1) - monthStart(m)) / day
		at := monthStart(m) + between(mix(d), 0, days-1)*day
		if at < p.start || at > p.end {
			continue
		}
		size := frac16(p.backlinks, between(mix(mix(d)), pct(burstMin), pct(burstMax)))
		if size == 0 || total+size >= p.backlinks {
			continue
		}
		p.bursts = append(p.bursts, burst{day: at, size: size})
		total += size
	}
	p.base = p.backlinks - total
	// Each burst follows the base ranks first seen by its day.
	var before int64
	for i := range p.bursts {
		b := &p.bursts[i]
		v := search(p.base, func(v int64) bool { return p.seenBase(v) > b.day })
		b.lo = v + before
		before += b.size
		// Within the day, and before the next base rank.
		b.span = max(0, min(day-1, p.end-b.day))
		if v < p.base {
			b.span = min(b.span, p.seenBase(v)-b.day)
		}
	}
}

// settle enforces the invariants between counts (ip_class_c <= ips <=
// domains <= urls <= backlinks, at least one of each when there is a
// backlink, at most 254 IPs per class C) and derives the structures.
func (p *profile) settle() {
	n := p.backlinks
	p.domains = clamp(p.domains, min(1, n), n)
	p.urls = clamp(p.urls, p.domains, n)
	p.ips = clamp(p.ips, min(1, p.domains), p.domains)
	p.classC = clamp(p.classC, (p.ips+maxIPsPerClassC-1)/maxIPsPerClassC, p.ips)
	for _, c := range []*int64{&p.nofollows, &p.sponsored, &p.ugc, &p.frames, &p.forms, &p.images, &p.lost} {
		*c = clamp(*c, 0, n)
	}
	if n == 0 {
		p.domainScore = 0
	}
	k := p.key
	p.nofollowS = newSpread(n, p.nofollows, k.draw("nofollow-phase"))
	p.sponsoredS = newSpread(n, p.sponsored, k.draw("sponsored-phase"))
	p.ugcS = newSpread(n, p.ugc, k.draw("ugc-phase"))
	p.framesS = newSpread(n, p.frames, k.draw("frames-phase"))
	p.formsS = newSpread(n, p.forms, k.draw("forms-phase"))
	p.imagesS = newSpread(n, p.images, k.draw("images-phase"))
	p.lostS = newSpread(n, p.lost, k.draw("lost-phase"))
	// A heavy head: the top 5% of the domains share 15-40% of the
	// backlinks beyond one each, the top 0.25% another 5-25%; shared
	// hosting puts more domains on the first IPs.
	p.dom = newStairs(p.domains, n,
		tier{groups: pct(5), share: between(k.draw("head"), pct(15), pct(40))},
		tier{groups: pct(1) / 4, share: between(k.draw("top"), pct(5), pct(25))})
	p.ip = newStairs(p.ips, p.domains, tier{groups: pct(5), share: between(k.draw("hosting"), pct(10), pct(40))})
	// The pool spans 2 to 10 times the domains: a target's domains are
	// about every f-th domain of the pool's first f*domains.
	poolSize := p.domains + frac16(p.domains, between(k.draw("pool"), pct(100), pct(900)))
	p.pool = newSpread(poolSize, p.domains, k.draw("pool-phase"))
}

func clamp(x, lo, hi int64) int64 { return max(lo, min(x, hi)) }

// seen is the unix time rank r was first seen: a rank of a burst, on the
// burst's day; any other, at seenBase of its base rank (its rank less the
// bursts before it).
func (p *profile) seen(r int64) int64 {
	v := r
	for _, b := range p.bursts {
		if r < b.lo {
			break
		}
		if r < b.lo+b.size {
			return b.day + (r-b.lo)*b.span/b.size
		}
		v -= b.size
	}
	return p.seenBase(v)
}

// seenBase is the unix time base rank v was first seen: the start of the
// history plus the span up to the sandbox day scaled by g((v+1)/base),
// where g mixes linear growth with sqrt (a history that accelerates).
// seenBase(base-1) is the sandbox day.
func (p *profile) seenBase(v int64) int64 {
	y := mulDiv(uint64(v+1), 1<<32, 0, uint64(p.base)) // (v+1)/base in 1/2^32
	sq := uint64(1 << 32)
	if y < 1<<32 {
		sq = isqrt(y << 32)
	}
	g := (uint64(p.curve)*y + uint64(one16-p.curve)*sq) >> 16
	return p.start + int64(mulDiv(uint64(p.end-p.start), g, 0, 1<<32))
}

// seenBy is the number of backlinks first seen at or before unix time t.
func (p *profile) seenBy(t int64) int64 {
	return search(p.backlinks, func(r int64) bool { return p.seen(r) > t })
}

// lastSeen is when rank r (first seen at first) was last seen. A lost
// backlink was lost during the current month, so every past month counted
// it; a live one was seen within the last week.
func (p *profile) lastSeen(r, first int64, lost bool) int64 {
	draw := p.key.at(r)
	if lost {
		from := max(first, monthStart(p.currentMonth))
		return between(draw, min(from, p.end), p.end)
	}
	return between(draw, max(first, p.end-7*day), p.end)
}

// search is the smallest i in [0, n) for which f is true, or n; f must be
// false then true.
func search(n int64, f func(int64) bool) int64 {
	lo, hi := int64(0), n
	for lo < hi {
		mid := lo + (hi-lo)/2
		if f(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// newCount is the number of backlinks first seen within the last 30 days.
func (p *profile) newCount() int64 { return p.backlinks - p.seenBy(p.newSince()) }

// newSince is the unix time after which a first sight is new.
func (p *profile) newSince() int64 { return p.end - newDays*day }

// oldestMonth is the month of the first backlink; the current month when
// there is none.
func (p *profile) oldestMonth() int {
	if p.backlinks == 0 {
		return p.currentMonth
	}
	return monthOf(p.seen(0))
}

// domainsBefore is the number of referring domains first seen among ranks
// 0..r-1.
func (p *profile) domainsBefore(r int64) int64 {
	if r <= 0 {
		return 0
	}
	return p.dom.of(r-1) + 1
}

// domainOf is the referring domain of rank r.
func (p *profile) domainOf(r int64) int64 { return p.dom.of(r) }

// pagesBefore is the number of referring pages of domains 0..j-1 given the
// first rank of domain j: each domain has one page plus its share of the
// urls beyond one per domain.
func (p *profile) pagesBefore(j, first int64) int64 {
	extra, room := p.urls-p.domains, p.backlinks-p.domains
	if room == 0 {
		return j
	}
	return j + scale(first-j, extra, room)
}

// classCOf is the subnet of IP i.
func (p *profile) classCOf(i int64) int64 { return scale(i, p.classC, p.ips) }

// firstIPOfClassC is the first IP of subnet c.
func (p *profile) firstIPOfClassC(c int64) int64 {
	if p.classC == 0 {
		return 0
	}
	return int64(mulDiv(uint64(c), uint64(p.ips), uint64(p.classC-1), uint64(p.classC)))
}

// pageScore is the page score of referring page pg of domain score ds: it
// falls linearly from pageTop for the oldest page to 0, never above the
// domain's score. Both terms never grow with the rank, so links in rank
// order are in page score order.
func (p *profile) pageScore(pg, ds int64) int64 {
	return min(ds, scale(p.urls-pg, p.pageTop, p.urls))
}

// link holds what the model says about the backlink of rank r.
type link struct {
	domain, page, ip, classC                                int64
	firstSeen, lastSeen                                     int64 // unix
	nofollow, sponsored, ugc, frame, form, image, lost, new bool
}

// linkAt derives the backlink of rank r (random access: O(log^2 n)).
func (p *profile) linkAt(r int64) link {
	j := p.domainOf(r)
	first, next := p.dom.start(j), p.dom.start(j+1)
	before := p.pagesBefore(j, first)
	pages := p.pagesBefore(j+1, next) - before
	l := link{
		domain:    j,
		page:      before + scale(r-first, pages, next-first),
		firstSeen: p.seen(r),
		nofollow:  p.nofollowS.has(r),
		sponsored: p.sponsoredS.has(r),
		ugc:       p.ugcS.has(r),
		frame:     p.framesS.has(r),
		form:      p.formsS.has(r),
		image:     p.imagesS.has(r),
		lost:      p.lostS.has(r),
	}
	l.ip = p.ip.of(j)
	l.classC = p.classCOf(l.ip)
	l.new = l.firstSeen > p.newSince()
	l.lastSeen = p.lastSeen(r, l.firstSeen, l.lost)
	return l
}

// monthStat is one month of a target's history.
type monthStat struct {
	month                              int
	backlinks, domains, follows, score int64
}

// growScore is score grown with the square root of the share b/n of the
// backlinks seen so far.
func growScore(score, b, n int64) int64 {
	if n <= 0 {
		return 0
	}
	y := mulDiv(uint64(b), 1<<32, 0, uint64(n))
	sq := uint64(1 << 32)
	if y < 1<<32 {
		sq = isqrt(y << 32)
	}
	return int64(mulDiv(uint64(score), sq, 0, 1<<32))
}

// stairs splits total items (ranks, domains) into n groups: group g owns
// the contiguous items start(g) to start(g+1)-1, at least one, and no group
// owns more than the group before it. The sizes are a sum of linear
// profiles (tiers): tier t spreads its share of the items beyond one per
// group over the first k[t] groups, falling linearly (so the first group
// gets about twice the tier's average), which makes a heavy head (a few
// domains with thousands of sitewide links) over a long tail. The start of
// any group is a closed formula (a few floor sums), so a group is found
// from an item by binary search and walked to its neighbours in O(1).
//
// Group g owns 1 + e(g) items, e(g) = sum over tiers with g < k[t] of
// floor(a[t]*(k[t]-g)/2^32), plus q, plus one when g < r: a[t] is the
// largest slope whose floors do not exceed the tier's share, and q, r
// spread what the floors leave over the first groups.
type stairs struct {
	n, total int64
	k        [maxTiers]int64
	a        [maxTiers]uint64 // slopes in 1/2^32
	top      [maxTiers]uint64 // sum of the floors over a tier's groups: S(k+1)
	q, r     int64
}

const (
	stairsScale = 1 << 32
	maxTiers    = 3
)

// tier is a share of the extra items given to the first groups.
type tier struct {
	groups q16 // the fraction of the groups it covers
	share  q16 // the fraction of the extra items it spreads
}

// newStairs splits total items into n groups; tiers (at most three) take
// their shares of the extra items, and the first tier always covers every
// group and takes what the others leave.
func newStairs(n, total int64, tiers ...tier) stairs {
	s := stairs{n: n, total: total}
	if n <= 0 {
		return s
	}
	extra := total - n
	left := extra
	var used uint64
	for t := len(tiers); t >= 0; t-- {
		if t >= maxTiers {
			continue
		}
		k, e := n, left
		if t > 0 {
			k = max(1, frac16(n, tiers[t-1].groups))
			e = frac16(extra, tiers[t-1].share)
		}
		e = min(e, left)
		left -= e
		s.k[t] = k
		// Ideal slope 2e/(k(k+1)) in 1/2^32, rounded down; the quotient
		// fits while e/k is below 2^29, which every profile keeps far
		// from.
		if uint64(e)/uint64(k) < 1<<29 {
			s.a[t] = mulDiv(2*uint64(e), stairsScale, 0, uint64(k)) / uint64(k+1)
		}
		s.top[t] = floorSum(uint64(k)+1, stairsScale, s.a[t], 0)
		used += s.top[t]
	}
	rest := extra - int64(used)
	s.q, s.r = rest/n, rest%n
	return s
}

// start is the first item of group g in [0, n]; start(n) is total.
func (s stairs) start(g int64) int64 {
	if g <= 0 {
		return 0
	}
	if g >= s.n {
		return s.total
	}
	x := g + s.q*g + min(g, s.r)
	for t, k := range s.k {
		if k == 0 {
			continue
		}
		gt := min(g, k)
		x += int64(s.top[t] - floorSum(uint64(k-gt)+1, stairsScale, s.a[t], 0))
	}
	return x
}

// size is the number of items of group g.
func (s stairs) size(g int64) int64 {
	if g < 0 || g >= s.n {
		return 0
	}
	e := 1 + s.q
	if g < s.r {
		e++
	}
	for t, k := range s.k {
		if g < k {
			e += int64(mulDiv(s.a[t], uint64(k-g), 0, stairsScale))
		}
	}
	return e
}

// of is the group of item x in [0, total).
func (s stairs) of(x int64) int64 {
	return search(s.n, func(g int64) bool { return s.start(g+1) > x })
}

// floorSum is the sum of floor((a*i + b) / m) for i in [0, n). Callers keep
// a*n + b below 2^63 (stairs: a*n is at most about 2*total/n * 2^32).
func floorSum(n, m, a, b uint64) uint64 {
	var sum uint64
	for {
		if a >= m {
			sum += n * (n - 1) / 2 * (a / m)
			a %= m
		}
		if b >= m {
			sum += n * (b / m)
			b %= m
		}
		y := a*n + b
		if y < m {
			return sum
		}
		n, b = y/m, y%m
		m, a = a, m
	}
}

// mark is the slot of the k-th mark (0-based) of s: the inverse of before.
func (s spread) mark(k int64) int64 {
	// The smallest x with before(x+1) > k: x+1 >= ((k+1)n - phase)/count.
	hi, lo := bits.Mul64(uint64(k+1), uint64(s.n))
	lo, borrow := bits.Sub64(lo, uint64(s.phase), 0)
	hi -= borrow
	lo, carry := bits.Add64(lo, uint64(s.count-1), 0)
	hi += carry
	q, _ := bits.Div64(hi, lo, uint64(s.count))
	return int64(q) - 1
}
