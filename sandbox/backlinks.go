package sandbox

import (
	"strconv"
)

// This file generates the streamed lists of a scoped target: links (one row
// per backlink, rank order), ref-domains (one per referring domain, domain
// order) and ref-ips (one per referring IP, IP order). Each generation
// order is the endpoint's default order, descending: page scores, domains'
// backlinks and IPs' domains never grow along the ranks (see profile), so
// the default order streams without sorting, in either direction.

// rowCtx is what the rows of one target share while streaming: the current
// domain's and IP's derived values, recomputed only when they change.
type rowCtx struct {
	s       *scoped
	anchors []string // the target's anchor vocabulary
	keys    rowKeys
	buf     []byte

	// The current domain j (ranks [lo, hi)) and its pool position.
	j, lo, hi     int64
	g             int64
	name, host    string
	scheme        string
	dscore        int64
	pagesBefore   int64
	pages         int64
	anchorBase    int64
	lang          string
	domainCtxOf   int64 // the domain the values above are for; -1 none
	ipCtxOf       int64 // the IP the values below are for; -1 none
	i             int64
	ipText        string
	country       string
	leafIndex     int
	targetURL     string
	redirectURL   string
	ipRankLo      int64 // IP rows: first rank of the IP
	ipRankHi      int64
	ipDomainCount int64
}

// rowKeys are the keys of the per-domain and per-page draws, which do not
// depend on the target: a referring page is the same page in every list
// that shows it.
type rowKeys struct {
	domain, anchor, lang, path, title, size, ext, int, status key
}

func newRowKeys(seed int64) rowKeys {
	dk := newKey(seed, "pool-domain")
	return rowKeys{
		domain: dk, anchor: dk.child("anchor"), lang: dk.child("lang"),
		path: newKey(seed, "page-path"), title: newKey(seed, "pool-title"),
		size: newKey(seed, "pool-page", "size"), ext: newKey(seed, "pool-page", "ext"),
		int: newKey(seed, "pool-page", "int"), status: newKey(seed, "pool-page", "status"),
	}
}

func newRowCtx(s *scoped) *rowCtx {
	root := s.site.hosts[0]
	return &rowCtx{
		s:           s,
		anchors:     append(brandAnchors(root), anchorTexts...),
		keys:        newRowKeys(s.seed),
		domainCtxOf: -1,
		ipCtxOf:     -1,
	}
}

// setDomain makes domain j (ranks [lo, hi), IP i) current.
func (c *rowCtx) setDomain(j, lo, hi, i int64) {
	c.j, c.lo, c.hi = j, lo, hi
	if c.domainCtxOf != j {
		s, p := c.s, c.s.p
		c.domainCtxOf = j
		c.g = p.pool.mark(j)
		c.name = poolName(s.seed, c.g)
		c.host = poolHost(s.seed, c.g, c.name)
		c.scheme = "https://"
		if between(c.keys.domain.at(c.g), 0, 9) == 0 {
			c.scheme = "http://"
		}
		c.dscore = poolScore(c.g)
		c.pagesBefore = p.pagesBefore(j, lo)
		c.pages = p.pagesBefore(j+1, hi) - c.pagesBefore
		c.anchorBase = between(c.keys.anchor.at(c.g), 0, int64(len(c.anchors)-1))
		c.lang = languages[pick(c.keys.lang.at(c.g), languageCum)]
	}
	c.setIP(i)
}

// setIP makes IP i current.
func (c *rowCtx) setIP(i int64) {
	if c.ipCtxOf == i {
		return
	}
	s, p := c.s, c.s.p
	c.ipCtxOf, c.i = i, i
	cc := p.classCOf(i)
	c.ipText = string(appendIP(nil, p.key, cc, i, p.firstIPOfClassC(cc)))
	c.country = countries[pick(p.key.child("country").at(cc), countryCumTotal)]
	c.leafIndex = s.site.leafOf(i)
	c.targetURL = s.site.url(c.leafIndex)
	c.redirectURL = s.site.olds[c.leafIndex]
}

// linkRow is the current backlink of a links stream.
type linkRow struct {
	*rowCtx
	r     int64
	w, k  int64 // page number within the domain, link number within the page
	first int64
	flags struct{ nofollow, ugc, sponsored, form, frame, image, lost bool }
}

// setRank makes rank r of the current domain current.
func (l *linkRow) setRank(r int64) {
	p := l.s.p
	l.r = r
	n := l.hi - l.lo
	l.w = scale(r-l.lo, l.pages, n)
	l.k = r - (l.lo + ceilDiv(l.w*n, l.pages))
	l.first = p.seen(r)
	l.flags.nofollow = p.nofollowS.has(r)
	l.flags.ugc = p.ugcS.has(r)
	l.flags.sponsored = p.sponsoredS.has(r)
	l.flags.form = p.formsS.has(r)
	l.flags.frame = p.framesS.has(r)
	l.flags.image = p.imagesS.has(r)
	l.flags.lost = p.lostS.has(r)
}

func ceilDiv(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// anchor is the anchor text of the current link: empty for an image, else
// the domain's anchor shifted by the link's place on its page, so the links
// of one page never share an anchor (a page holds fewer links than the
// vocabulary has anchors).
func (l *linkRow) anchor() string {
	if l.flags.image {
		return ""
	}
	return l.anchors[(l.anchorBase+l.k)%int64(len(l.anchors))]
}

// pageDraw draws a value of the current referring page.
func (l *linkRow) pageDraw(k key) uint64 { return k.at(l.g<<20 ^ l.w) }

// sourceURL is the URL of the current referring page.
func (l *linkRow) sourceURL() string {
	l.buf = append(l.buf[:0], l.scheme...)
	l.buf = append(l.buf, l.host...)
	l.buf = appendPagePath(l.buf, l.keys.path, l.g, l.w)
	return string(l.buf)
}

func (l *linkRow) cols() map[string]func() value {
	p := l.s.p
	return map[string]func() value{
		"source_url": func() value { return textV(l.sourceURL()) },
		"target_url": func() value { return textV(l.targetURL) },
		"anchor":     func() value { return textV(l.anchor()) },
		"redirect_url": func() value {
			if between(p.key.child("redirect").at(l.r), 0, 99) < 4 {
				return textV(l.redirectURL)
			}
			return textV("")
		},
		"source_title": func() value { return textV(title(l.keys.title, l.g<<20^l.w)) },
		"target_title": func() value {
			d := p.key.child("target-title").at(l.r)
			if between(d, 0, 9) < 7 {
				return textV("")
			}
			return textV(anchorTexts[between(mix(d), 0, int64(len(anchorTexts)-1))])
		},
		"image_url": func() value {
			if !l.flags.image {
				return textV("")
			}
			return textV(l.scheme + l.host + "/img/" + strconv.FormatInt(l.r-l.lo, 10) + "-banner.png")
		},
		"image_alt": func() value {
			if !l.flags.image {
				return textV("")
			}
			return textV(title(p.key.child("alt"), l.r))
		},
		"ip_address":           func() value { return textV(l.ipText) },
		"lang":                 func() value { return textV(l.lang) },
		"source_size":          func() value { return intV(between(l.pageDraw(l.keys.size), 1200, 2_400_000)) },
		"external_links_count": func() value { return intV(between(l.pageDraw(l.keys.ext), 1, 300)) },
		"internal_links_count": func() value { return intV(between(l.pageDraw(l.keys.int), 0, 800)) },
		"response_code":        func() value { return intV(statuses[pick(l.pageDraw(l.keys.status), statusCum)]) },
		"page_score":           func() value { return intV(p.pageScore(l.pagesBefore+l.w, l.dscore)) },
		"domain_score":         func() value { return intV(l.dscore) },
		"first_seen_at":        func() value { return timestampV(l.first) },
		"last_seen_at":         func() value { return timestampV(p.lastSeen(l.r, l.first, l.flags.lost)) },
		"source_domain":        func() value { return textV(l.name) },
		"is_nofollow":          func() value { return boolV(l.flags.nofollow) },
		"is_ugc":               func() value { return boolV(l.flags.ugc) },
		"is_sponsored":         func() value { return boolV(l.flags.sponsored) },
		"is_form":              func() value { return boolV(l.flags.form) },
		"is_frame":             func() value { return boolV(l.flags.frame) },
		"is_image":             func() value { return boolV(l.flags.image) },
		"is_sitewide_main":     func() value { return boolV(l.pages >= sitewidePages && l.r == l.lo) },
		"is_new":               func() value { return boolV(l.first > p.newSince()) },
		"is_lost":              func() value { return boolV(l.flags.lost) },
	}
}

// sitewidePages: a domain linking from at least this many pages links
// sitewide; its oldest link is the main one (is_sitewide_main).
const sitewidePages = 5

// linkCursor walks the backlinks of a scope, rank by rank.
type linkCursor struct {
	l       *linkRow
	d       *domCursor
	r       int64
	pending bool // r is the first row, not yet returned
	done    bool
}

func (c *linkCursor) next() (int64, bool) {
	if c.done {
		return 0, false
	}
	if c.pending {
		c.pending = false
	} else {
		c.r += c.d.dir
		if c.r < c.d.lo || c.r >= c.d.hi {
			if !c.d.next() {
				c.done = true
				return 0, false
			}
			c.r = c.d.lo
			if c.d.dir < 0 {
				c.r = c.d.hi - 1
			}
		}
	}
	c.l.setDomain(c.d.j, c.d.lo, c.d.hi, c.d.i)
	c.l.setRank(c.r)
	return c.r, true
}

// linkRows are the links of s: ids are root ranks.
func linkRows(s *scoped) *rowSet {
	l := &linkRow{rowCtx: newRowCtx(s)}
	return &rowSet{
		n: s.c.backlinks, order: "page_score", cols: l.cols(),
		open: func(k, dir int64) cursor {
			d := s.domains(dir)
			r, ok := d.firstAtRank(k)
			return &linkCursor{l: l, d: d, r: r, pending: ok, done: !ok}
		},
		load: func(r int64) {
			d := s.domains(1)
			d.set(s.p.domainOf(r))
			l.setDomain(d.j, d.lo, d.hi, d.i)
			l.setRank(r)
		},
	}
}

// domainRow is the current row of ref-domains.
type domainRow struct{ *rowCtx }

// lastSeen is the latest last sight of the current domain's backlinks.
func (c *rowCtx) lastSeenOf(lo, hi int64) int64 {
	p := c.s.p
	var last int64
	for r := lo; r < hi; r++ {
		last = max(last, p.lastSeen(r, p.seen(r), p.lostS.has(r)))
	}
	return last
}

func (d *domainRow) cols() map[string]func() value {
	p := d.s.p
	in := func(sp spread) int64 { return sp.before(d.hi) - sp.before(d.lo) }
	return map[string]func() value{
		"domain":          func() value { return textV(d.name) },
		"ip_address":      func() value { return textV(d.ipText) },
		"country":         func() value { return textV(d.country) },
		"backlinks_count": func() value { return intV(d.hi - d.lo) },
		"domain_score":    func() value { return intV(d.dscore) },
		"first_seen_at":   func() value { return timestampV(p.seen(d.lo)) },
		"last_seen_at":    func() value { return timestampV(d.lastSeenOf(d.lo, d.hi)) },
		"is_follow":       func() value { return boolV(in(p.nofollowS) < d.hi-d.lo) },
		"is_new":          func() value { return boolV(p.seen(d.lo) > p.newSince()) },
		"is_lost":         func() value { return boolV(in(p.lostS) == d.hi-d.lo) },
	}
}

// domainCursor walks the referring domains of a scope.
type domainCursor struct {
	row     *domainRow
	d       *domCursor
	pending bool
	done    bool
}

func (c *domainCursor) next() (int64, bool) {
	if c.done {
		return 0, false
	}
	if c.pending {
		c.pending = false
	} else if !c.d.next() {
		c.done = true
		return 0, false
	}
	c.row.setDomain(c.d.j, c.d.lo, c.d.hi, c.d.i)
	return c.d.j, true
}

// domainRows are the referring domains of s: ids are root domains.
func domainRows(s *scoped) *rowSet {
	row := &domainRow{newRowCtx(s)}
	return &rowSet{
		n: s.c.domains, order: "backlinks_count", cols: row.cols(),
		open: func(k, dir int64) cursor {
			d := s.domains(dir)
			ok := d.firstAt(k)
			return &domainCursor{row: row, d: d, pending: ok, done: !ok}
		},
		load: func(j int64) {
			d := s.domains(1)
			d.set(j)
			row.setDomain(d.j, d.lo, d.hi, d.i)
		},
	}
}

// ipRow is the current row of ref-ips.
type ipRow struct{ *rowCtx }

// setIPRow makes IP i current with its ranks and domains.
func (c *rowCtx) setIPRow(i int64) {
	p := c.s.p
	c.setIP(i)
	lo := p.ip.start(i)
	c.ipDomainCount = p.ip.size(i)
	c.ipRankLo = p.dom.start(lo)
	c.ipRankHi = p.dom.start(lo + c.ipDomainCount)
}

func (c *ipRow) cols() map[string]func() value {
	p := c.s.p
	return map[string]func() value{
		"ip_address":      func() value { return textV(c.ipText) },
		"country":         func() value { return textV(c.country) },
		"backlinks_count": func() value { return intV(c.ipRankHi - c.ipRankLo) },
		"domains_count":   func() value { return intV(c.ipDomainCount) },
		"first_seen_at":   func() value { return timestampV(p.seen(c.ipRankLo)) },
		"last_seen_at":    func() value { return timestampV(c.lastSeenOf(c.ipRankLo, c.ipRankHi)) },
	}
}

// ipCursor walks the referring IPs of a scope.
type ipCursor struct {
	s    *scoped
	row  *ipRow
	i    int64
	dir  int64
	done bool
	skip int64 // covered IPs still to pass before the first row
}

func (c *ipCursor) next() (int64, bool) {
	for !c.done {
		i := c.i
		c.i += c.dir
		if i < 0 || i >= c.s.p.ips {
			c.done = true
			break
		}
		if !c.s.covers(i) {
			continue
		}
		if c.skip > 0 {
			c.skip--
			continue
		}
		c.row.setIPRow(i)
		return i, true
	}
	return 0, false
}

// ipRows are the referring IPs of s: ids are root IPs.
func ipRows(s *scoped) *rowSet {
	row := &ipRow{newRowCtx(s)}
	return &rowSet{
		n: s.c.ips, order: "domains_count", cols: row.cols(),
		open: func(k, dir int64) cursor {
			c := &ipCursor{s: s, row: row, dir: dir}
			if dir < 0 {
				c.i = s.p.ips - 1
			}
			if s.member == nil {
				c.i += dir * k
			} else {
				c.skip = k
			}
			return c
		},
		load: row.setIPRow,
	}
}
