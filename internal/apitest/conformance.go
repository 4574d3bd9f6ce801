package apitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// Config says where the implementation under test is.
type Config struct {
	// BaseURL is the API's base address (required).
	BaseURL string
	// Key is a valid API key (required).
	Key string
	// Now is the implementation's current time: month bounds are relative
	// to it (required).
	Now time.Time
	// Target is a small backlink target, listed whole in checks that walk
	// every row; default "n240.example".
	Target string
	// Other is a second target for comparison and matrix; default
	// "example.com".
	Other string
	// UnitsSpent, when set, returns the units Key has spent so far; the
	// suite then checks every endpoint's charge against the catalog's price.
	UnitsSpent func() int64
	// HTTP sends the requests; default http.DefaultClient.
	HTTP *http.Client
}

type suite struct {
	cfg  Config
	http *http.Client
}

// Run checks the implementation at cfg.BaseURL against the contract. Most
// checks run as parallel subtests, after the caller returns: keep the server
// up with t.Cleanup, not defer.
func Run(t *testing.T, cfg Config) {
	if cfg.Target == "" {
		cfg.Target = "n240.example"
	}
	if cfg.Other == "" {
		cfg.Other = "example.com"
	}
	s := &suite{cfg: cfg, http: cfg.HTTP}
	if s.http == nil {
		s.http = http.DefaultClient
	}
	require.NotEmpty(t, cfg.BaseURL, "apitest: Config.BaseURL")
	require.NotEmpty(t, cfg.Key, "apitest: Config.Key")
	require.False(t, cfg.Now.IsZero(), "apitest: Config.Now")

	// Charges first and alone, so no other request moves the counter.
	if cfg.UnitsSpent != nil {
		t.Run("charges", s.charges)
	}
	t.Run("auth", s.auth)
	t.Run("consistency", s.consistency)
	for _, ep := range catalog.All() {
		t.Run(ep.Name, func(t *testing.T) {
			t.Parallel()
			t.Run("fields", func(t *testing.T) { t.Parallel(); s.fields(t, ep) })
			t.Run("bounds", func(t *testing.T) { t.Parallel(); s.bounds(t, ep) })
			if _, ok := ep.Param("offset"); ok {
				t.Run("paging", func(t *testing.T) { t.Parallel(); s.paging(t, ep) })
			}
			if _, ok := ep.Param("order_by"); ok {
				t.Run("ordering", func(t *testing.T) { t.Parallel(); s.ordering(t, ep) })
			}
			if _, ok := ep.Param("filter"); ok {
				t.Run("filter", func(t *testing.T) { t.Parallel(); s.filters(t, ep) })
			}
		})
	}
}

// base returns the required parameters of a request to ep about target.
func (s *suite) base(ep *catalog.Endpoint, target string) url.Values {
	q := url.Values{}
	if _, ok := ep.Param("url"); ok {
		q.Set("url", target)
	}
	if _, ok := ep.Param("domain"); ok {
		q.Set("domain", target)
	}
	if _, ok := ep.Param("urls"); ok {
		q.Set("urls", target+","+s.cfg.Other)
	}
	if _, ok := ep.Param("keyword"); ok {
		q.Set("keyword", "seo tools")
		q.Set("country", "US")
	}
	if len(ep.Scopes) > 0 {
		q.Set("scope", string(ep.Scopes[0]))
	}
	return q
}

// all fetches every row of ep for q as JSON (limit = total where there is
// a limit) and returns them with meta.
func (s *suite) all(t *testing.T, ep *catalog.Endpoint, q url.Values) ([]map[string]any, envelope) {
	t.Helper()
	env := s.json(t, ep, q)
	if _, ok := ep.Param("limit"); ok && ep.Shape == catalog.List {
		total := env.total(t)
		require.LessOrEqual(t, total, 5000, "%s: the suite's target is too large to list whole", ep.Name)
		if total > len(env.rows(t, ep)) {
			env = s.json(t, ep, with(q, "limit", strconv.Itoa(total)))
		}
	}
	rows := env.rows(t, ep)
	if env.Meta["total"] != nil {
		require.Len(t, rows, env.total(t), "%s: meta.total and the rows of a whole listing", ep.Name)
	}
	return rows, env
}

var (
	timestampRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$`)
	dateRE      = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	digitsRE    = regexp.MustCompile(`^\d+$`)
	decimalRE   = regexp.MustCompile(`^\d+(\.\d+)?$`)
)

// checkKind requires v, a JSON value, to be of kind k (nil is allowed:
// the API sends null for absent values).
func checkKind(t *testing.T, where string, k catalog.Kind, v any) {
	t.Helper()
	if v == nil {
		return
	}
	switch k {
	case catalog.Int:
		n, ok := v.(json.Number)
		require.True(t, ok, "%s: want an integer, got %T %v", where, v, v)
		_, err := n.Int64()
		require.NoError(t, err, "%s: want an integer, got %s", where, n)
	case catalog.Float:
		_, ok := v.(json.Number)
		require.True(t, ok, "%s: want a number, got %T %v", where, v, v)
	case catalog.Text:
		_, ok := v.(string)
		require.True(t, ok, "%s: want a string, got %T %v", where, v, v)
	case catalog.Bool:
		_, ok := v.(bool)
		require.True(t, ok, "%s: want a boolean, got %T %v", where, v, v)
	case catalog.Timestamp:
		require.Regexp(t, timestampRE, v, "%s: want YYYY-MM-DDTHH:MM:SS", where)
	case catalog.Date:
		require.Regexp(t, dateRE, v, "%s: want YYYY-MM-DD", where)
	case catalog.IntString:
		require.Regexp(t, digitsRE, v, "%s: want a string of digits", where)
		_, ok := v.(string)
		require.True(t, ok, "%s: want a string holding digits, got %T", where, v)
	case catalog.DecString:
		_, ok := v.(string)
		require.True(t, ok, "%s: want a string holding a number, got %T", where, v)
		require.Regexp(t, decimalRE, v, "%s: want a decimal", where)
	case catalog.TextList, catalog.IntList:
		items, ok := v.([]any)
		require.True(t, ok, "%s: want an array, got %T %v", where, v, v)
		item := catalog.Text
		if k == catalog.IntList {
			item = catalog.Int
		}
		for i, it := range items {
			require.NotNil(t, it, "%s[%d]: null in a list", where, i)
			checkKind(t, fmt.Sprintf("%s[%d]", where, i), item, it)
		}
	default:
		t.Fatalf("%s: the suite does not know kind %v", where, k)
	}
}

// fields checks names and types of JSON rows, the CSV header in default
// and requested order, and that CSV and JSON carry the same values.
func (s *suite) fields(t *testing.T, ep *catalog.Endpoint) {
	q := s.base(ep, s.cfg.Target)
	names := ep.FieldNames()
	if _, ok := ep.Param("fields"); ok {
		q.Set("fields", strings.Join(names, ","))
	}
	env := s.json(t, ep, q)
	for _, echo := range ep.Echoes {
		require.Contains(t, env.Meta, echo, "%s: meta does not echo %s", ep.Name, echo)
	}
	rows := env.rows(t, ep)
	for i, row := range rows {
		require.ElementsMatch(t, names, keys(row), "%s row %d: the fields of the row", ep.Name, i)
		for _, f := range ep.Fields {
			checkKind(t, fmt.Sprintf("%s row %d %s", ep.Name, i, f.Name), f.Kind, row[f.Name])
		}
	}
	if ep.JSONOnly {
		e := fails(t, s.get(t, ep, with(q, "format", "csv")), http.StatusBadRequest)
		require.Contains(t, e.Error.Message+string(joinRaw(e.Error.Details)), "format")
		return
	}
	header, recs := s.csv(t, ep, q)
	require.Equal(t, names, header, "%s: CSV columns in the catalog's order", ep.Name)
	require.Len(t, recs, len(rows), "%s: CSV and JSON rows", ep.Name)
	for i, rec := range recs {
		for j, name := range header {
			require.Equal(t, cell(rows[i][name]), rec[j], "%s row %d %s: CSV and JSON differ", ep.Name, i, name)
		}
	}

	// The default CSV columns keep the catalog's order.
	dq := clone(q)
	dq.Del("fields")
	header, _ = s.csv(t, ep, dq)
	require.True(t, isSubsequence(header, names), "%s: default CSV columns %v are not in the catalog's order %v", ep.Name, header, names)

	// fields in another order gives the columns in that order.
	if _, ok := ep.Param("fields"); ok && len(names) > 1 {
		rev := slices.Clone(names)
		slices.Reverse(rev)
		header, _ = s.csv(t, ep, with(q, "fields", strings.Join(rev, ",")))
		require.Equal(t, rev, header, "%s: CSV columns follow fields", ep.Name)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func isSubsequence(sub, of []string) bool {
	i := 0
	for _, x := range of {
		if i < len(sub) && sub[i] == x {
			i++
		}
	}
	return i == len(sub) && len(sub) > 0
}

func joinRaw(raw []json.RawMessage) []byte {
	var b []byte
	for _, r := range raw {
		b = append(b, r...)
	}
	return b
}

// paging checks that pages of limit L at offsets 0, L, 2L, ... give exactly
// the whole listing, in the default order and in another.
func (s *suite) paging(t *testing.T, ep *catalog.Endpoint) {
	q := s.base(ep, s.cfg.Target)
	orders := []url.Values{q}
	if f := firstOf(ep, catalog.Int); f != "" && f != ep.DefaultOrder {
		orders = append(orders, with(q, "order_by", f, "direction", "ASC"))
	}
	for _, oq := range orders {
		whole, env := s.all(t, ep, oq)
		total := env.total(t)
		const limit = 37
		var paged []map[string]any
		for offset := 0; offset < total+limit; offset += limit {
			page := s.json(t, ep, with(oq, "limit", strconv.Itoa(limit), "offset", strconv.Itoa(offset)))
			require.Equal(t, total, page.total(t), "%s: meta.total changes with the offset", ep.Name)
			rows := page.rows(t, ep)
			require.Equal(t, min(limit, max(0, total-offset)), len(rows), "%s offset %d: rows on the page", ep.Name, offset)
			paged = append(paged, rows...)
		}
		require.Equal(t, render(whole), render(paged), "%s %s: pages differ from the whole listing (gap or overlap)", ep.Name, oq.Encode())
	}
}

func render(rows []map[string]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		ks := keys(r)
		slices.Sort(ks)
		var b strings.Builder
		for _, k := range ks {
			fmt.Fprintf(&b, "%s=%s;", k, cell(r[k]))
		}
		out[i] = b.String()
	}
	return out
}

// firstOf returns the first row field of kind k ("" when none).
func firstOf(ep *catalog.Endpoint, k catalog.Kind) string {
	for _, f := range ep.Fields {
		if f.Kind == k {
			return f.Name
		}
	}
	return ""
}

// ordering checks the default order and every sortable field both ways.
func (s *suite) ordering(t *testing.T, ep *catalog.Endpoint) {
	q := s.base(ep, s.cfg.Target)
	check := func(field, direction string, rows []map[string]any) {
		f, ok := ep.Field(field)
		require.True(t, ok, "%s: order field %s", ep.Name, field)
		for i := 1; i < len(rows); i++ {
			c := compare(f.Kind, rows[i-1][field], rows[i][field])
			if direction == "ASC" {
				require.LessOrEqual(t, c, 0, "%s by %s ASC: row %d before row %d", ep.Name, field, i-1, i)
			} else {
				require.GreaterOrEqual(t, c, 0, "%s by %s DESC: row %d before row %d", ep.Name, field, i-1, i)
			}
		}
	}
	if ep.DefaultOrder != "" {
		rows, env := s.all(t, ep, q)
		require.Equal(t, ep.DefaultOrder, env.Meta["order_by"], "%s: meta.order_by echoes the default", ep.Name)
		check(ep.DefaultOrder, "DESC", rows)
	}
	for _, f := range ep.Fields {
		switch f.Kind {
		case catalog.Int, catalog.Float, catalog.Timestamp, catalog.Text:
		default:
			continue
		}
		for _, dir := range []string{"ASC", "DESC"} {
			rows, _ := s.all(t, ep, with(q, "order_by", f.Name, "direction", dir))
			check(f.Name, dir, rows)
		}
	}
}

// compare orders two JSON values of kind k (nil first).
func compare(k catalog.Kind, a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch k {
	case catalog.Int, catalog.Float:
		x, _ := strconv.ParseFloat(cell(a), 64)
		y, _ := strconv.ParseFloat(cell(b), 64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return strings.Compare(cell(a), cell(b))
}

// bounds sends one past every bound of every parameter and requires a 400
// that names the parameter.
func (s *suite) bounds(t *testing.T, ep *catalog.Endpoint) {
	q := s.base(ep, s.cfg.Target)
	names := func(e apiError) string { return e.Error.Message + " " + string(joinRaw(e.Error.Details)) }
	bad := func(param string, q url.Values) {
		t.Helper()
		e := fails(t, s.get(t, ep, q), http.StatusBadRequest)
		require.Contains(t, names(e), param, "%s?%s: the 400 does not name %s", ep.Name, q.Encode(), param)
	}
	good := s.get(t, ep, q)
	require.Equal(t, http.StatusOK, good.status, "%s?%s: %s", ep.Name, q.Encode(), good.body)

	now := s.cfg.Now.UTC()
	for _, p := range ep.Params {
		if p.Required {
			qq := clone(q)
			qq.Del(p.Name)
			bad(p.Name, qq)
		}
		switch p.Kind {
		case catalog.PInt:
			bad(p.Name, with(q, p.Name, strconv.Itoa(p.Min-1)))
			if p.Max > 0 {
				bad(p.Name, with(q, p.Name, strconv.Itoa(p.Max+1)))
			}
			bad(p.Name, with(q, p.Name, "ten"))
		case catalog.PString:
			if p.MaxLen > 0 {
				bad(p.Name, with(q, p.Name, strings.Repeat("a", p.MaxLen+1)))
			}
			if p.MinLen > 0 {
				bad(p.Name, with(q, p.Name, ""))
			}
			if p.Name == "order_by" {
				bad(p.Name, with(q, p.Name, "no_such_field"))
			}
		case catalog.PEnum, catalog.PDirection:
			bad(p.Name, with(q, p.Name, "NO_SUCH_VALUE"))
		case catalog.PList:
			if p.Max > 0 {
				urls := make([]string, p.Max+1)
				for i := range urls {
					urls[i] = fmt.Sprintf("site%d.example", i)
				}
				bad(p.Name, with(q, p.Name, strings.Join(urls, ",")))
			}
			if p.Name == "fields" {
				bad(p.Name, with(q, p.Name, "no_such_field"))
			}
		case catalog.PMonth:
			bad(p.Name, with(q, p.Name, "2026-13"))
			if p.MinMonth != "" {
				first, err := time.Parse("2006-01", p.MinMonth)
				require.NoError(t, err)
				bad(p.Name, with(q, p.Name, first.AddDate(0, -1, 0).Format("2006-01")))
			}
			if p.UpToNow {
				bad(p.Name, with(q, p.Name, time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01")))
			}
		case catalog.PFilter:
			bad(p.Name, with(q, p.Name, "no_such_field > 1"))
			bad(p.Name, with(q, p.Name, "(("))
		}
	}
	// A scope the endpoint does not allow.
	for _, sc := range catalog.AllScopes {
		if len(ep.Scopes) > 0 && !ep.AllowsScope(sc) {
			bad("scope", with(q, "scope", string(sc)))
		}
	}
	// order_by must be among the fields returned.
	if _, ok := ep.Param("order_by"); ok {
		if _, ok := ep.Param("fields"); ok && len(ep.Fields) > 1 {
			bad("order_by", with(q, "fields", ep.Fields[0].Name, "order_by", ep.Fields[1].Name))
		}
	}
	// A parameter the endpoint does not take.
	bad("no_such_param", with(q, "no_such_param", "1"))
}

// auth checks both ways of sending the key and both ways of failing.
func (s *suite) auth(t *testing.T) {
	t.Parallel()
	ep, _ := catalog.Lookup("overview")
	q := s.base(ep, s.cfg.Target)
	require.Equal(t, http.StatusOK, s.call(t, ep.Path, q, s.cfg.Key).status, "the Authorization header")
	require.Equal(t, http.StatusOK, s.call(t, ep.Path, with(q, "key", s.cfg.Key), "").status, "the key query parameter")
	fails(t, s.call(t, ep.Path, q, ""), http.StatusUnauthorized)
	fails(t, s.call(t, ep.Path, q, "no-such-key-0000"), http.StatusUnauthorized)
	fails(t, s.call(t, ep.Path, with(q, "key", "no-such-key-0000"), ""), http.StatusUnauthorized)
	fails(t, s.call(t, "/apis/v4/backlinks/v1/no-such-endpoint", q, s.cfg.Key), http.StatusNotFound)
}

// charges checks each endpoint's price: per request, or per line returned.
func (s *suite) charges(t *testing.T) {
	for _, ep := range catalog.All() {
		q := s.base(ep, s.cfg.Target)
		before := s.cfg.UnitsSpent()
		rows := s.json(t, ep, q).rows(t, ep)
		require.Equal(t, ep.Price.Cost(len(rows)), s.cfg.UnitsSpent()-before, "%s: charged for %d rows at %s", ep.Name, len(rows), ep.Price)
		before = s.cfg.UnitsSpent()
		fails(t, s.get(t, ep, with(q, "no_such_param", "1")), http.StatusBadRequest)
		require.Equal(t, before, s.cfg.UnitsSpent(), "%s: a failed request costs nothing", ep.Name)
	}
}
