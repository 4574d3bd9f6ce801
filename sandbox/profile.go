package sandbox

import (
	"math/bits"
	"strconv"
	"time"

	"github.com/seoetl/etl/catalog"
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
	day     = 24 * 60 * 60
	newDays = 30 // a backlink is new when first seen within the last 30 days
)

// profile is the backlink data of one target at one scope: every count the
// overview reports, plus the few parameters from which each backlink (row r
// of the target, in order of first sight) is derived on demand. Nothing is
// stored per row: a target of five million backlinks costs this struct.
//
// The backlinks of a profile are numbered by time rank r in [0, backlinks):
// rank r was first seen at seen(r), a non-decreasing function. On that
// numbering:
//   - referring domain j owns the contiguous ranks domainStart(j) to
//     domainStart(j+1)-1, so it has at least one backlink and was first seen
//     with its first one; older domains own more backlinks;
//   - each domain's ranks are split into its referring pages, every page
//     owning at least one rank (urls in total);
//   - consecutive domains share an IP address (ips in total) and consecutive
//     IPs share a class C subnet (classC in total);
//   - each flag (nofollow, sponsored, ugc, frame, form, image, lost) marks
//     exactly its count of ranks, spread evenly (see spread).
//
// So every aggregate of a prefix of ranks (the backlinks of a past month, its
// domains, its follows) is a closed formula or a binary search, and always
// equals what counting the rows would give.
type profile struct {
	key key // seeds every per-row draw of this target and scope

	backlinks, domains, urls, ips, classC                        int64
	nofollows, sponsored, ugc, frames, forms, images, lost       int64
	domainScore, score                                           int64
	start, end                                                   int64 // unix: first day of the oldest month; the sandbox day
	curve                                                        q16   // share of linear growth; the rest accelerates
	nofollowS, sponsoredS, ugcS, framesS, formsS, imagesS, lostS spread
	currentMonth                                                 int
}

// Bounds of the invented history and ratios.
const (
	minHistoryMonths = 6
	maxHistoryMonths = 120 // the sane bound of how far back a history goes
	maxIPsPerClassC  = 254
)

// newProfile derives the profile of target t at scope, and the effective url
// of the request.
func newProfile(seed int64, c clock, t target, scope catalog.Scope) (profile, string) {
	chain, effective := t.levels(scope)
	var p profile
	var last key
	for i, lv := range chain {
		k := newKey(seed, "level", strconv.Itoa(int(lv.kind)), lv.name)
		switch {
		case i == 0:
			n, ok := nLabel(lv.name)
			if !ok {
				n = inventBacklinks(k)
			}
			p = freshProfile(k, n, c)
		case lv.identity:
			continue
		case lv.kind == levelHost:
			if n, ok := nLabel(lv.name); ok {
				p = freshProfile(k, n, c)
			} else {
				p = p.narrow(k, between(k.draw("share"), one16/200, pct(35)))
			}
		case lv.kind == levelDir:
			p = p.narrow(k, between(k.draw("share"), pct(3), pct(60)))
		default:
			p = p.narrow(k, between(k.draw("share"), pct(5), pct(80)))
		}
		last = k
	}
	p.score = p.domainScore
	if scope == catalog.Page {
		p.score = pageScore(last, p)
	}
	return p, effective
}

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
	p.lost = frac16(n, between(k.draw("lost"), pct(1), pct(12)))
	if n > 0 {
		p.domainScore = min(100, int64(3*bits.Len64(uint64(n)))+between(k.draw("score"), 0, 30))
	}
	months := between(k.draw("history"), minHistoryMonths, maxHistoryMonths)
	p.start = monthStart(c.month - int(months-1))
	p.end = c.day
	p.curve = between(k.draw("curve"), 0, one16)
	p.settle()
	return p
}

// narrow returns the profile of a part of p (a subdomain, folder or page)
// holding the share of its backlinks. Every count scales with the backlinks,
// so no count of the part exceeds the same count of p.
func (p profile) narrow(k key, share q16) profile {
	c := p
	c.key = k
	n := frac16(p.backlinks, share)
	of := func(x int64) int64 { return scale(x, n, p.backlinks) }
	c.backlinks = n
	c.domains, c.urls, c.ips, c.classC = of(p.domains), of(p.urls), of(p.ips), of(p.classC)
	c.nofollows, c.sponsored, c.ugc = of(p.nofollows), of(p.sponsored), of(p.ugc)
	c.frames, c.forms, c.images, c.lost = of(p.frames), of(p.forms), of(p.images), of(p.lost)
	c.settle()
	return c
}

// settle enforces the invariants between counts (ip_class_c <= ips <=
// domains <= urls <= backlinks, at least one of each when there is a
// backlink, at most 254 IPs per class C) and derives the flag spreads.
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
}

func clamp(x, lo, hi int64) int64 { return max(lo, min(x, hi)) }

// pageScore is the page score of the last level of a PAGE target.
func pageScore(k key, p profile) int64 {
	if p.backlinks == 0 {
		return 0
	}
	s := p.domainScore*between(k.draw("page-score"), 25, 100)/100 + between(k.draw("page-bonus"), 0, 10)
	return clamp(s, 1, 100)
}

// seen is the unix time rank r was first seen: the start of the history plus
// the span up to the sandbox day scaled by g((r+1)/n), where g mixes linear
// growth with sqrt (a history that accelerates). seen(n-1) is the sandbox day.
func (p *profile) seen(r int64) int64 {
	y := mulDiv(uint64(r+1), 1<<32, 0, uint64(p.backlinks)) // (r+1)/n in 1/2^32
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
func (p *profile) newCount() int64 { return p.backlinks - p.seenBy(p.end-newDays*day) }

// follows is the number of dofollow backlinks.
func (p *profile) follows() int64 { return p.backlinks - p.nofollows }

// oldestMonth is the month of the first backlink; the current month when
// there is none.
func (p *profile) oldestMonth() int {
	if p.backlinks == 0 {
		return p.currentMonth
	}
	return monthOf(p.seen(0))
}

// domainStart is the first rank of referring domain j (j in [0, domains]);
// domainStart(domains) is backlinks. Domain j's share of the ranks follows
// h(x) = 1-(1-x)^2: the oldest domains own the most backlinks.
func (p *profile) domainStart(j int64) int64 {
	if j >= p.domains {
		return p.backlinks
	}
	x := mulDiv(uint64(j), 1<<32, 0, uint64(p.domains)) // j/domains in 1/2^32
	hi, lo := bits.Mul64(x, 2<<32-x)                    // x(2-x) in 1/2^64
	h := hi<<32 | lo>>32                                // in 1/2^32
	return j + int64(mulDiv(uint64(p.backlinks-p.domains), h, 0, 1<<32))
}

// domainsBefore is the number of referring domains first seen among ranks
// 0..r-1.
func (p *profile) domainsBefore(r int64) int64 {
	return search(p.domains, func(j int64) bool { return p.domainStart(j) >= r })
}

// domainOf is the referring domain of rank r.
func (p *profile) domainOf(r int64) int64 { return p.domainsBefore(r+1) - 1 }

// pagesBefore is the number of referring pages of domains 0..j-1: each domain
// has one page plus its share of the urls beyond one per domain.
func (p *profile) pagesBefore(j int64) int64 {
	extra, room := p.urls-p.domains, p.backlinks-p.domains
	if room == 0 {
		return j
	}
	return j + scale(p.domainStart(j)-j, extra, room)
}

// pageOf is the referring page of rank r of domain j, numbered across the
// target.
func (p *profile) pageOf(r, j int64) int64 {
	first, next := p.domainStart(j), p.domainStart(j+1)
	before := p.pagesBefore(j)
	pages := p.pagesBefore(j+1) - before
	return before + scale(r-first, pages, next-first)
}

// ipOf is the referring IP address of domain j; classCOf the subnet of IP i.
func (p *profile) ipOf(j int64) int64     { return scale(j, p.ips, p.domains) }
func (p *profile) classCOf(i int64) int64 { return scale(i, p.classC, p.ips) }

// link holds what the model says about the backlink of rank r; the list
// endpoints will render their rows from it.
type link struct {
	domain, page, ip, classC                                int64
	firstSeen, lastSeen                                     int64 // unix
	nofollow, sponsored, ugc, frame, form, image, lost, new bool
}

// linkAt derives the backlink of rank r.
func (p *profile) linkAt(r int64) link {
	j := p.domainOf(r)
	l := link{
		domain:    j,
		page:      p.pageOf(r, j),
		firstSeen: p.seen(r),
		nofollow:  p.nofollowS.has(r),
		sponsored: p.sponsoredS.has(r),
		ugc:       p.ugcS.has(r),
		frame:     p.framesS.has(r),
		form:      p.formsS.has(r),
		image:     p.imagesS.has(r),
		lost:      p.lostS.has(r),
	}
	l.ip = p.ipOf(l.domain)
	l.classC = p.classCOf(l.ip)
	l.new = l.firstSeen > p.end-newDays*day
	draw := p.key.at(r)
	if l.lost {
		// Lost during the current month, so every past month counted it.
		from := max(l.firstSeen, monthStart(p.currentMonth))
		l.lastSeen = between(draw, min(from, p.end), p.end)
	} else {
		l.lastSeen = between(draw, max(l.firstSeen, p.end-7*day), p.end)
	}
	return l
}

// monthStat is one month of a target's history.
type monthStat struct {
	month                              int
	backlinks, domains, follows, score int64
}

// monthAt is the state of p at the end of month m: every backlink first seen
// by then (lost ones included: a backlink is lost in the current month only,
// so it was live in every month before), its domains and follows, and the
// score grown with the square root of the backlinks' share.
func (p *profile) monthAt(m int) monthStat {
	b := p.backlinks
	if m < p.currentMonth {
		b = p.seenBy(monthStart(m+1) - 1)
	}
	s := monthStat{month: m, backlinks: b, domains: p.domainsBefore(b), follows: b - p.nofollowS.before(b)}
	if p.backlinks > 0 {
		y := mulDiv(uint64(b), 1<<32, 0, uint64(p.backlinks))
		sq := uint64(1 << 32)
		if y < 1<<32 {
			sq = isqrt(y << 32)
		}
		s.score = int64(mulDiv(uint64(p.score), sq, 0, 1<<32))
	}
	return s
}
