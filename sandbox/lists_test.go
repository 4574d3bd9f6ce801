package sandbox_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
)

// row is a JSON row decoded with json.Number for numbers.
type row = map[string]any

// list fetches p from endpoint as JSON and returns meta and the rows.
func list(t *testing.T, srv *httptest.Server, endpoint string, p url.Values) (map[string]any, []row) {
	t.Helper()
	r := get(t, srv, endpoint, p)
	require.Equal(t, http.StatusOK, r.status, "%s?%s: %s", endpoint, p.Encode(), r.body)
	var env struct {
		Meta map[string]any `json:"meta"`
		Data []row          `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&env))
	require.NotNil(t, env.Data, "data is an array, never null")
	return env.Meta, env.Data
}

// listAll fetches every row (the largest page: above any total here).
func listAll(t *testing.T, srv *httptest.Server, endpoint string, p url.Values) (map[string]any, []row) {
	t.Helper()
	if ep, _ := catalog.Lookup(endpoint); hasParam(ep, "limit") {
		p = withParams(p, "limit", fmt.Sprint(sandbox.DefaultMaxLimit))
	}
	meta, rows := list(t, srv, endpoint, p)
	if meta["total"] != nil {
		require.EqualValues(t, len(rows), num(meta["total"]), "%s: a whole listing holds meta.total rows", endpoint)
	}
	return meta, rows
}

func hasParam(ep *catalog.Endpoint, name string) bool {
	_, ok := ep.Param(name)
	return ok
}

// num reads a JSON number (json.Number) as an int64.
func num(v any) int64 {
	n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("not an integer: %v", v))
	}
	return n
}

func str(v any) string { return fmt.Sprint(v) }

// render writes a row as one string, fields sorted, to compare rows.
func render(r row) string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%v\x00", k, r[k])
	}
	return b.String()
}

func renderAll(rows []row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = render(r)
	}
	return out
}

// scopeTarget is a target at a scope.
type scopeTarget struct{ url, scope string }

func (s scopeTarget) params(kv ...string) url.Values {
	return withParams(params("url", s.url, "scope", s.scope), kv...)
}

// narrowing returns a chain of scopes of root, widest first, that cover
// some backlinks: found from the root's indexed pages (the first page on a
// subdomain if there is one, else the first page in a folder).
func narrowing(t *testing.T, srv *httptest.Server, root string) []scopeTarget {
	t.Helper()
	_, pages := listAll(t, srv, "pages", params("url", root, "scope", "ROOT_DOMAIN", "order_by", "source_url", "direction", "ASC"))
	require.NotEmpty(t, pages, root)
	pick := str(pages[0]["source_url"])
	for _, p := range pages {
		u := str(p["source_url"])
		if strings.Count(u, "/") > 3 && !strings.HasSuffix(u, "/") {
			pick = u
			break
		}
	}
	// The folder of the page as written (url.Parse would decode %XX).
	_, rest, _ := strings.Cut(pick, "://")
	host, path, _ := strings.Cut(rest, "/")
	path, _, _ = strings.Cut("/"+path, "?")
	folder := path[:strings.LastIndex(path, "/")+1]
	return []scopeTarget{
		{root, "ROOT_DOMAIN"},
		{pick, "SUBDOMAIN"},
		{host + folder, "SUBFOLDER"},
		{pick, "PAGE"},
	}
}

// Every list endpoint's total is what the overview counts, at every scope,
// and the aggregates add up to the links.
func TestListTotalsMatchTheOverview(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	for _, root := range []string{"n240.example", "example.com", "n3000.example"} {
		for _, st := range narrowing(t, srv, root) {
			t.Run(st.url+"@"+st.scope, func(t *testing.T) {
				t.Parallel()
				o := overviewOf(t, srv, st.url, st.scope)
				total := func(endpoint string) int64 {
					meta, _ := list(t, srv, endpoint, st.params("limit", "1"))
					return num(meta["total"])
				}
				require.Equal(t, o["backlinks_count"], total("links"))
				require.Equal(t, o["domains_count"], total("ref-domains"))
				require.Equal(t, o["ips_count"], total("ref-ips"))
				sum := func(endpoint, field string) int64 {
					_, rows := listAll(t, srv, endpoint, st.params())
					var n int64
					for _, r := range rows {
						n += num(r[field])
					}
					return n
				}
				require.Equal(t, o["backlinks_count"], sum("ref-domains", "backlinks_count"))
				require.Equal(t, o["backlinks_count"], sum("ref-ips", "backlinks_count"))
				require.Equal(t, o["domains_count"], sum("ref-ips", "domains_count"))
				require.Equal(t, o["backlinks_count"], sum("pages", "backlinks_count"), "indexed pages' backlinks add up to the target's")
				require.Equal(t, o["domains_count"], sum("pages", "domains_count"), "each referring domain links to one page")
				require.Equal(t, o["backlinks_count"], sum("anchors", "backlinks_count"))
				require.Equal(t, o["domains_count"], sum("score-profile", "domains_count"))
			})
		}
	}
}

// The aggregates are exactly what counting the links gives.
func TestAggregatesCountTheLinks(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	targets := append(narrowing(t, srv, "n240.example"), narrowing(t, srv, "example.com")...)
	for _, st := range targets {
		t.Run(st.url+"@"+st.scope, func(t *testing.T) {
			t.Parallel()
			checkAggregates(t, srv, st)
		})
	}
}

type agg struct {
	backlinks   int64
	domains     map[string]bool
	first, last string
	follow      bool
	lost        int64
}

func (a *agg) add(l row) {
	a.backlinks++
	if a.domains == nil {
		a.domains = map[string]bool{}
	}
	a.domains[str(l["source_domain"])] = true
	if f := str(l["first_seen_at"]); a.first == "" || f < a.first {
		a.first = f
	}
	a.last = max(a.last, str(l["last_seen_at"]))
	a.follow = a.follow || l["is_nofollow"] == false
	if l["is_lost"] == true {
		a.lost++
	}
}

func checkAggregates(t *testing.T, srv *httptest.Server, st scopeTarget) {
	o := overviewOf(t, srv, st.url, st.scope)
	_, links := listAll(t, srv, "links", st.params())
	require.Len(t, links, int(o["backlinks_count"]))

	byDomain, byIP, byAnchor, byPage := map[string]*agg{}, map[string]*agg{}, map[string]*agg{}, map[string]*agg{}
	sources := map[string]bool{}
	flags := map[string]int64{}
	add := func(m map[string]*agg, k string, l row) {
		if m[k] == nil {
			m[k] = &agg{}
		}
		m[k].add(l)
	}
	for _, l := range links {
		add(byDomain, str(l["source_domain"]), l)
		add(byIP, str(l["ip_address"]), l)
		add(byAnchor, str(l["anchor"]), l)
		add(byPage, str(l["target_url"]), l)
		sources[str(l["source_url"])] = true
		for _, f := range []string{"is_nofollow", "is_sponsored", "is_ugc", "is_frame", "is_form", "is_image", "is_lost", "is_new"} {
			if l[f] == true {
				flags[f]++
			}
		}
	}
	require.Equal(t, map[string]int64{
		"is_nofollow": o["nofollows_count"], "is_sponsored": o["sponsored_count"], "is_ugc": o["ugc_count"],
		"is_frame": o["frames_count"], "is_form": o["forms_count"], "is_image": o["images_count"],
		"is_lost": o["lost_count"], "is_new": o["new_count"],
	}, withoutZeros(flags, "is_nofollow", "is_sponsored", "is_ugc", "is_frame", "is_form", "is_image", "is_lost", "is_new"),
		"the overview's flag counts are the links' flags")
	require.EqualValues(t, o["urls_count"], len(sources), "urls_count counts the referring pages")
	require.EqualValues(t, o["domains_count"], len(byDomain))
	require.EqualValues(t, o["ips_count"], len(byIP))

	_, domains := listAll(t, srv, "ref-domains", st.params())
	require.Len(t, domains, len(byDomain))
	scores := map[int64]int64{}
	for _, d := range domains {
		a := byDomain[str(d["domain"])]
		require.NotNil(t, a, "ref-domain %v has links", d["domain"])
		require.Equal(t, a.backlinks, num(d["backlinks_count"]), "%v", d["domain"])
		require.Equal(t, a.first, d["first_seen_at"], "%v", d["domain"])
		require.Equal(t, a.last, d["last_seen_at"], "%v", d["domain"])
		require.Equal(t, a.follow, d["is_follow"], "%v: follow when a link is", d["domain"])
		require.Equal(t, a.lost == a.backlinks, d["is_lost"], "%v: lost when every link is", d["domain"])
		scores[num(d["domain_score"])]++
	}
	_, ips := listAll(t, srv, "ref-ips", st.params())
	require.Len(t, ips, len(byIP))
	for _, ip := range ips {
		a := byIP[str(ip["ip_address"])]
		require.NotNil(t, a, "ref-ip %v has links", ip["ip_address"])
		require.Equal(t, a.backlinks, num(ip["backlinks_count"]))
		require.EqualValues(t, len(a.domains), num(ip["domains_count"]))
		require.Equal(t, a.first, ip["first_seen_at"])
		require.Equal(t, a.last, ip["last_seen_at"])
	}
	_, anchors := listAll(t, srv, "anchors", st.params())
	require.Len(t, anchors, len(byAnchor))
	for _, an := range anchors {
		a := byAnchor[str(an["anchor"])]
		require.NotNil(t, a, "anchor %q has links", an["anchor"])
		require.Equal(t, a.backlinks, num(an["backlinks_count"]))
		require.EqualValues(t, len(a.domains), num(an["domains_count"]))
		require.Equal(t, a.first, an["first_seen_at"])
		require.Equal(t, a.last, an["last_seen_at"])
	}
	_, pages := listAll(t, srv, "pages", st.params())
	require.Len(t, pages, len(byPage))
	for _, p := range pages {
		a := byPage[str(p["source_url"])]
		require.NotNil(t, a, "page %v has links", p["source_url"])
		require.Equal(t, a.backlinks, num(p["backlinks_count"]))
		require.EqualValues(t, len(a.domains), num(p["domains_count"]))
		require.Equal(t, a.first, p["first_seen_at"])
		require.Equal(t, a.last, p["last_seen_at"])
	}
	_, profile := listAll(t, srv, "score-profile", st.params())
	require.LessOrEqual(t, len(profile), catalog.MaxScoreProfileRows)
	got := map[int64]int64{}
	for i, p := range profile {
		got[num(p["domain_score"])] = num(p["domains_count"])
		require.Positive(t, num(p["domains_count"]), "scores without domains are left out")
		if i > 0 {
			require.Less(t, num(p["domain_score"]), num(profile[i-1]["domain_score"]), "highest score first")
		}
	}
	require.Equal(t, scores, got, "the score profile counts the referring domains by score")
}

// withoutZeros returns m with the given keys present (zero when absent).
func withoutZeros(m map[string]int64, keys ...string) map[string]int64 {
	out := map[string]int64{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

// Rows of a narrower scope are rows of the wider one: links, ref-domains,
// ref-ips and pages unchanged (a scope covers whole referring IPs), anchors
// by text with counts no larger.
func TestScopesNarrowRowsAreSubsets(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	for _, root := range []string{"example.com", "n240.example"} {
		chain := narrowing(t, srv, root)
		for _, endpoint := range []string{"links", "ref-domains", "ref-ips", "pages", "anchors"} {
			var wider []row
			for i, st := range chain {
				_, rows := listAll(t, srv, endpoint, st.params())
				if i > 0 {
					require.LessOrEqual(t, len(rows), len(wider), "%s %s: a narrower scope has no more rows", endpoint, st.scope)
					if endpoint == "anchors" {
						counts := map[string]int64{}
						for _, r := range wider {
							counts[str(r["anchor"])] = num(r["backlinks_count"])
						}
						for _, r := range rows {
							require.LessOrEqual(t, num(r["backlinks_count"]), counts[str(r["anchor"])], "anchor %q", r["anchor"])
						}
					} else {
						require.Subset(t, renderAll(wider), renderAll(rows), "%s at %s within %s", endpoint, st.scope, chain[i-1].scope)
					}
				}
				require.NotEmpty(t, rows, "%s %s %s", endpoint, st.url, st.scope)
				wider = rows
			}
		}
	}
}

// Pages of every size cover meta.total with no gap and no overlap, in the
// default order, its reverse, orders the sandbox sorts, and filtered.
func TestPagingCoversTheTotal(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	base := params("url", "n1000.example", "scope", "ROOT_DOMAIN")
	home := []string{"url", "https://n1000.example/", "scope", "PAGE"}
	for _, tc := range []struct {
		endpoint string
		extra    []string
	}{
		{"links", append([]string{"direction", "ASC"}, home...)},
		{"ref-ips", home},
		{"ref-domains", append([]string{"direction", "ASC"}, home...)},
		{"matrix", []string{"urls", "https://n1000.example/,n300.example", "scope", "PAGE", "direction", "ASC"}},
		{"links", nil},
		{"links", []string{"direction", "ASC"}},
		{"links", []string{"order_by", "first_seen_at", "direction", "ASC"}},
		{"links", []string{"order_by", "anchor"}},
		{"links", []string{"filter", "is_nofollow = false AND domain_score > 10"}},
		{"links", []string{"order_by", "source_size", "filter", "anchor LIKE '%e%' OR is_image = true"}},
		{"ref-domains", []string{"direction", "ASC", "filter", "backlinks_count >= 2"}},
		{"ref-domains", []string{"order_by", "domain"}},
		{"ref-ips", []string{"order_by", "last_seen_at"}},
		{"pages", []string{"filter", "backlinks_count > 1"}},
		{"anchors", []string{"order_by", "anchor", "direction", "ASC"}},
	} {
		t.Run(tc.endpoint+strings.Join(tc.extra, " "), func(t *testing.T) {
			t.Parallel()
			p := withParams(base, tc.extra...)
			if tc.endpoint == "matrix" {
				p.Del("url")
			}
			meta, whole := listAll(t, srv, tc.endpoint, p)
			total := num(meta["total"])
			require.Positive(t, total)
			for _, limit := range []int64{1 + total/3, 211} {
				var paged []row
				for offset := int64(0); offset < total+limit; offset += limit {
					meta, rows := list(t, srv, tc.endpoint, withParams(p, "limit", fmt.Sprint(limit), "offset", fmt.Sprint(offset)))
					require.Equal(t, total, num(meta["total"]), "meta.total does not depend on the page")
					require.EqualValues(t, min(limit, max(0, total-offset)), len(rows), "offset %d", offset)
					if tc.endpoint != "matrix" { // matrix echoes urls, scope and total (spec 2.12)
						require.Equal(t, limit, num(meta["limit"]))
						require.Equal(t, offset, num(meta["offset"]))
					}
					paged = append(paged, rows...)
				}
				require.Equal(t, renderAll(whole), renderAll(paged), "limit %d", limit)
			}
			seen := map[string]bool{}
			for _, r := range whole {
				seen[render(r)] = true
			}
			require.Len(t, seen, len(whole), "no row twice")
		})
	}
}

// Every sortable field of every list orders correctly both ways, ASC is
// exactly DESC reversed (ties too), and the default order is the default
// field descending.
func TestOrdering(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	for _, ep := range catalog.All() {
		if !hasParam(ep, "order_by") {
			continue
		}
		base := params("url", "n240.example", "scope", "ROOT_DOMAIN")
		switch ep.Name {
		case "competitors":
			base = params("domain", "n3000.example")
		case "matrix":
			base = params("urls", "n240.example,n77.example,n300.example", "scope", "ROOT_DOMAIN")
		}
		t.Run(ep.Name, func(t *testing.T) {
			t.Parallel()
			meta, dflt := listAll(t, srv, ep.Name, base)
			require.NotEmpty(t, dflt)
			if ep.DefaultOrder != "" {
				require.Equal(t, ep.DefaultOrder, meta["order_by"])
				require.Equal(t, "DESC", meta["direction"])
				_, explicit := listAll(t, srv, ep.Name, withParams(base, "order_by", ep.DefaultOrder, "direction", "DESC"))
				require.Equal(t, renderAll(dflt), renderAll(explicit), "the default order is %s DESC", ep.DefaultOrder)
			}
			for _, f := range ep.Fields {
				if f.Kind.IsList() {
					continue
				}
				_, desc := listAll(t, srv, ep.Name, withParams(base, "order_by", f.Name))
				_, asc := listAll(t, srv, ep.Name, withParams(base, "order_by", f.Name, "direction", "ASC"))
				for i := 1; i < len(desc); i++ {
					require.GreaterOrEqual(t, compareCells(f.Kind, desc[i-1][f.Name], desc[i][f.Name]), 0, "%s DESC row %d", f.Name, i)
				}
				slices.Reverse(asc)
				require.Equal(t, renderAll(desc), renderAll(asc), "%s: ASC is DESC reversed, ties included", f.Name)
			}
		})
	}
}

// compareCells orders two JSON values of kind k.
func compareCells(k catalog.Kind, a, b any) int {
	switch k {
	case catalog.Int, catalog.Float:
		x, _ := strconv.ParseFloat(str(a), 64)
		y, _ := strconv.ParseFloat(str(b), 64)
		return cmpOrdered(x, y)
	case catalog.Bool:
		return cmpOrdered(str(a), str(b)) // false < true
	}
	return strings.Compare(str(a), str(b))
}

func cmpOrdered[T int64 | float64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// One past every bound of the list endpoints is a 400 naming the
// parameter.
func TestListBounds(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	links := params("url", "n240.example", "scope", "ROOT_DOMAIN")
	matrix := params("urls", "n240.example,example.com", "scope", "ROOT_DOMAIN")
	many := func(n int) string {
		u := make([]string, n)
		for i := range u {
			u[i] = fmt.Sprintf("site%d.example", i)
		}
		return strings.Join(u, ",")
	}
	for _, tc := range []struct {
		name, endpoint string
		params         url.Values
		param          string
	}{
		{"limit 0", "links", withParams(links, "limit", "0"), "limit"},
		{"limit not a number", "ref-domains", withParams(links, "limit", "1e3"), "limit"},
		{"offset -1", "ref-ips", withParams(links, "offset", "-1"), "offset"},
		{"direction lower case", "anchors", withParams(links, "direction", "desc"), "direction"},
		{"order_by unknown", "pages", withParams(links, "order_by", "nope"), "order_by"},
		{"order_by not returned", "links", withParams(links, "fields", "source_url,anchor", "order_by", "page_score"), "order_by"},
		{"order_by a list", "matrix", withParams(matrix, "order_by", "backlinks_counts"), "order_by"},
		{"filter syntax", "links", withParams(links, "filter", "is_new = "), "filter"},
		{"filter unknown field", "ref-domains", withParams(links, "filter", "nope = 1"), "filter"},
		{"filter another endpoint's field", "anchors", withParams(links, "filter", "domain_score > 1"), "filter"},
		{"filter empty", "links", withParams(links, "filter", " "), "filter"},
		{"filter target past the urls", "matrix", withParams(matrix, "filter", "backlinks_counts[3] > 0"), "filter"},
		{"url too long", "links", withParams(links, "url", "n240.example/"+strings.Repeat("a", catalog.MaxURLLen)), "url"},
		{"scope comparison lacks", "comparison", withParams(matrix, "scope", "SUBFOLDER"), "scope"},
		{"scope matrix lacks", "matrix", withParams(matrix, "scope", "SUBFOLDER"), "scope"},
		{"11 urls", "comparison", withParams(matrix, "urls", many(catalog.MaxComparisonURLs+1)), "urls"},
		{"7 urls", "matrix", withParams(matrix, "urls", many(catalog.MaxMatrixURLs+1)), "urls"},
		{"a url twice", "matrix", withParams(matrix, "urls", "a.example,a.example"), "urls"},
		{"a url item too long", "comparison", withParams(matrix, "urls", "a.example,"+strings.Repeat("b", catalog.MaxURLLen+1)), "urls"},
		{"a url item not a target", "comparison", withParams(matrix, "urls", "a.example,exa mple.com"), "urls"},
		{"matrix as CSV", "matrix", withParams(matrix, "format", "csv"), "format"},
		{"matrix fields", "matrix", withParams(matrix, "fields", "domain"), "fields"},
		{"score-profile limit", "score-profile", withParams(links, "limit", "5"), "limit"},
		{"competitors filter", "competitors", params("domain", "n240.example", "filter", "common_refdomains > 5"), "filter"},
		{"competitors without domain", "competitors", params("limit", "5"), "domain"},
		{"domain too long", "competitors", params("domain", strings.Repeat("d", catalog.MaxURLLen+1)), "domain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := failed(t, get(t, srv, tc.endpoint, tc.params), http.StatusBadRequest)
			var named []string
			for _, d := range e.Error.Details {
				named = append(named, d.Parameter)
			}
			require.Contains(t, named, tc.param, e.Error.Message)
			require.Contains(t, e.Error.Message, tc.param)
		})
	}
	// At the bounds: the most urls, and the largest limit (at most the
	// rows there are).
	ok(t, get(t, srv, "comparison", withParams(matrix, "urls", many(catalog.MaxComparisonURLs))))
	ok(t, get(t, srv, "matrix", withParams(matrix, "urls", many(catalog.MaxMatrixURLs))))
	meta, rows := list(t, srv, "links", withParams(links, "limit", fmt.Sprint(sandbox.DefaultMaxLimit), "offset", "239"))
	require.Len(t, rows, 1)
	require.EqualValues(t, 240, num(meta["total"]))
	_, rows = list(t, srv, "links", withParams(links, "offset", "240"))
	require.Empty(t, rows, "an offset past the total is an empty page")
}

// Text of every awkward kind reaches the client intact through CSV
// (parsed by encoding/csv with ';'), equal to the JSON.
func TestAwkwardValuesRoundTripCSV(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	p := params("url", "example.com", "scope", "ROOT_DOMAIN", "limit", fmt.Sprint(sandbox.DefaultMaxLimit))
	_, rows := list(t, srv, "links", p)
	r := get(t, srv, "links", withParams(p, "format", "csv"))
	require.Equal(t, http.StatusOK, r.status)
	cr := csv.NewReader(bytes.NewReader(r.body))
	cr.Comma = ';'
	recs, err := cr.ReadAll()
	require.NoError(t, err)
	ep, _ := catalog.Lookup("links")
	require.Equal(t, ep.FieldNames(), recs[0])
	require.Len(t, recs, len(rows)+1)
	for i, rec := range recs[1:] {
		for j, name := range recs[0] {
			require.Equal(t, str(rows[i][name]), rec[j], "row %d %s", i, name)
		}
	}

	saw := map[string]bool{}
	keys := map[string]bool{}
	for _, l := range rows {
		for _, f := range []string{"anchor", "source_title", "target_title", "image_alt", "source_url", "target_url", "redirect_url"} {
			s := str(l[f])
			require.True(t, utf8.ValidString(s))
			require.NotContains(t, s, "\r", "encoding/csv would turn CR LF into LF")
			for _, c := range []string{";", ",", `"`, "'", "\n", `\`} {
				if strings.Contains(s, c) {
					saw[f+" holds "+c] = true
				}
			}
			if s == "" {
				saw[f+" empty"] = true
			}
			if !isASCII(s) {
				saw[f+" unicode"] = true
			}
		}
		if l["is_image"] == true {
			require.NotEmpty(t, l["image_url"], "an image link has its image")
			require.Empty(t, l["anchor"], "an image link has no anchor text")
			if str(l["image_alt"]) != "" {
				saw["image with alt"] = true
			}
		} else {
			require.Empty(t, l["image_url"])
			require.Empty(t, l["image_alt"])
		}
		lang := str(l["lang"])
		saw[fmt.Sprintf("lang of %d letters", len(lang))] = true
		if str(l["redirect_url"]) != "" {
			saw["redirect"] = true
			require.NotEqual(t, l["redirect_url"], l["target_url"])
		}
		if num(l["response_code"]) != 200 {
			saw["status "+str(l["response_code"])] = true
		}
		for _, f := range []string{"is_new", "is_lost", "is_sitewide_main", "is_ugc", "is_sponsored", "is_frame", "is_form"} {
			if l[f] == true {
				saw[f] = true
			}
		}
		key := str(l["source_url"]) + "\x00" + str(l["target_url"]) + "\x00" + str(l["anchor"]) + "\x00" + str(l["image_url"])
		require.False(t, keys[key], "the natural key of a link is unique: %q", key)
		keys[key] = true
	}
	for _, want := range []string{
		"anchor holds ;", "anchor holds ,", `anchor holds "`, "anchor holds '", "anchor holds \n", `anchor holds \`,
		"source_title holds ;", "source_title holds ,", `source_title holds "`, "source_title holds '", "source_title holds \n",
		"source_url holds ;", "source_url holds ,", "anchor empty", "anchor unicode", "source_title unicode",
		"source_title empty", "target_title empty", "image with alt", "image_alt empty", "redirect_url empty",
		"lang of 2 letters", "lang of 3 letters", "lang of 0 letters", "redirect", "status 404", "status 301",
		"is_new", "is_lost", "is_sitewide_main", "is_ugc", "is_sponsored", "is_frame", "source_url unicode", "target_url unicode",
	} {
		require.True(t, saw[want], "no link with %s", want)
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// The matrix is JSON only; its rows are the union of the targets'
// referring domains with each one's backlinks to each target.
func TestMatrix(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	urls := []string{"n240.example", "example.com", "n300.example"}
	p := params("urls", strings.Join(urls, ","), "scope", "ROOT_DOMAIN")
	meta, rows := listAll(t, srv, "matrix", p)
	require.Equal(t, []any{"n240.example", "example.com", "n300.example"}, meta["urls"])
	require.Equal(t, "ROOT_DOMAIN", meta["scope"])
	require.Nil(t, meta["filter"])

	perTarget := make([]map[string]row, len(urls))
	union := map[string]bool{}
	for i, u := range urls {
		_, domains := listAll(t, srv, "ref-domains", params("url", u, "scope", "ROOT_DOMAIN"))
		perTarget[i] = map[string]row{}
		for _, d := range domains {
			perTarget[i][str(d["domain"])] = d
			union[str(d["domain"])] = true
		}
	}
	require.Len(t, rows, len(union), "one row per referring domain of any target")
	shared := 0
	for i, r := range rows {
		counts, isList := r["backlinks_counts"].([]any)
		require.True(t, isList, "backlinks_counts is an array")
		require.Len(t, counts, len(urls), "one count per url, in the order of urls")
		var matches int64
		for ti, c := range counts {
			d := perTarget[ti][str(r["domain"])]
			if d == nil {
				require.Zero(t, num(c))
				continue
			}
			require.Equal(t, num(d["backlinks_count"]), num(c), "%v to %s", r["domain"], urls[ti])
			require.Equal(t, d["domain_score"], r["domain_score"])
			matches++
		}
		require.Equal(t, matches, num(r["matches_count"]))
		if matches > 1 {
			shared++
		}
		if i > 0 {
			require.LessOrEqual(t, num(r["domain_score"]), num(rows[i-1]["domain_score"]), "by domain score by default")
		}
	}
	require.Positive(t, shared, "targets share referring domains")

	_, filtered := listAll(t, srv, "matrix", withParams(p, "filter", "backlinks_counts[2] > 0 AND matches_count >= 2"))
	require.NotEmpty(t, filtered)
	for _, r := range filtered {
		require.Positive(t, num(r["backlinks_counts"].([]any)[1]))
	}
	e := failed(t, get(t, srv, "matrix", withParams(p, "format", "csv")), http.StatusBadRequest)
	require.Contains(t, e.Error.Message, "JSON only")
}

// Competitors share at least 5 referring domains with the domain and a
// similarity of at least 0.01, both exactly what their ref-domains give.
func TestCompetitors(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	for _, domain := range []string{"n240.example", "example.com"} {
		meta, rows := listAll(t, srv, "competitors", params("domain", domain))
		require.Equal(t, domain, meta["domain"])
		require.NotEmpty(t, rows, domain)
		_, mine := listAll(t, srv, "ref-domains", params("url", domain, "scope", "ROOT_DOMAIN"))
		refs := map[string]bool{}
		for _, d := range mine {
			refs[str(d["domain"])] = true
		}
		for _, r := range rows[:min(4, len(rows))] {
			_, theirs := listAll(t, srv, "ref-domains", params("url", str(r["domain"]), "scope", "ROOT_DOMAIN"))
			var common int64
			for _, d := range theirs {
				if refs[str(d["domain"])] {
					common++
				}
			}
			union := int64(len(mine)+len(theirs)) - common
			require.Equal(t, common, num(r["common_refdomains"]), "%s vs %v", domain, r["domain"])
			require.GreaterOrEqual(t, common, int64(5))
			want := fmt.Sprintf("%d.%04d", (common*10000+union/2)/union/10000, (common*10000+union/2)/union%10000)
			require.Equal(t, want, str(r["similarity"]), "Jaccard similarity, 4 decimals")
			require.GreaterOrEqual(t, common*100, union, "similarity at least 0.01")
		}
	}
}

// Comparison is the overview of each url, in the order of urls.
func TestComparison(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	urls := []string{"n240.example", "https://www.example.com/", "n0.example"}
	meta, rows := listAll(t, srv, "comparison", params("urls", strings.Join(urls, ","), "scope", "SUBDOMAIN",
		"fields", "url,month_date,score,backlinks_count,domains_count,follows_count"))
	require.EqualValues(t, 3, num(meta["total"]))
	require.Equal(t, "SUBDOMAIN", meta["scope"])
	for i, r := range rows {
		o := overviewOf(t, srv, urls[i], "SUBDOMAIN")
		require.Equal(t, urls[i], r["url"], "the url as passed")
		require.Equal(t, "2025-06-01", r["month_date"], "the current month")
		for _, f := range []string{"score", "backlinks_count", "domains_count", "follows_count"} {
			require.Equal(t, o[f], num(r[f]), "%s of %s", f, urls[i])
		}
	}
}

// Streaming starts anywhere: the last page of five million links, the
// first rows in either direction, without materialising the list.
func TestLargeListsPageAnywhere(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	p := params("url", "n5000000.example", "scope", "ROOT_DOMAIN", "limit", "5")
	meta, last := list(t, srv, "links", withParams(p, "offset", "4999995"))
	require.EqualValues(t, 5_000_000, num(meta["total"]))
	_, first := list(t, srv, "links", withParams(p, "direction", "ASC"))
	slices.Reverse(first)
	require.Equal(t, renderAll(last), renderAll(first))

	meta, domains := list(t, srv, "ref-domains", withParams(p, "offset", "1000"))
	require.Len(t, domains, 5)
	require.Equal(t, overviewOf(t, srv, "n5000000.example", "ROOT_DOMAIN")["domains_count"], num(meta["total"]))
}
