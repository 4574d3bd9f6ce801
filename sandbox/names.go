package sandbox

import (
	"math/bits"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file invents the words of the sandbox: names of referring domains,
// URLs and titles of their pages, anchors, IP addresses, countries and
// languages. Everything is a pure function of the seed and an index, and
// deliberately awkward where real data are: Unicode, ';', ',', quotes,
// backslashes and line breaks in text; empty values; IDN domains.

// The global domain pool. Every referring domain of every target of a seed
// is a position g of one pool, so targets share referring domains (matrix,
// competitors), and what belongs to a domain (its name, its domain score,
// where its pages live) is a function of g alone. Low positions are the
// popular, authoritative domains that link to every site.

// poolScore is the domain score of pool position g: 100 at the top of the
// pool, about 4.3 points less for each doubling of g. It never grows with g,
// so a target's domains, drawn from the pool in order, come in domain score
// order.
func poolScore(g int64) int64 {
	x := uint64(g) + 1
	l := bits.Len64(x) - 1
	// log2(x) in 1/256: the integer part and 8 bits of mantissa.
	frac := (x << (63 - l)) >> 55 & 0xff
	log := int64(l)<<8 | int64(frac)
	return clamp(100-log*43/2560, 0, 100)
}

// Words of domain names. None holds '-', '.' or a digit, and no word is
// also a tail, so a name parses back into its parts and distinct parts give
// distinct names.
var (
	nameWords = []string{
		"alpha", "atlas", "bright", "blue", "cedar", "coral", "delta", "echo", "ember", "falcon",
		"forest", "golden", "granite", "harbor", "hazel", "iron", "ivory", "jade", "juniper", "kettle",
		"lumen", "maple", "marble", "meadow", "nimbus", "north", "oak", "orbit", "pine", "pixel",
		"quartz", "quiet", "raven", "river", "sage", "silver", "summit", "tango", "tidal", "umber",
		"urban", "velvet", "vista", "willow", "wild", "yonder", "zephyr", "bücher", "café", "müller",
		"zürich", "españa", "niño", "straße", "köln", "tōkyō", "пример", "δοκιμή", "日本", "wiki",
		"forum", "news", "blog", "review", "tech", "shop", "travel", "food", "garden", "sport",
	}
	nameTails = []string{
		"hub", "lab", "press", "times", "post", "zone", "base", "world", "list", "point",
		"works", "net", "media", "club", "spot", "corner", "journal", "digest", "hq", "insider",
		"online", "central", "direct", "group", "magazin", "blogg", "tienda", "ya", "portal",
	}
	tlds = []string{
		"com", "net", "org", "de", "fr", "co.uk", "io", "info", "es", "it", "nl", "ru", "jp", "com.br",
		"pl", "blog", "ch", "at", "se", "cz", "in", "com.au", "ca", "biz", "xyz", "online", "me", "tv",
		"no", "рф", "us", "eu",
	}
	// nameSpace is the number of names made of words alone; pool positions
	// past it add a number.
	nameSpace = uint64(len(nameWords) * (len(nameWords) + 1) * (len(nameTails) + 1) * len(tlds))
	// nameMult permutes the name space (coprime with it).
	nameMult = coprime(1_000_003, nameSpace)
)

// poolName is the name of pool position g: a word, often a second word or
// a tail, a number for positions past every combination, and a TLD.
// Distinct positions have distinct names.
func poolName(seed int64, g int64) string {
	x := uint64(g) % nameSpace
	rest := uint64(g) / nameSpace
	// An affine bijection of the name space, so neighbours in the pool do
	// not look alike and each seed names them differently.
	x = (mulMod(x, nameMult, nameSpace) + uint64(seed)%nameSpace) % nameSpace
	w1 := x % uint64(len(nameWords))
	x /= uint64(len(nameWords))
	w2 := x % uint64(len(nameWords)+1)
	x /= uint64(len(nameWords) + 1)
	tail := x % uint64(len(nameTails)+1)
	x /= uint64(len(nameTails) + 1)
	t := x
	var b strings.Builder
	b.WriteString(nameWords[w1])
	if w2 > 0 {
		b.WriteByte('-')
		b.WriteString(nameWords[w2-1])
	}
	if tail > 0 {
		b.WriteByte('-')
		b.WriteString(nameTails[tail-1])
	}
	if rest > 0 {
		b.WriteString(strconv.FormatUint(rest, 10))
	}
	b.WriteByte('.')
	b.WriteString(tlds[t])
	return b.String()
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// coprime returns the first number from m up that is coprime with n.
func coprime(m, n uint64) uint64 {
	for gcd(m, n) != 1 {
		m++
	}
	return m
}

// mulMod is a*b mod m without overflow.
func mulMod(a, b, m uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	_, r := bits.Div64(hi%m, lo, m)
	return r
}

// poolHost is the host a pool domain serves its pages on: the bare name,
// www, or a subdomain.
func poolHost(seed int64, g int64, name string) string {
	switch between(newKey(seed, "pool-host").at(g), 0, 9) {
	case 0, 1, 2, 3:
		return "www." + name
	case 4:
		return "blog." + name
	case 5:
		return "forum." + name
	default:
		return name
	}
}

// Path templates of referring pages; {n} is the page number within its
// domain, which makes the path unique within the domain. Every template
// starts with a literal no other template's output can start with, and
// the number is followed by a non-digit or ends the path.
var pagePaths = []string{
	"/blog/{n}/ideas-for-spring",
	"/2024/05/{n}-links-worth-reading.html",
	"/forum/thread.php?t={n}&page=2",
	"/wiki/Special:Page_{n}",
	"/статьи/{n}-обзор",
	"/tag/seo;links/page/{n}",
	"/search?q=tools,reviews&p={n}",
	"/p/{n}",
	"/%E6%97%A5%E6%9C%AC/{n}.html",
	"/reviews/{n}/it's-\"great\"",
	"/news/{n}/",
}

// appendPagePath appends the path of page number n (within its domain) of
// pool domain g, drawing the template from k; page 0 is the home page.
func appendPagePath(dst []byte, k key, g, n int64) []byte {
	if n == 0 {
		return append(dst, '/')
	}
	t := pagePaths[between(k.at(g*7919+n), 0, int64(len(pagePaths)-1))]
	before, after, _ := strings.Cut(t, "{n}")
	dst = append(dst, before...)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, after...)
}

// Titles of pages (source titles and the titles of a target's pages).
var titles = []string{
	"Home",
	"The 10 best tools; tried & tested",
	`Review: "Great value", says everyone`,
	"It's a deal — don't miss it",
	"Line one\nline two of a title",
	"Café, croissants, and more",
	"東京のおすすめ情報",
	"Новости и обзоры",
	"Ελληνικά νέα",
	"دليل شامل",
	"",
	"Tabs\tand \\ backslashes",
	"100% organic; 0% nonsense",
	"Résumé tips, part 2",
	"🔥 Hot deals 🔥",
	"Links & resources",
	"Forum › Thread › Page 2",
	"Ñandú, pingüino y cigüeña",
}

// title is a title drawn for something numbered i under key k; numbered
// variants keep titles apart.
func title(k key, i int64) string {
	t := titles[between(k.at(i), 0, int64(len(titles)-1))]
	if t == "" || t == "Home" {
		return t
	}
	if between(k.at(i+1<<40), 0, 2) == 0 {
		return t + " #" + strconv.FormatInt(i%1000, 10)
	}
	return t
}

// anchorTexts are the anchor texts every target's links draw from, besides
// the ones made of the target's name (brandAnchors).
var anchorTexts = []string{
	"click here",
	"here",
	"read more",
	"website",
	"this article",
	"source",
	"Read more\nabout it",
	"公式サイト",
	"Официальный сайт",
	"página oficial — ñandú",
	"🔥 deals 🔥",
	"موقع رسمي",
	"best seo tools, 2024",
	"Ελληνικά; δοκιμή",
	"it's",
	`C:\path\with\backslashes`,
	"50% off",
	`say "hello"`,
	"a;b;c",
	" padded ",
	"Straße & Söhne",
	"link",
}

// brandAnchors are anchors made of the target's root domain.
func brandAnchors(root string) []string {
	brand, _, _ := strings.Cut(root, ".")
	if r, size := utf8.DecodeRuneInString(brand); size > 0 {
		brand = string(unicode.ToUpper(r)) + brand[size:] // whole runes: пример -> Пример
	}
	return []string{
		brand,
		root,
		"https://" + root + "/",
		"www." + root,
		`"` + brand + `" review`,
		brand + "'s pricing; plans, \"tiers\" & more",
		"Source: " + brand + ", 2024",
	}
}

// Countries of referring IPs, by weight (ISO 3166-1 alpha-2).
var (
	countries       = []string{"US", "DE", "GB", "FR", "NL", "RU", "JP", "CN", "BR", "IN", "CA", "PL", "ES", "IT", "SE", "UA", "SG", "AU", "KR", "TR", "CZ", "CH", "FI", "IE", "ZA"}
	countryWeights  = []int64{30, 10, 6, 6, 6, 5, 4, 4, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1}
	countryCumTotal = cumulate(countryWeights)
	// Languages of referring pages: ISO 639-1 where a code exists, ISO
	// 639-2 (three letters) for languages without one, and "" for pages
	// whose language is unknown.
	languages       = []string{"en", "de", "fr", "es", "ru", "ja", "pt", "it", "nl", "pl", "zh", "tr", "ko", "ar", "sv", "uk", "fil", "haw", "gsw", "yue", "ceb", "nds", "scn", "ast", ""}
	languageWeights = []int64{40, 8, 6, 6, 5, 4, 4, 3, 3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2}
	languageCum     = cumulate(languageWeights)
	// HTTP statuses of referring pages by weight.
	statuses      = []int64{200, 301, 302, 404, 410, 403, 500, 503}
	statusWeights = []int64{88, 3, 2, 3, 1, 1, 1, 1}
	statusCum     = cumulate(statusWeights)
)

func cumulate(w []int64) []int64 {
	out := make([]int64, len(w))
	var sum int64
	for i, x := range w {
		sum += x
		out[i] = sum
	}
	return out
}

// pick chooses an index by weight (cum as made by cumulate).
func pick(draw uint64, cum []int64) int {
	x := between(draw, 0, cum[len(cum)-1]-1)
	i, j := 0, len(cum)
	for i < j {
		h := (i + j) / 2
		if cum[h] > x {
			j = h
		} else {
			i = h + 1
		}
	}
	return i
}

// First octets of public IPv4 space the sandbox uses (no private,
// loopback, multicast or reserved ranges).
var firstOctets = func() []byte {
	var out []byte
	for o := 5; o <= 223; o++ {
		switch {
		case o == 10 || o == 100 || o == 127 || o == 169 || o == 172 || o == 192 || o == 198 || o == 203:
			continue
		}
		out = append(out, byte(o))
	}
	return out
}()

var (
	subnetSpace = uint64(len(firstOctets)) << 16
	subnetMult  = coprime(0x9E3779B1, subnetSpace)
)

// subnetPrefix is the first three octets of class C subnet c of a target
// with key k. Distinct subnets of one target have distinct prefixes (an
// affine bijection modulo the number of prefixes).
func subnetPrefix(k key, c int64) (byte, byte, byte) {
	v := (mulMod(uint64(c)%subnetSpace, subnetMult, subnetSpace) + k.draw("subnet")%subnetSpace) % subnetSpace
	return firstOctets[v>>16], byte(v >> 8), byte(v)
}

// appendIP appends the dotted address of IP i (in subnet c, whose first IP
// is first) of a target with key k.
func appendIP(dst []byte, k key, c, i, first int64) []byte {
	a, b, cc := subnetPrefix(k, c)
	host := 1 + (i-first+int64(k.child("host").at(c)%254))%254
	dst = strconv.AppendUint(dst, uint64(a), 10)
	dst = append(dst, '.')
	dst = strconv.AppendUint(dst, uint64(b), 10)
	dst = append(dst, '.')
	dst = strconv.AppendUint(dst, uint64(cc), 10)
	dst = append(dst, '.')
	return strconv.AppendInt(dst, host, 10)
}
