package pipeline_test

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// sqlText renders a column the way the API's CSV writes the field.
func sqlText(f catalog.Field) string {
	q := pgx.Identifier{f.Name}.Sanitize()
	switch f.Kind {
	case catalog.Bool:
		return fmt.Sprintf("CASE WHEN %[1]s THEN 'true' WHEN NOT %[1]s THEN 'false' END", q)
	case catalog.Timestamp:
		return fmt.Sprintf(`to_char(%s AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')`, q)
	case catalog.Date:
		return fmt.Sprintf(`to_char(%s, 'YYYY-MM-DD')`, q)
	case catalog.TextList, catalog.IntList:
		return fmt.Sprintf("array_to_string(%s, ',')", q)
	}
	return q + "::text"
}

// norm makes two renderings of one value comparable: numbers by value.
func norm(k catalog.Kind, s string) string {
	if (k == catalog.Float || k == catalog.DecString) && s != "" {
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	return s
}

// TestRoundTripEveryEndpoint loads each collected endpoint from the sandbox
// over HTTP, paging where it pages, and compares every column of every
// loaded row with what the sandbox serves; a rerun changes nothing.
func TestRoundTripEveryEndpoint(t *testing.T) {
	t.Parallel()
	const target = "n240.example"
	setURLs := []string{target, "example.com", "n90.example"}
	for _, tc := range []struct {
		endpoint, options string
	}{
		{"overview", "{}"},
		{"summary", "{limit: 12}"},
		{"links", "{limit: 20}"},
		{"ref-domains", "{limit: 10}"},
		{"ref-ips", "{limit: 10}"},
		{"pages", "{limit: 4}"},
		{"anchors", "{limit: 10}"},
		{"score-profile", "{}"},
		{"competitors", "{limit: 10}"},
		{"comparison", "{}"},
		{"matrix", "{limit: 7}"},
		{"keyword-metrics", ""},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			t.Parallel()
			ep, ok := catalog.Lookup(tc.endpoint)
			require.True(t, ok)
			f := newFixture(t)
			spec := "jobs:\n  - name: rt\n"
			served := url.Values{}
			if _, ok := ep.Param("fields"); ok {
				served.Set("fields", strings.Join(ep.FieldNames(), ","))
			}
			where := ""
			format := "csv"
			if ep.JSONOnly {
				format = "json"
			}
			if _, ok := ep.Param("urls"); ok {
				spec += fmt.Sprintf("    target_sets: [{name: rt, scope: ROOT_DOMAIN, urls: [%s]}]\n    endpoints: {%s: %s}\n",
					strings.Join(setURLs, ", "), tc.endpoint, tc.options)
				served.Set("urls", strings.Join(setURLs, ","))
				served.Set("scope", "ROOT_DOMAIN")
				if _, ok := ep.Param("limit"); ok {
					served.Set("limit", "10000")
				}
				where = "set_id = (SELECT set_id FROM target_sets WHERE name = 'rt')"
				if ep.PerTarget {
					where = "target_id IN (SELECT target_id FROM target_set_members JOIN target_sets USING (set_id) WHERE name = 'rt')"
				}
			} else if ep.PerTarget {
				spec += fmt.Sprintf("    targets: [{url: %s, scope: ROOT_DOMAIN}]\n    endpoints: {%s: %s}\n", target, tc.endpoint, tc.options)
				if _, ok := ep.Param("domain"); ok {
					served.Set("domain", target)
				} else {
					served.Set("url", target)
					served.Set("scope", "ROOT_DOMAIN")
				}
				if _, ok := ep.Param("limit"); ok {
					served.Set("limit", "10000")
				}
				if tc.endpoint == "summary" {
					served.Set("limit", "12")
				}
				where = fmt.Sprintf("target_id = (SELECT target_id FROM targets WHERE url = '%s')", target)
			} else {
				spec += "    keywords: {keywords: [seo tools, café], countries: [US, FR], months: [2026-10]}\n"
				where = "true"
			}
			sum := f.Run(t, spec, runNow)
			require.Zero(t, sum.Failed())
			_, rejected, units := sum.Totals()
			require.Zero(t, rejected)
			require.Equal(t, f.Sandbox.Usage("test-key").UnitsSpent, units, "units reported = units the sandbox charged")

			// What the sandbox serves, row by row.
			var want []string
			if ep.PerTarget || ep.PerSet {
				for _, row := range f.servedAs(t, format, ep.Path, served) {
					want = append(want, renderRow(ep, func(name string) string { return row[name] }))
				}
			} else {
				for _, kw := range []string{"seo tools", "café"} {
					for _, c := range []string{"US", "FR"} {
						q := url.Values{"keyword": {kw}, "country": {c}, "month": {"2026-10"}}
						for _, row := range f.served(t, ep.Path, q) {
							want = append(want, renderRow(ep, func(name string) string { return row[name] }))
						}
					}
				}
			}
			require.NotEmpty(t, want)

			// What landed.
			exprs := make([]string, len(ep.Fields))
			for i, fl := range ep.Fields {
				exprs[i] = sqlText(fl)
			}
			rows, err := f.Pool.Query(t.Context(), fmt.Sprintf(`SELECT %s FROM %s WHERE %s`,
				strings.Join(exprs, ", "), pgx.Identifier{ep.Table}.Sanitize(), where))
			require.NoError(t, err)
			got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
				vals := make([]*string, len(ep.Fields))
				ptrs := make([]any, len(vals))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := r.Scan(ptrs...); err != nil {
					return "", err
				}
				return renderRow(ep, func(name string) string {
					i := slices.IndexFunc(ep.Fields, func(f catalog.Field) bool { return f.Name == name })
					if vals[i] == nil {
						return ""
					}
					return *vals[i]
				}), nil
			})
			require.NoError(t, err)
			slices.Sort(want)
			slices.Sort(got)
			require.Equal(t, want, got, "%s: loaded rows differ from served rows", ep.Table)
			if ep.PerSet {
				// One row per domain and requested target, each with its own count.
				require.Equal(t, int64(len(setURLs)*len(got)), f.Count(t, `SELECT count(*) FROM matrix_targets`))
				require.Equal(t, f.Count(t, `SELECT sum(c) FROM matrix, unnest(backlinks_counts) c`),
					f.Count(t, `SELECT sum(backlinks_count) FROM matrix_targets`))
				require.Zero(t, f.Count(t, `SELECT count(*) FROM matrix_targets m JOIN target_sets s USING (set_id)
					WHERE m.url <> s.urls[m.position]`), "matrix_targets pairs each count with its url")
			}

			// A rerun in the same month changes no row.
			before := f.tableHash(t, ep.Table)
			again := f.Run(t, spec, runNow)
			require.Zero(t, again.Failed())
			require.Equal(t, before, f.tableHash(t, ep.Table), "%s changed on rerun", ep.Table)
		})
	}
}

func renderRow(ep *catalog.Endpoint, get func(name string) string) string {
	var b strings.Builder
	for _, f := range ep.Fields {
		fmt.Fprintf(&b, "%s=%q;", f.Name, norm(f.Kind, get(f.Name)))
	}
	return b.String()
}
