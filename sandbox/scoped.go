package sandbox

import (
	"slices"
	"strconv"

	"github.com/seoetl/etl/catalog"
)

// scoped is a backlink target at a scope: the backlinks of its root domain
// (profile) that point into the pages its scope covers (site.node). At
// ROOT_DOMAIN scope, and wherever the scope covers the whole site, that is
// every backlink and every count is the profile's closed formula; a
// narrower scope covers whole referring IPs, and its counts come from one
// pass over the root's domains (O(domains), no memory).
type scoped struct {
	seed   int64
	p      *profile
	site   *site
	member []bool // per page of the site; nil: every backlink of the root
	c      counts
	score  int64 // page score at PAGE scope, else the root's domain score
	hist   []monthStat
}

// counts are the overview's counts of a scoped target.
type counts struct {
	backlinks, domains, urls, ips, classC                       int64
	nofollows, sponsored, ugc, frames, forms, images, lost, new int64
	firstRank                                                   int64 // the oldest backlink's rank in the root; -1 when none
}

// newScoped derives target t at scope, and the effective url of the request.
func newScoped(seed int64, c clock, t target, scope catalog.Scope) (*scoped, string) {
	chain, effective := t.levels(scope)
	p := rootProfile(seed, c, t.root)
	s := &scoped{seed: seed, p: &p}
	s.site = siteOf(seed, s.p, t.root)
	s.member = s.site.node(t, scope)
	switch {
	case s.member != nil && !slices.Contains(s.member, true):
		s.c = counts{firstRank: -1}
	case s.member == nil:
		s.c = counts{
			backlinks: p.backlinks, domains: p.domains, urls: p.urls, ips: p.ips, classC: p.classC,
			nofollows: p.nofollows, sponsored: p.sponsored, ugc: p.ugc, frames: p.frames, forms: p.forms,
			images: p.images, lost: p.lost, new: p.newCount(), firstRank: min(0, p.backlinks-1),
		}
	default:
		s.c = s.countPass()
	}
	s.score = p.domainScore
	if s.c.backlinks == 0 {
		s.score = 0
	}
	if scope == catalog.Page {
		last := chain[len(chain)-1]
		s.score = pageScore(newKey(seed, "level", strconv.Itoa(int(last.kind)), last.name), s.c.backlinks, p.domainScore)
	}
	return s, effective
}

// pageScore is the page score of a page of n backlinks on a domain of
// score ds.
func pageScore(k key, n, ds int64) int64 {
	if n == 0 {
		return 0
	}
	s := ds*between(k.draw("page-score"), 25, 100)/100 + between(k.draw("page-bonus"), 0, 10)
	return clamp(s, 1, 100)
}

// covers reports whether the scope covers referring IP i.
func (s *scoped) covers(i int64) bool { return s.member == nil || s.member[s.site.leafOf(i)] }

// follows is the number of dofollow backlinks.
func (s *scoped) follows() int64 { return s.c.backlinks - s.c.nofollows }

// countPass counts a narrower scope by walking the root's domains.
func (s *scoped) countPass() counts {
	p := s.p
	c := counts{firstRank: -1}
	newFrom := p.seenBy(p.newSince())
	lastIP, lastClassC := int64(-1), int64(-1)
	d := s.domains(1)
	for ok := d.first(); ok; ok = d.next() {
		lo, hi := d.lo, d.hi
		if c.firstRank < 0 {
			c.firstRank = lo
		}
		c.backlinks += hi - lo
		c.domains++
		c.urls += p.pagesBefore(d.j+1, hi) - p.pagesBefore(d.j, lo)
		if d.i != lastIP {
			lastIP = d.i
			c.ips++
			if cc := p.classCOf(d.i); cc != lastClassC {
				lastClassC = cc
				c.classC++
			}
		}
		in := func(sp spread) int64 { return sp.before(hi) - sp.before(lo) }
		c.nofollows += in(p.nofollowS)
		c.sponsored += in(p.sponsoredS)
		c.ugc += in(p.ugcS)
		c.frames += in(p.framesS)
		c.forms += in(p.formsS)
		c.images += in(p.imagesS)
		c.lost += in(p.lostS)
		c.new += max(0, hi-max(lo, newFrom))
	}
	return c
}

// oldestMonth is the month of the scope's first backlink; the current
// month when there is none.
func (s *scoped) oldestMonth() int {
	if s.c.firstRank < 0 {
		return s.p.currentMonth
	}
	return monthOf(s.p.seen(s.c.firstRank))
}

// monthAt is the state of the target at the end of month m: every backlink
// first seen by then (lost ones included: a backlink is lost in the current
// month only, so it was live in every month before), their domains and
// follows, and the score grown with the square root of the backlinks'
// share. The current month is the overview.
func (s *scoped) monthAt(m int) monthStat {
	p := s.p
	if m >= p.currentMonth {
		return monthStat{month: m, backlinks: s.c.backlinks, domains: s.c.domains, follows: s.follows(), score: s.score}
	}
	if s.member == nil {
		b := p.seenBy(monthStart(m+1) - 1)
		return monthStat{month: m, backlinks: b, domains: p.domainsBefore(b),
			follows: b - p.nofollowS.before(b), score: growScore(s.score, b, s.c.backlinks)}
	}
	oldest := p.oldestMonth()
	if m < oldest {
		return monthStat{month: m}
	}
	if s.hist == nil {
		s.hist = s.history(oldest)
	}
	st := s.hist[m-oldest]
	st.score = growScore(s.score, st.backlinks, s.c.backlinks)
	return st
}

// history counts a narrower scope month by month, from the root's oldest
// month to the one before the current, in one pass over its domains.
func (s *scoped) history(oldest int) []monthStat {
	p := s.p
	months := p.currentMonth - oldest
	// ends[m] is the first rank seen after month oldest+m.
	ends := make([]int64, months)
	for m := range ends {
		ends[m] = p.seenBy(monthStart(oldest+m+1) - 1)
	}
	out := make([]monthStat, months)
	d := s.domains(1)
	m := 0
	for ok := d.first(); ok; ok = d.next() {
		for m < months && ends[m] <= d.lo {
			m++
		}
		if m == months {
			break
		}
		out[m].domains++
		for k, lo := m, d.lo; k < months && lo < d.hi; k++ {
			hi := min(d.hi, ends[k])
			if hi > lo {
				out[k].backlinks += hi - lo
				out[k].follows += hi - lo - (p.nofollowS.before(hi) - p.nofollowS.before(lo))
			}
			lo = max(lo, hi)
		}
	}
	for k := range out {
		out[k].month = oldest + k
		if k > 0 {
			out[k].backlinks += out[k-1].backlinks
			out[k].domains += out[k-1].domains
			out[k].follows += out[k-1].follows
		}
	}
	return out
}

// domCursor walks the referring domains a scope covers, in rank order (dir
// 1) or backwards (dir -1), knowing each domain's ranks and IP. Moving to a
// neighbour is O(1); domains of IPs the scope does not cover are skipped.
type domCursor struct {
	s          *scoped
	dir        int64
	j, lo, hi  int64 // the domain and its ranks [lo, hi)
	i          int64 // its IP
	ipLo, ipHi int64 // the IP's domains [ipLo, ipHi)
	in         bool  // the scope covers IP i
}

func (s *scoped) domains(dir int64) *domCursor { return &domCursor{s: s, dir: dir} }

// set positions the cursor at domain j (0 <= j < domains), ignoring scope.
func (d *domCursor) set(j int64) {
	p := d.s.p
	d.j, d.lo = j, p.dom.start(j)
	d.hi = d.lo + p.dom.size(j)
	d.i = p.ip.of(j)
	d.ipLo = p.ip.start(d.i)
	d.ipHi = d.ipLo + p.ip.size(d.i)
	d.in = d.s.covers(d.i)
}

// move steps to the neighbouring domain in the cursor's direction,
// ignoring scope; false past the end.
func (d *domCursor) move() bool {
	p := d.s.p
	if d.dir > 0 {
		if d.j+1 >= p.domains {
			return false
		}
		d.j++
		d.lo = d.hi
		d.hi = d.lo + p.dom.size(d.j)
		if d.j >= d.ipHi {
			d.i++
			d.ipLo, d.ipHi = d.ipHi, d.ipHi+p.ip.size(d.i)
			d.in = d.s.covers(d.i)
		}
		return true
	}
	if d.j <= 0 {
		return false
	}
	d.j--
	d.hi = d.lo
	d.lo = d.hi - p.dom.size(d.j)
	if d.j < d.ipLo {
		d.i--
		d.ipHi, d.ipLo = d.ipLo, d.ipLo-p.ip.size(d.i)
		d.in = d.s.covers(d.i)
	}
	return true
}

// settle moves on until a covered domain; false past the end.
func (d *domCursor) settle() bool {
	for !d.in {
		if !d.move() {
			return false
		}
	}
	return true
}

// first positions the cursor at the first covered domain in its direction.
func (d *domCursor) first() bool {
	p := d.s.p
	if p.domains == 0 {
		return false
	}
	if d.dir > 0 {
		d.set(0)
	} else {
		d.set(p.domains - 1)
	}
	return d.settle()
}

// next moves to the next covered domain.
func (d *domCursor) next() bool { return d.move() && d.settle() }

// firstAt positions the cursor at the k-th covered domain (0-based) in its
// direction: direct at the root, a walk in a narrower scope.
func (d *domCursor) firstAt(k int64) bool {
	if d.s.member == nil {
		if k >= d.s.p.domains {
			return false
		}
		if d.dir > 0 {
			d.set(k)
		} else {
			d.set(d.s.p.domains - 1 - k)
		}
		return true
	}
	ok := d.first()
	for ; ok && k > 0; k-- {
		ok = d.next()
	}
	return ok
}

// firstAtRank positions the cursor at the covered domain holding the k-th
// covered rank (0-based) in its direction, and returns that rank.
func (d *domCursor) firstAtRank(k int64) (int64, bool) {
	p := d.s.p
	if d.s.member == nil {
		if k >= p.backlinks {
			return 0, false
		}
		r := k
		if d.dir < 0 {
			r = p.backlinks - 1 - k
		}
		d.set(p.domainOf(r))
		return r, true
	}
	for ok := d.first(); ok; ok = d.next() {
		if n := d.hi - d.lo; k >= n {
			k -= n
			continue
		}
		if d.dir > 0 {
			return d.lo + k, true
		}
		return d.hi - 1 - k, true
	}
	return 0, false
}
