package sandbox

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/seoetl/etl/catalog"
)

// target is a url parameter taken apart. The scheme, user info, port and
// fragment never matter: http://example.com and example.com are the same
// target.
type target struct {
	raw   string // exactly as passed
	host  string // lower case, without a trailing dot
	bare  string // host without a leading "www."
	root  string // the registrable domain (approximated, see rootDomain)
	path  string // "" or starting with "/"
	query string // after "?", without it
}

// maxNLabel bounds the N of an n<digits> label: beyond it the label is an
// ordinary one. Some answers (pages, anchors, competitors, matrix, a
// filter's count) walk every backlink of the target, and nothing stops such
// a pass when the client leaves; 20 million keeps each pass to seconds
// (the benchmarks stream 4 million), where 2^40 held a key's concurrency
// slot for hours.
const maxNLabel = 20_000_000

// parseTarget parses the url parameter of a backlink endpoint.
func parseTarget(raw string) (target, error) {
	t := target{raw: raw}
	s := strings.TrimSpace(raw)
	if i := strings.Index(s, "#"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "://"); i > 0 && isScheme(s[:i]) {
		s = s[i+3:]
	} else {
		s = strings.TrimPrefix(s, "//")
	}
	hostEnd := strings.IndexAny(s, "/?")
	if hostEnd < 0 {
		hostEnd = len(s)
	}
	host, tail := s[:hostEnd], s[hostEnd:]
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:]
	}
	if strings.HasPrefix(host, "[") {
		return t, errors.New("IP version 6 targets are not supported by the sandbox")
	}
	if i := strings.LastIndex(host, ":"); i >= 0 {
		if _, err := strconv.ParseUint(host[i+1:], 10, 16); err != nil && host[i+1:] != "" {
			return t, fmt.Errorf("the port of %q is not a number", host)
		}
		host = host[:i]
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if err := checkHost(host); err != nil {
		return t, err
	}
	t.host = host
	t.bare = host
	if rest, ok := strings.CutPrefix(host, "www."); ok && strings.Contains(rest, ".") {
		t.bare = rest
	}
	t.root = rootDomain(t.bare)
	if i := strings.Index(tail, "?"); i >= 0 {
		t.path, t.query = tail[:i], tail[i+1:]
	} else {
		t.path = tail
	}
	return t, nil
}

func isScheme(s string) bool {
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// checkHost accepts host names of letters, digits, '-' and '_' in non-empty
// labels; letters beyond ASCII (internationalised names) are letters too.
func checkHost(host string) error {
	if host == "" {
		return errors.New("it names no host")
	}
	if !utf8.ValidString(host) {
		return errors.New("its host is not valid UTF-8")
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" {
			return fmt.Errorf("its host %q has an empty label", host)
		}
		for _, c := range label {
			ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c >= 0x80
			if !ok {
				return fmt.Errorf("its host %q contains %q", host, c)
			}
		}
	}
	return nil
}

// twoLevelSuffixes are public suffixes of two labels common enough to matter
// in a sandbox. The real registrable domain needs the Public Suffix List
// (golang.org/x/net/publicsuffix), which this module does not require yet.
var twoLevelSuffixes = map[string]bool{
	"co.uk": true, "org.uk": true, "ac.uk": true, "gov.uk": true, "me.uk": true,
	"com.au": true, "net.au": true, "org.au": true, "co.nz": true, "co.jp": true,
	"ne.jp": true, "or.jp": true, "com.br": true, "com.cn": true, "com.mx": true,
	"co.in": true, "co.za": true, "com.tr": true, "com.ar": true, "co.kr": true,
	"com.sg": true, "com.hk": true, "com.tw": true, "co.il": true, "com.ua": true,
}

// rootDomain approximates the registrable domain of host: the last two
// labels, or three under a known two-label public suffix. An IP address is
// its own root. A label n<digits> (not the last) starts a registrable
// domain of its own, the sandbox's sized targets: blog.n5000.example.com
// belongs to n5000.example.com, a root of exactly 5000 backlinks.
func rootDomain(host string) string {
	labels := strings.Split(host, ".")
	if isIPv4(labels) {
		return host
	}
	for k := len(labels) - 2; k >= 0; k-- {
		if _, ok := nLabel(labels[k]); ok {
			return strings.Join(labels[k:], ".")
		}
	}
	if len(labels) <= 2 {
		return host
	}
	n := 2
	if twoLevelSuffixes[strings.Join(labels[len(labels)-2:], ".")] {
		n = 3
	}
	return strings.Join(labels[len(labels)-n:], ".")
}

func isIPv4(labels []string) bool {
	if len(labels) != 4 {
		return false
	}
	for _, l := range labels {
		if _, err := strconv.ParseUint(l, 10, 8); err != nil {
			return false
		}
	}
	return true
}

// nLabel returns N when the first label of host is "n" followed by digits
// (n250000.example), the sandbox's way of asking for a target of exactly N
// backlinks.
func nLabel(host string) (int64, bool) {
	first, _, _ := strings.Cut(host, ".")
	if len(first) < 2 || first[0] != 'n' {
		return 0, false
	}
	for _, c := range first[1:] {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(first[1:], 10, 64)
	if err != nil || n > maxNLabel {
		return 0, false
	}
	return n, true
}

// levelKind says what a level of a target narrows to.
type levelKind int

const (
	levelRoot levelKind = iota // the registrable domain
	levelHost                  // a subdomain
	levelDir                   // a folder
	levelPage                  // one page
)

// level is one step of the narrowing from the root domain to the target of a
// request. A level is the identity when it names nothing narrower than the
// level before it (the subdomain www.example.com of example.com, the folder
// "/", the page that is a folder's index): it then has its parent's data.
type level struct {
	kind     levelKind
	name     string // what hashes: host, host+folder or host+page
	identity bool
}

// levels returns the narrowing chain of t under scope, widest first, and the
// effective url the API reports for it.
func (t target) levels(scope catalog.Scope) ([]level, string) {
	chain := []level{{kind: levelRoot, name: t.root}}
	if scope == catalog.RootDomain {
		return chain, t.root
	}
	chain = append(chain, level{kind: levelHost, name: t.bare, identity: t.bare == t.root})
	switch scope {
	case catalog.Subdomain:
		return chain, t.host
	case catalog.Subfolder:
		folder := t.path
		if !strings.HasSuffix(folder, "/") {
			folder += "/"
		}
		return append(chain, t.dirs(folder)...), t.host + folder
	}
	// PAGE: the folders that contain the page, then the page itself.
	page := t.path
	if page == "" {
		page = "/"
	}
	dir := page[:strings.LastIndex(page, "/")+1]
	chain = append(chain, t.dirs(dir)...)
	name := page
	if t.query != "" {
		name += "?" + t.query
	}
	chain = append(chain, level{kind: levelPage, name: t.bare + name,
		identity: t.query == "" && strings.HasSuffix(page, "/")})
	return chain, t.host + name
}

// dirs returns one level per folder of folder ("/a/b/" gives "/a/" and
// "/a/b/"); folder ends with "/".
func (t target) dirs(folder string) []level {
	var out []level
	for i := 1; i < len(folder); i++ {
		if folder[i] == '/' {
			out = append(out, level{kind: levelDir, name: t.bare + folder[:i+1]})
		}
	}
	return out
}
