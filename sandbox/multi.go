package sandbox

import (
	"cmp"
	"slices"
	"strconv"
)

// This file answers the endpoints about several domains at once:
// competitors (domains sharing referring domains with one), comparison (the
// overview of several targets side by side) and matrix (the referring
// domains of several targets with their backlinks to each). Referring
// domains are positions of the global pool (see profile), so two targets
// share a referring domain when both draw its position, and counting that
// is exact.

// competitor is a row of competitors.
type competitor struct {
	index  int
	name   string
	common int64
	sim    int64 // similarity in 1/10000
}

// Bounds of the competitor search.
const (
	competitorCandidates = 400 // names tried
	maxCompetitors       = 24  // candidates kept
	minCommon            = 5   // spec 4.3 note 3
	minSimilarity        = 100 // 0.01 in 1/10000
)

// competitorsOf returns the competitors of root domain name: invented
// domains of about its size (their own profiles, as any request about them
// would find) sharing at least 5 referring domains with it and a Jaccard
// similarity (common / union of the referring domains) of at least 0.01,
// most similar first.
func competitorsOf(seed int64, c clock, name string) []competitor {
	p := rootProfile(seed, c, name)
	k := p.key.child("competitors")
	var out []competitor
	seen := map[string]bool{name: true}
	try := func(cand string, i int) {
		if seen[cand] || len(out) >= maxCompetitors {
			return
		}
		seen[cand] = true
		cp := rootProfile(seed, c, cand)
		if cp.domains*4 < p.domains || cp.domains > 4*p.domains {
			return
		}
		common := sharedDomains(&p, &cp)
		union := p.domains + cp.domains - common
		if common < minCommon || common*10000 < minSimilarity*union {
			return
		}
		out = append(out, competitor{index: i, name: cand, common: common, sim: (common*10000 + union/2) / union})
	}
	for i := range competitorCandidates {
		d := k.at(int64(i))
		w := nameWords[between(d, 0, int64(len(nameWords)-1))]
		tail := nameTails[between(mix(d), 0, int64(len(nameTails)-1))]
		tld := tlds[between(mix(d^0x5bd1e995), 0, int64(len(tlds)-1))]
		try(w+"-"+tail+"."+tld, i)
	}
	// Targets larger than invented sizes go (n-labels are sized targets
	// of their own): rivals of 50% to 200% of its backlinks.
	for i := range maxCompetitors {
		d := k.child("sized").at(int64(i))
		n := p.backlinks * between(d, 50, 200) / 100
		w := nameWords[between(mix(d), 0, int64(len(nameWords)-1))]
		try("n"+strconv.FormatInt(n, 10)+"."+w+".example", competitorCandidates+i)
	}
	slices.SortFunc(out, func(a, b competitor) int {
		if c := cmp.Compare(b.sim, a.sim); c != 0 {
			return c
		}
		return cmp.Compare(a.index, b.index)
	})
	return out
}

// sharedDomains counts the referring domains two roots share: the pool
// positions both draw, by walking the smaller set.
func sharedDomains(a, b *profile) int64 {
	if a.domains > b.domains {
		a, b = b, a
	}
	var n int64
	for j := range a.domains {
		if b.pool.has(a.pool.mark(j)) {
			n++
		}
	}
	return n
}

func competitorRowsOf(rows []competitor) *rowSet {
	var cur competitor
	return tableRows(int64(len(rows)), "similarity", func(id int64) { cur = rows[id] }, map[string]func() value{
		"domain":            func() value { return textV(cur.name) },
		"similarity":        func() value { return floatV(cur.sim) },
		"common_refdomains": func() value { return intV(cur.common) },
	})
}

// matrixRows are the referring domains of the scoped targets ts, each with
// its backlinks to every target: the union of their domains by pool
// position, which is their default order (domain score, highest first).
// ids are pool positions.
type matrixRows struct {
	seed   int64
	ts     []*scoped
	ctxs   []*rowCtx
	g      int64
	counts []int64
	from   int // the first target the domain links to: its IP and country
}

func (m *matrixRows) cols() map[string]func() value {
	return map[string]func() value{
		"domain":           func() value { return textV(poolName(m.seed, m.g)) },
		"domain_score":     func() value { return intV(poolScore(m.g)) },
		"ip_address":       func() value { return textV(m.ctxs[m.from].ipText) },
		"country":          func() value { return textV(m.ctxs[m.from].country) },
		"backlinks_counts": func() value { return intListV(m.counts) },
		"matches_count": func() value {
			var n int64
			for _, c := range m.counts {
				if c > 0 {
					n++
				}
			}
			return intV(n)
		},
	}
}

// load makes pool position g current.
func (m *matrixRows) load(g int64) {
	m.g, m.from = g, -1
	for t, s := range m.ts {
		m.counts[t] = 0
		if !s.p.pool.has(g) {
			continue
		}
		d := s.domains(1)
		d.set(s.p.pool.before(g))
		if !d.in {
			continue
		}
		m.counts[t] = d.hi - d.lo
		if m.from < 0 {
			m.from = t
			m.ctxs[t].setDomain(d.j, d.lo, d.hi, d.i)
		}
	}
}

// matrixCursor merges the targets' covered domains by pool position.
type matrixCursor struct {
	m     *matrixRows
	dir   int64
	heads []*domCursor
	live  []bool
	gs    []int64
	skip  int64
	quiet bool // count only: do not make rows current
}

func (m *matrixRows) open(k, dir int64) *matrixCursor {
	c := &matrixCursor{m: m, dir: dir, skip: k, heads: make([]*domCursor, len(m.ts)),
		live: make([]bool, len(m.ts)), gs: make([]int64, len(m.ts))}
	for t, s := range m.ts {
		c.heads[t] = s.domains(dir)
		c.live[t] = c.heads[t].first()
		if c.live[t] {
			c.gs[t] = s.p.pool.mark(c.heads[t].j)
		}
	}
	return c
}

func (c *matrixCursor) next() (int64, bool) {
	for {
		best, any := int64(0), false
		for t, ok := range c.live {
			if ok && (!any || (c.dir > 0 && c.gs[t] < best) || (c.dir < 0 && c.gs[t] > best)) {
				best, any = c.gs[t], true
			}
		}
		if !any {
			return 0, false
		}
		m := c.m
		emit := c.skip == 0 && !c.quiet
		if emit {
			m.g, m.from = best, -1
		}
		for t, ok := range c.live {
			if emit {
				m.counts[t] = 0
			}
			if !ok || c.gs[t] != best {
				continue
			}
			h := c.heads[t]
			if emit {
				m.counts[t] = h.hi - h.lo
				if m.from < 0 {
					m.from = t
					m.ctxs[t].setDomain(h.j, h.lo, h.hi, h.i)
				}
			}
			if c.live[t] = h.next(); c.live[t] {
				c.gs[t] = m.ts[t].p.pool.mark(h.j)
			}
		}
		if c.skip > 0 {
			c.skip--
			continue
		}
		return best, true
	}
}

// matrixRowsOf builds the matrix of the scoped targets ts.
func matrixRowsOf(seed int64, ts []*scoped) *rowSet {
	m := &matrixRows{seed: seed, ts: ts, counts: make([]int64, len(ts))}
	for _, s := range ts {
		m.ctxs = append(m.ctxs, newRowCtx(s))
	}
	count := m.open(0, 1)
	count.quiet = true
	var n int64
	for {
		if _, ok := count.next(); !ok {
			break
		}
		n++
	}
	return &rowSet{
		n: n, order: "domain_score", cols: m.cols(), load: m.load,
		open: func(k, dir int64) cursor { return m.open(k, dir) },
	}
}
