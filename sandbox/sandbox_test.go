package sandbox_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
)

// requests used by the determinism test: every served endpoint, both formats.
var determinismCases = []struct {
	endpoint string
	params   url.Values
}{
	{"overview", params("url", "example.com", "scope", "ROOT_DOMAIN")},
	{"overview", params("url", "https://n9000.example/", "scope", "PAGE", "format", "csv")},
	{"overview", params("url", "shop.example.org/cat/", "scope", "SUBFOLDER")},
	{"summary", params("url", "example.com", "scope", "ROOT_DOMAIN", "format", "csv", "limit", "120")},
	{"summary", params("url", "www.example.net", "scope", "SUBDOMAIN", "fields", "url,month_date,score")},
	{"links", params("url", "example.com", "scope", "ROOT_DOMAIN", "format", "csv", "limit", "500", "offset", "100")},
	{"links", params("url", "n3000.example/blog/", "scope", "SUBFOLDER", "order_by", "anchor", "direction", "ASC", "filter", "is_image = false")},
	{"ref-domains", params("url", "example.com", "scope", "SUBDOMAIN", "format", "csv")},
	{"ref-ips", params("url", "example.com", "scope", "ROOT_DOMAIN", "order_by", "last_seen_at")},
	{"pages", params("url", "n3000.example", "scope", "ROOT_DOMAIN", "format", "csv")},
	{"anchors", params("url", "example.com", "scope", "ROOT_DOMAIN")},
	{"score-profile", params("url", "example.com", "scope", "ROOT_DOMAIN")},
	{"competitors", params("domain", "example.com", "format", "csv")},
	{"comparison", params("urls", "example.com,n240.example", "scope", "ROOT_DOMAIN")},
	{"matrix", params("urls", "example.com,n240.example", "scope", "ROOT_DOMAIN", "filter", "matches_count = 2")},
	{"keyword-metrics", params("keyword", "running shoes", "country", "US")},
	{"keyword-metrics", params("keyword", "Kaffee", "country", "DE", "month", "2019-03", "format", "csv")},
}

func TestDeterminism(t *testing.T) {
	t.Parallel()
	_, a := newServer(t, sandbox.Config{Seed: 7})
	_, b := newServer(t, sandbox.Config{Seed: 7})
	_, other := newServer(t, sandbox.Config{Seed: 8})
	for _, tc := range determinismCases {
		t.Run(tc.endpoint+"?"+tc.params.Encode(), func(t *testing.T) {
			t.Parallel()
			ra, rb, ro := get(t, a, tc.endpoint, tc.params), get(t, b, tc.endpoint, tc.params), get(t, other, tc.endpoint, tc.params)
			require.Equal(t, http.StatusOK, ra.status, "%s", ra.body)
			require.Equal(t, string(ra.body), string(rb.body), "same seed, same clock: same bytes")
			require.NotEqual(t, string(ra.body), string(ro.body), "another seed invents other data")
		})
	}
}

func TestSameRequestSameIDWhateverTheKeyTransport(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	ep, _ := catalog.Lookup("overview")
	q := "url=example.com&scope=ROOT_DOMAIN"
	byQuery := send(t, srv, http.MethodGet, ep.Path+"?"+q+"&key="+testKey, nil)
	byHeader := send(t, srv, http.MethodGet, ep.Path+"?"+q, http.Header{"Authorization": {"Apikey " + testKey}})
	require.Equal(t, http.StatusOK, byQuery.status)
	require.Equal(t, string(byQuery.body), string(byHeader.body))
}

func TestDataFollowTheSandboxDay(t *testing.T) {
	t.Parallel()
	later := testNow.Add(3 * time.Hour) // same day
	nextDay := testNow.Add(24 * time.Hour)
	_, now := newServer(t, sandbox.Config{})
	_, sameDay := newServer(t, sandbox.Config{Now: func() time.Time { return later }})
	_, tomorrow := newServer(t, sandbox.Config{Now: func() time.Time { return nextDay }})
	p := params("url", "n100000.example", "scope", "ROOT_DOMAIN", "format", "csv", "limit", "120")
	require.Equal(t, string(get(t, now, "summary", p).body), string(get(t, sameDay, "summary", p).body))
	require.NotEqual(t, string(get(t, now, "summary", p).body), string(get(t, tomorrow, "summary", p).body))
}

// overviewTargets are varied targets: hosts, subdomains, folders, pages and
// queries, with and without scheme.
func overviewTargets() []string {
	var out []string
	for i := range 60 {
		host := fmt.Sprintf("site%d.example", i)
		switch i % 6 {
		case 0:
			out = append(out, host)
		case 1:
			out = append(out, "https://www."+host+"/")
		case 2:
			out = append(out, fmt.Sprintf("blog.%s/posts/%d/title-%d.html", host, i, i))
		case 3:
			out = append(out, fmt.Sprintf("http://shop.%s.co.uk/c/%d?page=%d", host[:len(host)-8], i, i))
		case 4:
			out = append(out, fmt.Sprintf("%s/a/b/c/d/", host))
		default:
			out = append(out, fmt.Sprintf("news.%s/%d", host, i))
		}
	}
	return out
}

func TestOverviewConsistency(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	ep, _ := catalog.Lookup("overview")
	for _, target := range overviewTargets() {
		for _, scope := range catalog.AllScopes {
			o := overviewOf(t, srv, target, string(scope))
			name := fmt.Sprintf("%s at %s: %v", target, scope, o)
			require.Len(t, o, len(ep.Fields), name)
			for _, f := range ep.Fields {
				require.Contains(t, o, f.Name, name)
				require.GreaterOrEqual(t, o[f.Name], int64(0), name)
			}
			n := o["backlinks_count"]
			require.Equal(t, n, o["follows_count"]+o["nofollows_count"], name)
			require.Equal(t, n, o["texts_count"]+o["images_count"], name)
			for _, f := range []string{"new_count", "lost_count", "domains_count", "urls_count",
				"sponsored_count", "ugc_count", "frames_count", "forms_count"} {
				require.LessOrEqual(t, o[f], n, "%s <= backlinks: %s", f, name)
			}
			require.LessOrEqual(t, o["domains_count"], o["urls_count"], name)
			require.LessOrEqual(t, o["ips_count"], o["domains_count"], name)
			require.LessOrEqual(t, o["ip_class_c_count"], o["ips_count"], name)
			require.LessOrEqual(t, o["ips_count"], 254*o["ip_class_c_count"], name)
			require.LessOrEqual(t, o["score"], int64(100), name)
			if n > 0 {
				require.Positive(t, o["domains_count"], name)
				require.Positive(t, o["ip_class_c_count"], name)
			} else {
				require.Zero(t, o["score"], name)
			}
		}
	}
}

// The counts that scale with a target's share of backlinks never grow from a
// scope to a narrower one.
func TestScopesNarrowConsistently(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	scaled := []string{"backlinks_count", "domains_count", "urls_count", "follows_count", "nofollows_count",
		"sponsored_count", "ugc_count", "frames_count", "forms_count", "images_count", "texts_count",
		"ips_count", "ip_class_c_count", "lost_count"}
	for _, target := range overviewTargets() {
		u, err := url.Parse("x://" + strings.TrimPrefix(strings.TrimPrefix(target, "https://"), "http://"))
		require.NoError(t, err)
		path := u.Path
		if path == "" {
			path = "/"
		}
		dir := u.Host + path[:strings.LastIndex(path, "/")+1]
		chain := []map[string]int64{
			overviewOf(t, srv, target, "ROOT_DOMAIN"),
			overviewOf(t, srv, target, "SUBDOMAIN"),
			overviewOf(t, srv, dir, "SUBFOLDER"),
			overviewOf(t, srv, target, "PAGE"),
		}
		for i := 1; i < len(chain); i++ {
			for _, f := range scaled {
				require.LessOrEqual(t, chain[i][f], chain[i-1][f], "%s: %s of scope %d vs %d", target, f, i, i-1)
			}
		}
	}
	// A level that names nothing narrower is its parent: www is the bare
	// host, the folder / is the whole host, and a sized target (n<digits>)
	// lives on its root host alone.
	for _, same := range []struct{ url, scope, sameURL, sameScope string }{
		{"www.example.com", "SUBDOMAIN", "example.com", "SUBDOMAIN"},
		{"https://example.com/", "SUBFOLDER", "example.com", "SUBDOMAIN"},
		{"n250000.example", "SUBDOMAIN", "n250000.example", "ROOT_DOMAIN"},
		{"www.n250000.example/", "SUBFOLDER", "n250000.example", "ROOT_DOMAIN"},
	} {
		want := overviewOf(t, srv, same.sameURL, same.sameScope)
		require.Equal(t, want, overviewOf(t, srv, same.url, same.scope), "%s at %s", same.url, same.scope)
	}
}

func TestNTargetsHaveExactlyNBacklinks(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	for _, tc := range []struct {
		url, scope string
		want       int64
	}{
		{"n250000.example", "ROOT_DOMAIN", 250000},
		{"n250000.example", "SUBDOMAIN", 250000},
		{"n250000.example", "SUBFOLDER", 250000},
		{"blog.n250000.example", "ROOT_DOMAIN", 250000},
		{"n5000000.example", "ROOT_DOMAIN", 5000000},
		{"n1.example", "ROOT_DOMAIN", 1},
		{"n0.example", "ROOT_DOMAIN", 0},
		{"n42.example.com", "SUBDOMAIN", 42},
	} {
		o := overviewOf(t, srv, tc.url, tc.scope)
		require.Equal(t, tc.want, o["backlinks_count"], "%s at %s", tc.url, tc.scope)
		if tc.want == 0 {
			for f, v := range o {
				require.Zero(t, v, "%s of an empty target", f)
			}
		}
	}
	// A narrower part of an n-target holds a share of N: its home page
	// about a third.
	part := overviewOf(t, srv, "https://www.n250000.example/", "PAGE")["backlinks_count"]
	require.Less(t, part, int64(250000))
	require.Greater(t, part, int64(250000/5))
}

func TestSummaryCurrentMonthIsTheOverview(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	targets := append(overviewTargets()[:24], "n250000.example", "n0.example", "n3.example")
	for _, target := range targets {
		for _, scope := range []string{"ROOT_DOMAIN", "SUBDOMAIN", "PAGE"} {
			o := overviewOf(t, srv, target, scope)
			meta, rows := summaryOf(t, srv, params("url", target, "scope", scope, "limit", "1",
				"fields", "score,backlinks_count,domains_count,follows_count,month_date,url"))
			name := fmt.Sprintf("%s at %s", target, scope)
			require.Len(t, rows, 1, name)
			require.Equal(t, "2025-06", meta["date_to"], name)
			require.Equal(t, summaryRow{
				Score: o["score"], BacklinksCount: o["backlinks_count"], DomainsCount: o["domains_count"],
				FollowsCount: o["follows_count"], MonthDate: "2025-06-01", URL: target,
			}, rows[0], name)
		}
	}
}

func TestSummaryHistory(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	target := params("url", "n250000.example", "scope", "ROOT_DOMAIN")
	meta, rows := summaryOf(t, srv, target)
	total := int64(meta["total"].(float64))
	require.Len(t, rows, int(min(total, 12)), "limit defaults to 12")
	require.Equal(t, "2025-06", meta["date_to"])
	require.Equal(t, "n250000.example", meta["url"])
	require.Equal(t, "n250000.example", meta["effective_url"])
	require.Equal(t, "ROOT_DOMAIN", meta["scope"])
	oldest := meta["date_from"].(string)
	fromOldest, err := time.Parse("2006-01", oldest)
	require.NoError(t, err)
	months := (2025-fromOldest.Year())*12 + 6 - int(fromOldest.Month()) + 1
	require.EqualValues(t, months, total, "total counts the months from the oldest to the current")

	_, all := summaryOf(t, srv, withParams(target, "limit", "1000"))
	require.Len(t, all, months, "limit is capped by the available history")
	want := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	for i, r := range all {
		require.Equal(t, want.Format("2006-01-02"), r.MonthDate, "newest first, one row per month")
		require.Empty(t, r.URL, "url is not among the default fields")
		want = want.AddDate(0, -1, 0)
		if i > 0 {
			prev := all[i-1]
			require.LessOrEqual(t, r.BacklinksCount, prev.BacklinksCount, "history grows")
			require.LessOrEqual(t, r.DomainsCount, prev.DomainsCount)
			require.LessOrEqual(t, r.FollowsCount, prev.FollowsCount)
			require.LessOrEqual(t, r.Score, prev.Score)
		}
		require.LessOrEqual(t, r.DomainsCount, r.BacklinksCount)
		require.LessOrEqual(t, r.FollowsCount, r.BacklinksCount)
	}
	require.Positive(t, all[len(all)-1].BacklinksCount, "the oldest month has the first backlink")
	require.Greater(t, all[0].BacklinksCount, all[len(all)-1].BacklinksCount)

	// An explicit range: total counts its months, rows are its newest.
	meta, rows = summaryOf(t, srv, withParams(target, "date_from", "2024-01", "date_to", "2024-12", "limit", "5"))
	require.EqualValues(t, 12, meta["total"])
	require.Equal(t, "2024-01", meta["date_from"])
	require.Equal(t, "2024-12", meta["date_to"])
	require.Len(t, rows, 5)
	require.Equal(t, "2024-12-01", rows[0].MonthDate)
	require.Equal(t, "2024-08-01", rows[4].MonthDate)

	// A range reaching past the current month stops at it.
	meta, rows = summaryOf(t, srv, withParams(target, "date_from", "2025-05", "date_to", "2026-02"))
	require.EqualValues(t, 2, meta["total"])
	require.Len(t, rows, 2)
	require.Equal(t, "2025-06-01", rows[0].MonthDate)

	// A range before the history has no rows and costs nothing.
	meta, rows = summaryOf(t, srv, withParams(target, "date_from", "1999-01", "date_to", "1999-12"))
	require.EqualValues(t, 0, meta["total"])
	require.Empty(t, rows)

	// date_from after date_to is the caller's mistake.
	e := failed(t, get(t, srv, "summary", withParams(target, "date_from", "2025-03", "date_to", "2025-01")), http.StatusBadRequest)
	require.Contains(t, e.Error.Message, "date_from")
	require.Equal(t, "date_from", e.Error.Details[0].Parameter)
}

func withParams(base url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range params(kv...) {
		out[k] = v
	}
	return out
}

func TestCSVFormat(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	tricky := "example.com/a;b\"c\nd e"
	r := get(t, srv, "summary", params("url", tricky, "scope", "ROOT_DOMAIN", "format", "csv",
		"fields", "url,month_date,backlinks_count", "limit", "3"))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "text/csv", r.header.Get("Content-Type"))
	require.Contains(t, string(r.body), `"example.com/a;b""c`+"\n"+`d e";2025-06-01;`, "quoted, inner quote doubled")

	rd := csv.NewReader(bytes.NewReader(r.body))
	rd.Comma = ';'
	records, err := rd.ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"url", "month_date", "backlinks_count"}, records[0], "columns in the order of fields")
	require.Len(t, records, 4)
	for _, rec := range records[1:] {
		require.Equal(t, tricky, rec[0], "the value parses back")
	}

	// Default columns: the catalog's order (summary: its default fields).
	for _, name := range []string{"overview", "summary", "keyword-metrics"} {
		ep, _ := catalog.Lookup(name)
		p := params("url", "example.com", "scope", "ROOT_DOMAIN", "format", "csv")
		if name == "keyword-metrics" {
			p = params("keyword", "shoes", "country", "US", "format", "csv")
		}
		r := get(t, srv, name, p)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		header, _, _ := strings.Cut(string(r.body), "\n")
		want := ep.FieldNames()
		if ep.DefaultFields != nil {
			want = ep.DefaultFields
		}
		require.Equal(t, strings.Join(want, ";"), header, name)
		require.True(t, strings.HasSuffix(string(r.body), "\n"))
	}
}

func TestFieldsProjection(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	r := get(t, srv, "overview", params("url", "example.com", "scope", "ROOT_DOMAIN", "fields", "score,backlinks_count"))
	env := ok(t, r)
	require.Regexp(t, `^\{"score":\d+,"backlinks_count":\d+\}$`, string(env.Data), "keys in the order of fields")
	full := overviewOf(t, srv, "example.com", "ROOT_DOMAIN")
	require.Equal(t, fmt.Sprintf(`{"score":%d,"backlinks_count":%d}`, full["score"], full["backlinks_count"]), string(env.Data))
}

func TestKeywordMetricsJSONTypes(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	ep, _ := catalog.Lookup("keyword-metrics")
	digits := regexp.MustCompile(`^[0-9]+$`)
	decimal := regexp.MustCompile(`^[0-9]+\.[0-9]{2}$`)
	sawEmptySERP := false
	for i := range 80 {
		kw := fmt.Sprintf("keyword %d", i)
		country := catalog.Countries[i%len(catalog.Countries)]
		month := fmt.Sprintf("%d-%02d", 2012+i%13, 1+i%12)
		if month > "2025-06" {
			month = "2025-06"
		}
		env := ok(t, get(t, srv, "keyword-metrics", params("keyword", kw, "country", country, "month", month)))
		require.Equal(t, kw, env.Meta["keyword"])
		require.Equal(t, country, env.Meta["country"])
		require.Equal(t, month, env.Meta["month"])
		var d map[string]any
		dec := json.NewDecoder(bytes.NewReader(env.Data))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&d))
		require.Len(t, d, len(ep.Fields))

		for _, f := range []string{"competitive_density", "keyword_difficulty"} {
			n, isNum := d[f].(json.Number)
			require.True(t, isNum, "%s is a JSON number: %v", f, d[f])
			v, err := n.Int64()
			require.NoError(t, err, "%s is an integer", f)
			require.True(t, v >= 0 && v <= 100, "%s in 0-100: %d", f, v)
		}
		cpc, isStr := d["cpc"].(string)
		require.True(t, isStr, "cpc is a string")
		require.Regexp(t, decimal, cpc)
		for _, f := range []string{"number_of_results", "search_volume"} {
			s, isStr := d[f].(string)
			require.True(t, isStr, "%s is a string", f)
			require.Regexp(t, digits, s, f)
		}
		intents := stringList(t, d["intents"])
		require.NotEmpty(t, intents)
		require.Subset(t, []string{"COMMERCIAL", "INFORMATIONAL"}, intents)
		serp := stringList(t, d["serp_features"])
		require.Subset(t, []string{"SITELINKS", "PEOPLE_ALSO_ASK", "AI_OVERVIEW", "RELATED_SEARCHES"}, serp)
		sawEmptySERP = sawEmptySERP || len(serp) == 0
		trends, isList := d["trends"].([]any)
		require.True(t, isList, "trends is an array")
		require.Len(t, trends, 12)
		for _, x := range trends {
			n, isNum := x.(json.Number)
			require.True(t, isNum)
			_, err := n.Int64()
			require.NoError(t, err, "trends are integers")
		}
	}
	require.True(t, sawEmptySERP, "serp_features may be empty, encoded as []")
}

func stringList(t *testing.T, v any) []string {
	t.Helper()
	list, isList := v.([]any)
	require.True(t, isList, "a JSON array, not %T", v)
	out := make([]string, len(list))
	for i, x := range list {
		s, isStr := x.(string)
		require.True(t, isStr)
		out[i] = s
	}
	return out
}

func TestKeywordMetricsMonthBounds(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	kw := params("keyword", "shoes", "country", "US")
	for _, tc := range []struct {
		month  string
		status int
	}{
		{"2011-12", http.StatusBadRequest},
		{catalog.FirstKeywordMonth, http.StatusOK},
		{"2020-02", http.StatusOK},
		{"2025-06", http.StatusOK}, // the current month of the sandbox clock
		{"2025-07", http.StatusBadRequest},
		{"2025-6", http.StatusBadRequest},
		{"2025-13", http.StatusBadRequest},
		{"June", http.StatusBadRequest},
	} {
		r := get(t, srv, "keyword-metrics", withParams(kw, "month", tc.month))
		if tc.status == http.StatusOK {
			require.Equal(t, tc.month, ok(t, r).Meta["month"])
			continue
		}
		e := failed(t, r, tc.status)
		require.Contains(t, e.Error.Message, "month", tc.month)
		require.Equal(t, "month", e.Error.Details[0].Parameter, tc.month)
	}
	require.Equal(t, "2025-06", ok(t, get(t, srv, "keyword-metrics", kw)).Meta["month"], "default: the current month")
	// The same keyword in other words is the same keyword.
	a := ok(t, get(t, srv, "keyword-metrics", kw)).Data
	b := ok(t, get(t, srv, "keyword-metrics", withParams(kw, "keyword", "  Shoes "))).Data
	require.JSONEq(t, string(a), string(b))
}

// trends of consecutive months overlap: a month's value is the same whatever
// request it appears in, relative to each request's busiest month.
func TestKeywordTrendsAreOneSeries(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	var prev []int64
	for _, m := range []string{"2024-01", "2024-02"} {
		var d struct {
			Trends []int64 `json:"trends"`
		}
		env := ok(t, get(t, srv, "keyword-metrics", params("keyword", "coffee", "country", "IT", "month", m)))
		require.NoError(t, json.Unmarshal(env.Data, &d))
		require.Contains(t, d.Trends, int64(100), "relative to the busiest month")
		if prev != nil {
			// Shifted by one month; values are relative, so compare order.
			for i := 1; i < 11; i++ {
				require.Equal(t, prev[i+1] >= prev[i], d.Trends[i] >= d.Trends[i-1], "month %d", i)
			}
		}
		prev = d.Trends
	}
}

func TestValidation(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	overview := params("url", "example.com", "scope", "ROOT_DOMAIN")
	for _, tc := range []struct {
		name, endpoint string
		params         url.Values
		param          string // the parameter the 400 names
	}{
		{"missing url", "overview", params("scope", "ROOT_DOMAIN"), "url"},
		{"missing scope", "overview", params("url", "example.com"), "scope"},
		{"blank url", "overview", withParams(overview, "url", "  "), "url"},
		{"url too long", "overview", withParams(overview, "url", "example.com/"+strings.Repeat("a", catalog.MaxURLLen)), "url"},
		{"url without host", "overview", withParams(overview, "url", "https:///path"), "url"},
		{"url with a bad host", "overview", withParams(overview, "url", "exa mple.com"), "url"},
		{"unknown scope", "overview", withParams(overview, "scope", "DOMAIN"), "scope"},
		{"lower case scope", "overview", withParams(overview, "scope", "root_domain"), "scope"},
		{"scope summary lacks", "summary", withParams(overview, "scope", "SUBFOLDER"), "scope"},
		{"unknown format", "overview", withParams(overview, "format", "xml"), "format"},
		{"unknown field", "overview", withParams(overview, "fields", "backlinks_count,nope"), "fields"},
		{"field twice", "overview", withParams(overview, "fields", "score,score"), "fields"},
		{"empty fields", "overview", withParams(overview, "fields", ""), "fields"},
		{"field of another endpoint", "summary", withParams(overview, "fields", "urls_count"), "fields"},
		{"unknown parameter", "overview", withParams(overview, "limit", "10"), "limit"},
		{"limit zero", "summary", withParams(overview, "limit", "0"), "limit"},
		{"limit not a number", "summary", withParams(overview, "limit", "ten"), "limit"},
		{"bad date_to", "summary", withParams(overview, "date_to", "2025/01"), "date_to"},
		{"keyword too long", "keyword-metrics", params("keyword", strings.Repeat("k", catalog.MaxKeywordLen+1), "country", "US"), "keyword"},
		{"unknown country", "keyword-metrics", params("keyword", "k", "country", "us"), "country"},
		{"missing keyword", "keyword-metrics", params("country", "US"), "keyword"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := failed(t, get(t, srv, tc.endpoint, tc.params), http.StatusBadRequest)
			require.False(t, *e.Error.Retryable)
			require.Contains(t, e.Error.Message, tc.param)
			var named []string
			for _, d := range e.Error.Details {
				named = append(named, d.Parameter)
				require.NotEmpty(t, d.Message)
			}
			require.Contains(t, named, tc.param)
		})
	}

	t.Run("every problem at once", func(t *testing.T) {
		t.Parallel()
		e := failed(t, get(t, srv, "overview", params("scope", "X", "foo", "1", "bar", "2")), http.StatusBadRequest)
		var named []string
		for _, d := range e.Error.Details {
			named = append(named, d.Parameter)
		}
		require.ElementsMatch(t, []string{"bar", "foo", "url", "scope"}, named)
	})
	t.Run("repeated parameter", func(t *testing.T) {
		t.Parallel()
		ep, _ := catalog.Lookup("overview")
		r := send(t, srv, http.MethodGet, ep.Path+"?url=a.com&url=b.com&scope=PAGE&key="+testKey, nil)
		e := failed(t, r, http.StatusBadRequest)
		require.Equal(t, "url", e.Error.Details[0].Parameter)
	})
	t.Run("a characters limit counts characters", func(t *testing.T) {
		t.Parallel()
		env := ok(t, get(t, srv, "keyword-metrics", params("keyword", strings.Repeat("é", catalog.MaxKeywordLen), "country", "FR")))
		require.NotNil(t, env.Data)
	})
}

func TestAuth(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{APIKeys: []string{"k1", "k2"}})
	ep, _ := catalog.Lookup("overview")
	path := ep.Path + "?url=example.com&scope=ROOT_DOMAIN"
	for _, tc := range []struct {
		name   string
		query  string
		header string
		status int
	}{
		{"no key", "", "", http.StatusUnauthorized},
		{"unknown key in query", "&key=nope", "", http.StatusUnauthorized},
		{"empty key in query", "&key=", "", http.StatusUnauthorized},
		{"key in query", "&key=k1", "", http.StatusOK},
		{"other key in query", "&key=k2", "", http.StatusOK},
		{"key in header", "", "Apikey k1", http.StatusOK},
		{"scheme in any case", "", "APIKEY k2", http.StatusOK},
		{"unknown key in header", "", "Apikey nope", http.StatusUnauthorized},
		{"header without scheme", "", "k1", http.StatusUnauthorized},
		{"bearer token", "", "Bearer k1", http.StatusUnauthorized},
		{"a bad header wins over a good query key", "&key=k1", "Apikey nope", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tc.header != "" {
				h.Set("Authorization", tc.header)
			}
			r := send(t, srv, http.MethodGet, path+tc.query, h)
			if tc.status == http.StatusOK {
				ok(t, r)
				return
			}
			e := failed(t, r, tc.status)
			require.False(t, *e.Error.Retryable)
			require.NotContains(t, string(r.body), "nope", "a bad key is not echoed")
		})
	}
	// Auth comes before validation: a request without a key learns nothing.
	failed(t, send(t, srv, http.MethodGet, ep.Path+"?bogus=1", nil), http.StatusUnauthorized)
}

func TestRouting(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	auth := http.Header{"Authorization": {"Apikey " + testKey}}

	e := failed(t, send(t, srv, http.MethodGet, "/apis/v4/backlinks/v1/nope?key="+testKey, nil), http.StatusNotFound)
	require.False(t, *e.Error.Retryable)
	failed(t, send(t, srv, http.MethodGet, "/", auth), http.StatusNotFound)
	failed(t, send(t, srv, http.MethodGet, "/apis/v4/backlinks/v1/overview/", auth), http.StatusNotFound)

	ep, _ := catalog.Lookup("overview")
	r := send(t, srv, http.MethodPost, ep.Path+"?url=example.com&scope=PAGE", auth)
	failed(t, r, http.StatusMethodNotAllowed)
	require.Equal(t, http.MethodGet, r.header.Get("Allow"))

	// Every catalog endpoint is served, after validation.
	for _, ep := range catalog.All() {
		r := send(t, srv, http.MethodGet, ep.Path, auth)
		failed(t, r, http.StatusBadRequest) // validation runs first: required parameters
		r = send(t, srv, http.MethodGet, ep.Path+"?"+validParams(ep).Encode(), auth)
		ok(t, r)
	}
}

// validParams returns the required parameters of ep with acceptable values.
func validParams(ep *catalog.Endpoint) url.Values {
	v := url.Values{}
	for _, p := range ep.Params {
		if !p.Required {
			continue
		}
		switch {
		case p.Kind == catalog.PEnum:
			v.Set(p.Name, p.Enum[0])
		case p.Kind == catalog.PList:
			v.Set(p.Name, "a.example,b.example")
		default:
			v.Set(p.Name, "example.com")
		}
	}
	return v
}

func TestUsage(t *testing.T) {
	t.Parallel()
	s, srv := newServer(t, sandbox.Config{APIKeys: []string{"alice", "bob"}})
	price := func(name string) catalog.Price {
		ep, _ := catalog.Lookup(name)
		return ep.Price
	}
	call := func(key, endpoint string, p url.Values) reply {
		ep, _ := catalog.Lookup(endpoint)
		return send(t, srv, http.MethodGet, ep.Path+"?"+p.Encode(), http.Header{"Authorization": {"Apikey " + key}})
	}

	require.Equal(t, http.StatusOK, call("alice", "overview", params("url", "example.com", "scope", "PAGE")).status)
	require.Equal(t, http.StatusOK, call("alice", "keyword-metrics", params("keyword", "k", "country", "US")).status)
	require.Equal(t, http.StatusOK, call("alice", "summary", params("url", "n9000.example", "scope", "ROOT_DOMAIN", "limit", "5", "format", "csv")).status)
	require.Equal(t, http.StatusOK, call("alice", "summary", params("url", "n9000.example", "scope", "ROOT_DOMAIN", "date_from", "1990-01", "date_to", "1990-02")).status)
	require.Equal(t, http.StatusBadRequest, call("alice", "overview", params("url", "example.com")).status)
	require.Equal(t, http.StatusBadRequest, call("alice", "links", params("url", "example.com", "scope", "PAGE", "limit", "0")).status)
	require.Equal(t, http.StatusOK, call("bob", "overview", params("url", "example.com", "scope", "PAGE")).status)

	want := price("overview").Cost(1) + price("keyword-metrics").Cost(1) + price("summary").Cost(5) + price("summary").Cost(0)
	require.Equal(t, int64(45+20+5*40), want, "the catalog's prices")
	require.Equal(t, sandbox.Usage{Key: "alice", UnitsSpent: want, Requests: 4, FailedRequests: 2}, s.Usage("alice"))
	require.Equal(t, sandbox.Usage{Key: "bob", UnitsSpent: 45, Requests: 1}, s.Usage("bob"))
	require.Equal(t, sandbox.Usage{Key: "carol"}, s.Usage("carol"))

	// Unauthenticated requests are charged to no one.
	failed(t, send(t, srv, http.MethodGet, "/apis/v4/backlinks/v1/overview?url=a.com&scope=PAGE&key=carol", nil), http.StatusUnauthorized)
	require.Equal(t, sandbox.Usage{Key: "carol"}, s.Usage("carol"))

	r := send(t, srv, http.MethodGet, sandbox.UsagePath+"?key=alice", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.JSONEq(t, fmt.Sprintf(`{"key":"alice","units_spent":%d,"requests":4,"failed_requests":2}`, want), string(r.body))
	require.JSONEq(t, `{"key":"dave","units_spent":0,"requests":0,"failed_requests":0}`,
		string(send(t, srv, http.MethodGet, sandbox.UsagePath+"?key=dave", nil).body))
	e := failed(t, send(t, srv, http.MethodGet, sandbox.UsagePath, nil), http.StatusBadRequest)
	require.Equal(t, "key", e.Error.Details[0].Parameter)
}

func TestLogsNeverHoldKeys(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, srv := newServer(t, sandbox.Config{APIKeys: []string{"s3cret-alpha"}, Logger: logger})
	ep, _ := catalog.Lookup("overview")
	q := ep.Path + "?url=example.com&scope=ROOT_DOMAIN"
	send(t, srv, http.MethodGet, q+"&key=s3cret-alpha", nil)
	send(t, srv, http.MethodGet, "/apis/v4/backlinks/v1/nope?key=s3cret-alpha", nil)
	send(t, srv, http.MethodGet, q+"&key=wr0ng-beta", nil)
	send(t, srv, http.MethodGet, "/apis/v4/backlinks/v1/overview?KEY=wr0ng-gamma&url=x.com", nil)
	send(t, srv, http.MethodGet, "/apis/v4/backlinks/v1/overview?k%65y=wr0ng-delta&url=x.com", nil)
	send(t, srv, http.MethodGet, q+";key=wr0ng-epsilon", nil)
	send(t, srv, http.MethodGet, q, http.Header{"Authorization": {"Apikey s3cret-alpha"}})
	send(t, srv, http.MethodGet, q, http.Header{"Authorization": {"Apikey wr0ng-zeta"}})
	send(t, srv, http.MethodGet, sandbox.UsagePath+"?key=s3cret-alpha", nil)
	out := logs.String()
	require.Equal(t, 9, strings.Count(out, `"msg":"sandbox request"`), out)
	for _, secret := range []string{"s3cret-alpha", "wr0ng-beta", "wr0ng-gamma", "wr0ng-delta", "wr0ng-epsilon", "wr0ng-zeta"} {
		require.NotContains(t, out, secret)
	}
	require.Contains(t, out, "url=example.com&scope=ROOT_DOMAIN&key=[REDACTED]", "the rest of the query is logged")
}

func TestConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{[]string{""}, "API key 1 of 1 is empty"},
		{[]string{"a", "b c"}, "API key 2 of 2 contains a space"},
		{[]string{"a", "b", "a"}, "API key 3 of 3 repeats key 1"},
	} {
		_, err := sandbox.New(sandbox.Config{APIKeys: tc.keys})
		require.ErrorContains(t, err, tc.want)
	}
	s, err := sandbox.New(sandbox.Config{})
	require.NoError(t, err, "the zero Config is a working sandbox")
	require.NotNil(t, s.Handler())
}

func TestServeShutsDownWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	s, err := sandbox.New(sandbox.Config{Now: func() time.Time { return testNow }})
	require.NoError(t, err)
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sandbox.Serve(ctx, ln, s) }()

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	ep, _ := catalog.Lookup("overview")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		"http://"+ln.Addr().String()+ep.Path+"?url=n7.example&scope=PAGE&key="+testKey, nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	cancel()
	require.NoError(t, <-done, "a graceful shutdown is not an error")
	_, err = client.Do(req.Clone(t.Context()))
	require.Error(t, err, "nothing listens any more")
}

func TestListenAndServeReportsABadAddress(t *testing.T) {
	t.Parallel()
	s, err := sandbox.New(sandbox.Config{})
	require.NoError(t, err)
	err = sandbox.ListenAndServe(t.Context(), "256.0.0.1:http", s)
	require.ErrorContains(t, err, "sandbox: listen")
}

// Every field a generator serves has the kind the catalog gives it, in JSON:
// checked through the CSV header and JSON key order for each endpoint.
func TestServedEndpointsCoverTheirCatalogFields(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	for _, ep := range catalog.All() {
		name := ep.Name
		p := validParams(ep)
		if _, ok := ep.Param("fields"); ok {
			p.Set("fields", strings.Join(ep.FieldNames(), ","))
		}
		env := ok(t, get(t, srv, name, p))
		raw := env.Data
		if ep.Shape == catalog.List {
			var rows []json.RawMessage
			require.NoError(t, json.Unmarshal(raw, &rows))
			require.NotEmpty(t, rows, name)
			raw = rows[0]
		}
		var row map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &row))
		for _, f := range ep.Fields {
			v, present := row[f.Name]
			require.True(t, present, "%s.%s", name, f.Name)
			require.True(t, jsonKindMatches(f.Kind, v), "%s.%s is %v, got %s", name, f.Name, f.Kind, v)
		}
		require.Len(t, row, len(ep.Fields))
	}
}

func jsonKindMatches(k catalog.Kind, v json.RawMessage) bool {
	s := string(v)
	switch k {
	case catalog.Int:
		return regexp.MustCompile(`^-?[0-9]+$`).MatchString(s)
	case catalog.Float:
		return regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`).MatchString(s)
	case catalog.IntString:
		return regexp.MustCompile(`^"[0-9]+"$`).MatchString(s)
	case catalog.DecString:
		return regexp.MustCompile(`^"[0-9]+(\.[0-9]+)?"$`).MatchString(s)
	case catalog.Text:
		return strings.HasPrefix(s, `"`)
	case catalog.Date:
		return regexp.MustCompile(`^"[0-9]{4}-[0-9]{2}-[0-9]{2}"$`).MatchString(s)
	case catalog.Timestamp:
		return regexp.MustCompile(`^"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"$`).MatchString(s)
	case catalog.Bool:
		return s == "true" || s == "false"
	case catalog.TextList, catalog.IntList:
		return strings.HasPrefix(s, "[")
	}
	return false
}
