package sandbox

import (
	"strconv"
	"strings"
	"sync"

	"github.com/seoetl/etl/catalog"
)

// site is what a root domain is made of: its hosts (the root itself and a
// few subdomains) and its pages that have backlinks, the leaves of the
// target tree. Every referring IP of the root links to exactly one page (all
// the domains an IP hosts, and all their backlinks, point there), so a
// narrower scope is a set of pages, hence of whole IPs and whole domains: a
// narrower scope's rows of links, ref-domains, ref-ips and pages are rows of
// the wider scope, unchanged.
//
// The pages are a finite, invented list; a subfolder or page the list does
// not have exists but has no backlinks, as on the real API.
type site struct {
	key    key
	seed   int64
	hosts  []string // bare host names; hosts[0] is the root itself
	scheme string   // of the target URLs
	www    bool     // the root's pages are served on www.<root>
	leaves []leaf
	urls   []string // of the leaves
	olds   []string // the old URL of each leaf, which redirects to it
	cum    []int64  // cumulative weights of the leaves: IP i links to pick(draw(i), cum)
}

// leaf is a page of the site that has backlinks.
type leaf struct {
	host int
	path string // with the query, if any
}

// maxLeaves bounds the pages of a site, so that the pages endpoint (and a
// scope's set of pages) is a bounded table whatever the target's size.
const maxLeaves = 5000

// subdomainLabels are the subdomains a site may have besides its root.
var subdomainLabels = []string{"blog", "shop", "news", "docs", "m", "support", "forum", "app", "help", "de", "fr", "es", "jp", "community", "status"}

// Fixed pages a site often has, then numbered page templates; {n} is the
// page's number, {s} a word.
var (
	commonPages = []string{
		"/pricing", "/about", "/contact", "/blog/", "/products/", "/docs/", "/faq", "/careers",
		"/über-uns", "/café/menú-del-día", "/en/", "/de/preise", "/search?q=a;b", "/login",
		"/terms", "/privacy", "/%C3%BCber/team",
	}
	pageTemplates = []string{
		"/blog/{s}-{n}", "/products/{s}-{n}", "/docs/{s}/{n}-getting-started", "/category/{s}/?page={n}",
		"/news/2024/{n}.html", "/p/{n}", "/c/{s}?id={n}&sort=price,asc", "/blog/{s}/{n}/it's-here",
		"/wiki/{s}_({n})", "/tag/{s};{n}",
	}
	pageWords = []string{"shoes", "tools", "guide", "coffee", "straße", "niño", "seo", "links", "review", "tips", "日本", "café"}
)

// siteCache keeps recently built sites: building one is a few thousand
// strings, and every request about the target needs it.
var siteCache = struct {
	sync.Mutex
	m map[siteCacheKey]*site
}{m: map[siteCacheKey]*site{}}

type siteCacheKey struct {
	k   key
	ips int64
}

const siteCacheSize = 256

// siteOf returns the site of root domain name with profile p.
func siteOf(seed int64, p *profile, name string) *site {
	ck := siteCacheKey{p.key, p.ips}
	siteCache.Lock()
	s, ok := siteCache.m[ck]
	siteCache.Unlock()
	if ok {
		return s
	}
	s = buildSite(seed, p, name)
	siteCache.Lock()
	if len(siteCache.m) >= siteCacheSize {
		clear(siteCache.m)
	}
	siteCache.m[ck] = s
	siteCache.Unlock()
	return s
}

func buildSite(seed int64, p *profile, name string) *site {
	k := p.key.child("site")
	s := &site{key: k, seed: seed, hosts: []string{name}, scheme: "https"}
	if between(k.draw("scheme"), 0, 9) == 0 {
		s.scheme = "http"
	}
	s.www = between(k.draw("www"), 0, 1) == 0
	_, isN := nLabel(name)
	labels := strings.Split(name, ".")
	if !isN && !isIPv4(labels) && len(labels) > 1 {
		for i := range between(k.draw("subdomains"), 0, 3) {
			l := subdomainLabels[between(k.at(i), 0, int64(len(subdomainLabels)-1))]
			h := l + "." + name
			if !contains(s.hosts, h) {
				s.hosts = append(s.hosts, h)
			}
		}
	}

	n := clamp(p.ips/3+1, 1, maxLeaves)
	seen := map[string]bool{}
	add := func(host int, path string) bool {
		id := strconv.Itoa(host) + " " + path
		if seen[id] {
			return false
		}
		seen[id] = true
		s.leaves = append(s.leaves, leaf{host: host, path: path})
		return true
	}
	for h := range s.hosts {
		if int64(len(s.leaves)) < n {
			add(h, "/")
		}
	}
	pk := k.child("pages")
	for i := int64(0); int64(len(s.leaves)) < n; i++ {
		host := 0
		if len(s.hosts) > 1 && between(pk.at(3*i), 0, 3) == 0 {
			host = int(between(pk.at(3*i+1), 1, int64(len(s.hosts)-1)))
		}
		d := pk.at(3*i + 2)
		var path string
		if i < int64(len(commonPages)) && between(d, 0, 2) > 0 {
			path = commonPages[i]
		} else {
			t := pageTemplates[between(d, 0, int64(len(pageTemplates)-1))]
			w := pageWords[between(mix(d), 0, int64(len(pageWords)-1))]
			path = strings.Replace(strings.Replace(t, "{s}", w, 1), "{n}", strconv.FormatInt(i, 10), 1)
		}
		add(host, path)
	}

	// The home page draws a third of the IPs; the other pages follow Zipf.
	w := make([]int64, len(s.leaves))
	var rest int64
	for i := 1; i < len(w); i++ {
		w[i] = (1 << 20) / int64(i+1)
		rest += w[i]
	}
	w[0] = max(1, rest/2)
	s.cum = cumulate(w)
	for l, lf := range s.leaves {
		host := s.hosts[lf.host]
		if lf.host == 0 && s.www {
			host = "www." + host
		}
		s.urls = append(s.urls, s.scheme+"://"+host+lf.path)
		s.olds = append(s.olds, "http://"+s.hosts[lf.host]+"/old"+s.leaves[l].path)
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// leafOf is the page referring IP i links to.
func (s *site) leafOf(i int64) int {
	if len(s.leaves) == 1 {
		return 0
	}
	return pick(s.key.child("leaf").at(i), s.cum)
}

// url is the URL of page l.
func (s *site) url(l int) string { return s.urls[l] }

// pageInfo is what the pages endpoint says about page l besides counts.
func (s *site) pageInfo(l int) (name string, status, external, internal int64) {
	k := s.key.child("page-info")
	name = title(k, int64(l))
	status = 200
	if l > 0 {
		status = statuses[pick(k.child("status").at(int64(l)), statusCum)]
	}
	external = between(k.child("ext").at(int64(l)), 0, 400)
	internal = between(k.child("int").at(int64(l)), 5, 900)
	return name, status, external, internal
}

// node returns the pages of the site that a target at scope covers: nil
// for all of them, else one flag per page. A host, folder or page the site
// does not have covers none.
func (s *site) node(t target, scope catalog.Scope) []bool {
	if scope == catalog.RootDomain {
		return nil
	}
	host := -1
	for h, name := range s.hosts {
		if name == t.bare {
			host = h
		}
	}
	member := make([]bool, len(s.leaves))
	if host < 0 {
		return member
	}
	var match func(path string) bool
	switch scope {
	case catalog.Subdomain:
		match = func(string) bool { return true }
	case catalog.Subfolder:
		folder := t.path
		if !strings.HasSuffix(folder, "/") {
			folder += "/"
		}
		match = func(path string) bool { return strings.HasPrefix(path, folder) }
	default:
		page := t.path
		if page == "" {
			page = "/"
		}
		if t.query != "" {
			page += "?" + t.query
		}
		match = func(path string) bool { return path == page }
	}
	all := true
	for l, lf := range s.leaves {
		member[l] = lf.host == host && match(lf.path)
		all = all && member[l]
	}
	if all {
		return nil
	}
	return member
}
