package sandbox

import (
	"cmp"
	"slices"
)

// This file builds the bounded tables of a scoped target: its indexed pages
// (at most maxLeaves), its anchors (at most the vocabulary and the empty
// anchor of image links) and its score profile (at most 101 rows). Each is
// one pass over the scope's backlinks aggregating into the table, which is
// then sorted in the endpoint's default order: its size does not depend on
// the target's.

// aggregate is a row of a table: counts and times aggregated over
// backlinks.
type aggregate struct {
	key                int // the page, the anchor, the score
	backlinks, domains int64
	first, last        int64 // unix
	lastDomain         int64 // the last domain counted, to count each once
	external, internal int64 // pages
	status             int64 // pages
	title, text        string
}

// byDomainsDesc orders aggregates by domains, most first, then by key.
func byDomainsDesc(a, b aggregate) int {
	if c := cmp.Compare(b.domains, a.domains); c != 0 {
		return c
	}
	return cmp.Compare(a.key, b.key)
}

// pagesTable aggregates the backlinks of s by the page of the site they
// point to; pages without backlinks are left out.
func pagesTable(s *scoped) []aggregate {
	p := s.p
	stats := make([]aggregate, len(s.site.leaves))
	for l := range stats {
		stats[l] = aggregate{key: l, first: -1, lastDomain: -1}
	}
	d := s.domains(1)
	lastIP, leaf := int64(-1), 0
	for ok := d.first(); ok; ok = d.next() {
		if d.i != lastIP {
			lastIP, leaf = d.i, s.site.leafOf(d.i)
		}
		a := &stats[leaf]
		a.backlinks += d.hi - d.lo
		a.domains++
		if a.first < 0 {
			a.first = p.seen(d.lo)
		}
		for r := d.lo; r < d.hi; r++ {
			a.last = max(a.last, p.lastSeen(r, p.seen(r), p.lostS.has(r)))
		}
	}
	out := stats[:0]
	for _, a := range stats {
		if a.backlinks > 0 {
			a.title, a.status, a.external, a.internal = s.site.pageInfo(a.key)
			a.text = s.site.url(a.key)
			out = append(out, a)
		}
	}
	slices.SortFunc(out, byDomainsDesc)
	return out
}

func pageRowsOf(s *scoped) *rowSet {
	t := pagesTable(s)
	var cur aggregate
	return tableRows(int64(len(t)), "domains_count", func(id int64) { cur = t[id] }, map[string]func() value{
		"source_url":           func() value { return textV(cur.text) },
		"source_title":         func() value { return textV(cur.title) },
		"response_code":        func() value { return intV(cur.status) },
		"backlinks_count":      func() value { return intV(cur.backlinks) },
		"domains_count":        func() value { return intV(cur.domains) },
		"external_links_count": func() value { return intV(cur.external) },
		"internal_links_count": func() value { return intV(cur.internal) },
		"first_seen_at":        func() value { return timestampV(cur.first) },
		"last_seen_at":         func() value { return timestampV(cur.last) },
	})
}

// anchorsTable aggregates the backlinks of s by anchor text; the empty
// anchor of image links is the last key.
func anchorsTable(s *scoped) []aggregate {
	p := s.p
	ctx := newRowCtx(s)
	v := int64(len(ctx.anchors))
	stats := make([]aggregate, v+1)
	for a := range stats {
		stats[a] = aggregate{key: a, first: -1, lastDomain: -1}
		if int64(a) < v {
			stats[a].text = ctx.anchors[a]
		}
	}
	l := &linkRow{rowCtx: ctx}
	d := s.domains(1)
	for ok := d.first(); ok; ok = d.next() {
		l.setDomain(d.j, d.lo, d.hi, d.i)
		for r := d.lo; r < d.hi; r++ {
			l.setRank(r)
			idx := v
			if !l.flags.image {
				idx = (l.anchorBase + l.k) % v
			}
			a := &stats[idx]
			a.backlinks++
			if a.lastDomain != d.j {
				a.lastDomain = d.j
				a.domains++
			}
			if a.first < 0 {
				a.first = l.first
			}
			a.last = max(a.last, p.lastSeen(r, l.first, l.flags.lost))
		}
	}
	out := stats[:0]
	for _, a := range stats {
		if a.backlinks > 0 {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, byDomainsDesc)
	return out
}

func anchorRowsOf(s *scoped) *rowSet {
	t := anchorsTable(s)
	var cur aggregate
	return tableRows(int64(len(t)), "domains_count", func(id int64) { cur = t[id] }, map[string]func() value{
		"anchor":          func() value { return textV(cur.text) },
		"backlinks_count": func() value { return intV(cur.backlinks) },
		"domains_count":   func() value { return intV(cur.domains) },
		"first_seen_at":   func() value { return timestampV(cur.first) },
		"last_seen_at":    func() value { return timestampV(cur.last) },
	})
}

// scoreProfile counts the referring domains of s by domain score, highest
// score first; scores without domains are left out (spec 4.3 note 2), so
// there are at most 101 rows.
func scoreProfile(s *scoped) []aggregate {
	var byScore [101]int64
	d := s.domains(1)
	for ok := d.first(); ok; ok = d.next() {
		byScore[poolScore(s.p.pool.mark(d.j))]++
	}
	var out []aggregate
	for score := 100; score >= 0; score-- {
		if byScore[score] > 0 {
			out = append(out, aggregate{key: score, domains: byScore[score]})
		}
	}
	return out
}

func scoreProfileRowsOf(s *scoped) *rowSet {
	t := scoreProfile(s)
	var cur aggregate
	return tableRows(int64(len(t)), "domain_score", func(id int64) { cur = t[id] }, map[string]func() value{
		"domain_score":  func() value { return intV(int64(cur.key)) },
		"domains_count": func() value { return intV(cur.domains) },
	})
}
