package catalog_test

import (
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// The tests below check the catalog against the interface specification in
// testdata/data-api-spec.md. They read the spec's markdown tables and prose
// instead of keeping a second copy of them, so a change to either side that
// the other does not follow fails here.

// spec is the parsed specification: its sections by number ("2.1", "8.3").
type spec struct {
	sections map[string][]string
}

var headingNumber = regexp.MustCompile(`^#{2,3} (\d+(?:\.\d+)?)\b`)

func readSpec(t *testing.T) spec {
	t.Helper()
	data, err := os.ReadFile("testdata/data-api-spec.md")
	require.NoError(t, err)
	s := spec{sections: map[string][]string{}}
	current := ""
	for _, line := range strings.Split(string(data), "\n") {
		if m := headingNumber.FindStringSubmatch(line); m != nil {
			current = m[1]
			continue
		}
		if current != "" {
			s.sections[current] = append(s.sections[current], line)
		}
	}
	return s
}

// section returns the lines of section n, failing when there is none.
func (s spec) section(t *testing.T, n string) []string {
	t.Helper()
	lines, ok := s.sections[n]
	require.True(t, ok, "the spec has no section %s", n)
	return lines
}

// table is a markdown table: its header cells and its rows keyed by them.
type table struct {
	header []string
	rows   []map[string]string
}

// tables returns the markdown tables of section n, in order.
func (s spec) tables(t *testing.T, n string) []table {
	t.Helper()
	var out []table
	var cur *table
	for _, line := range s.section(t, n) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			cur = nil
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case cur == nil:
			out = append(out, table{header: cells})
			cur = &out[len(out)-1]
		case strings.Trim(strings.Join(cells, ""), "-: ") == "":
			// the separator row
		default:
			require.Len(t, cells, len(cur.header), "section %s: row %q", n, line)
			row := map[string]string{}
			for i, h := range cur.header {
				row[h] = cells[i]
			}
			cur.rows = append(cur.rows, row)
		}
	}
	return out
}

// table returns the only table of section n.
func (s spec) table(t *testing.T, n string) table {
	t.Helper()
	tables := s.tables(t, n)
	require.Len(t, tables, 1, "section %s", n)
	require.NotEmpty(t, tables[0].rows, "section %s", n)
	return tables[0]
}

// text is section n as one string.
func (s spec) text(t *testing.T, n string) string {
	t.Helper()
	return strings.Join(s.section(t, n), "\n")
}

// catalogName maps an endpoint's name in the spec's tables to its catalog
// name.
func catalogName(specName string) string {
	if specName == "keyword metrics" {
		return "keyword-metrics"
	}
	return specName
}

func lookup(t *testing.T, name string) *catalog.Endpoint {
	t.Helper()
	ep, ok := catalog.Lookup(name)
	require.True(t, ok, "the catalog has no endpoint %q (it has %v)", name, catalog.Names())
	return ep
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// specEndpoint is what sections 4.3 and 4.4 say about one endpoint.
type specEndpoint struct {
	name     string // the catalog's name: the last element of the path
	path     string
	params   string // the spec's parameter description
	rowsIn   string // the section that describes the rows ("2.4")
	specName string
}

var seeSection = regexp.MustCompile(`(?:see|as in) (2\.\d+)`)

// endpoints reads the backlink endpoints of 4.3 and keyword metrics of 4.4.
func (s spec) endpoints(t *testing.T) []specEndpoint {
	t.Helper()
	var out []specEndpoint
	for _, row := range s.tables(t, "4.3")[0].rows {
		method, p, ok := strings.Cut(row["Method and path"], " ")
		require.True(t, ok, "4.3: %q", row["Method and path"])
		require.Equal(t, "GET", method)
		m := seeSection.FindStringSubmatch(row["Response data"])
		require.NotNil(t, m, "4.3 %s: no section for the response data", p)
		out = append(out, specEndpoint{
			name: path.Base(p), path: p, params: row["Parameters"], rowsIn: m[1], specName: row["Operation"],
		})
	}
	text := s.text(t, "4.4")
	p := regexp.MustCompile("path: `([^`]+)`").FindStringSubmatch(text)
	require.NotNil(t, p, "4.4 names no path")
	m := seeSection.FindStringSubmatch(text)
	require.NotNil(t, m, "4.4 names no section for the response data")
	var params []string
	for _, row := range s.table(t, "4.4").rows {
		params = append(params, row["Parameter"])
	}
	out = append(out, specEndpoint{
		name: catalogName("keyword metrics"), path: p[1], params: strings.Join(params, ", "), rowsIn: m[1], specName: "keyword metrics",
	})
	require.Len(t, out, len(catalog.All()), "4.3 and 4.4 list a different number of endpoints than the catalog")
	return out
}

// TestCSVColumnOrder checks every endpoint's fields against the column
// order table of 2.1: same names, same order.
func TestCSVColumnOrder(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	tbl := s.table(t, "2.1")
	seen := map[string]bool{}
	for _, row := range tbl.rows {
		name := catalogName(row["Endpoint"])
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ep := lookup(t, name)
			require.True(t, ep.AllowsCSV(), "2.1 lists CSV columns for %s", name)
			require.Equal(t, splitList(row["Columns"]), ep.FieldNames(), "2.1: the CSV column order of %s", name)
		})
	}
	for _, ep := range catalog.All() {
		t.Run("listed/"+ep.Name, func(t *testing.T) {
			t.Parallel()
			if ep.AllowsCSV() {
				require.True(t, seen[ep.Name], "2.1 has no CSV column order for %s, yet the catalog says it answers CSV", ep.Name)
				return
			}
			require.False(t, seen[ep.Name], "2.1 lists CSV columns for %s, yet the catalog says it is JSON only", ep.Name)
			require.Contains(t, s.text(t, "2.1"), "The "+ep.Name+" endpoint returns JSON only.")
		})
	}
}

// specField is a field of a row section (2.2 to 2.13).
type specField struct {
	name, typ, meaning string
}

var (
	allFieldsAre = regexp.MustCompile(`All fields are (\w+?)s?\.`)
	proseToken   = regexp.MustCompile("`([a-z_]+)`|\\(([^)]*)\\)")
)

// rowFields reads the fields of row section n: from its table (Field, a
// type column, Meaning; or no type column and "All fields are integers."),
// or, where the section has no table, from prose such as
// "`domain` (string), `similarity` (number 0-1)".
func (s spec) rowFields(t *testing.T, n string) []specField {
	t.Helper()
	var out []specField
	if tables := s.tables(t, n); len(tables) > 0 {
		require.Len(t, tables, 1, "section %s", n)
		typeCol := ""
		for _, h := range tables[0].header {
			if strings.Contains(strings.ToLower(h), "type") {
				typeCol = h
			}
		}
		all := ""
		if typeCol == "" {
			m := allFieldsAre.FindStringSubmatch(s.text(t, n))
			require.NotNil(t, m, "section %s has neither a type column nor says what all fields are", n)
			all = m[1]
		}
		for _, row := range tables[0].rows {
			f := specField{name: row["Field"], typ: all, meaning: row["Meaning"]}
			if typeCol != "" {
				f.typ = row[typeCol]
			}
			out = append(out, f)
		}
		return out
	}
	for _, para := range strings.Split(s.text(t, n), "\n\n") {
		var pending []string
		for _, m := range proseToken.FindAllStringSubmatch(para, -1) {
			if m[1] != "" {
				pending = append(pending, m[1])
				continue
			}
			if len(pending) == 0 {
				continue
			}
			typ, meaning, _ := strings.Cut(m[2], " ")
			typ = strings.TrimRight(typ, ",;")
			if len(pending) > 1 {
				typ = strings.TrimSuffix(typ, "s") // "(integers)"
			}
			for _, name := range pending {
				out = append(out, specField{name: name, typ: typ, meaning: strings.TrimLeft(meaning, ",; ")})
			}
			pending = nil
		}
	}
	return out
}

// kindsFor is the catalog kinds a field of the spec may have.
func kindsFor(f specField) []catalog.Kind {
	date := strings.Contains(f.meaning, "YYYY-MM-01") || strings.Contains(f.meaning, "YYYY-MM-DD")
	switch f.typ {
	case "integer":
		return []catalog.Kind{catalog.Int}
	case "number":
		return []catalog.Kind{catalog.Float}
	case "boolean":
		return []catalog.Kind{catalog.Bool}
	case "string[]":
		return []catalog.Kind{catalog.TextList}
	case "integer[]":
		return []catalog.Kind{catalog.IntList}
	case "string holding digits":
		return []catalog.Kind{catalog.IntString, catalog.DecString}
	case "string":
		switch {
		case f.meaning == "timestamp":
			return []catalog.Kind{catalog.Timestamp}
		case date:
			return []catalog.Kind{catalog.Date}
		}
		return []catalog.Kind{catalog.Text}
	}
	return nil
}

// TestFieldKinds checks every endpoint's fields and their kinds against the
// row section that 4.3 or 4.4 points to.
func TestFieldKinds(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	for _, se := range s.endpoints(t) {
		t.Run(se.name, func(t *testing.T) {
			t.Parallel()
			ep := lookup(t, se.name)
			fields := s.rowFields(t, se.rowsIn)
			require.NotEmpty(t, fields, "section %s lists no fields", se.rowsIn)
			var names []string
			for _, f := range fields {
				names = append(names, f.name)
			}
			require.ElementsMatch(t, names, ep.FieldNames(), "section %s: the fields of %s", se.rowsIn, ep.Name)
			for _, f := range fields {
				want := kindsFor(f)
				require.NotEmpty(t, want, "section %s: unknown type %q of %s", se.rowsIn, f.typ, f.name)
				got, _ := ep.Field(f.name)
				require.Contains(t, want, got.Kind, "section %s: %s.%s is %q (%s), the catalog says %v", se.rowsIn, ep.Name, f.name, f.typ, f.meaning, got.Kind)
			}
		})
	}
}

// TestPrices checks every endpoint's price against 8.1.
func TestPrices(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	seen := map[string]bool{}
	price := regexp.MustCompile(`^(\d+) (per request|per line)$`)
	for _, row := range s.table(t, "8.1").rows {
		if row["Price"] == "none consumed" {
			continue // listing management: not in the catalog
		}
		name := catalogName(row["Endpoint"])
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := price.FindStringSubmatch(row["Price"])
			require.NotNil(t, m, "8.1: price %q of %s", row["Price"], name)
			units, err := strconv.ParseInt(m[1], 10, 64)
			require.NoError(t, err)
			unit := map[string]catalog.PriceUnit{"per request": catalog.PerRequest, "per line": catalog.PerLine}[m[2]]
			require.Equal(t, catalog.Price{Units: units, Per: unit}, lookup(t, name).Price, "8.1: the price of %s", name)
		})
	}
	for _, ep := range catalog.All() {
		require.True(t, seen[ep.Name], "8.1 has no price for %s", ep.Name)
	}
}

var upperWord = regexp.MustCompile(`\b[A-Z][A-Z_]{2,}\b`)

// TestEndpoints checks paths, scopes, default orders and default field
// lists against 4.1, 4.3 and 4.4.
func TestEndpoints(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	var common []catalog.Scope
	for _, row := range s.table(t, "4.1").rows {
		if row["Parameter"] == "scope" {
			for _, w := range upperWord.FindAllString(row["Rule"], -1) {
				common = append(common, catalog.Scope(w))
			}
		}
	}
	require.NotEmpty(t, common, "4.1 names no scopes")
	require.Equal(t, common, catalog.AllScopes, "4.1: the scopes")

	scopeList := regexp.MustCompile(`\bscope \(([^)]*)\)`)
	defaultOrder := regexp.MustCompile(`order_by \(?default (\w+)`)
	defaultFields := regexp.MustCompile(`fields \(default ([^)]*)\)`)
	for _, se := range s.endpoints(t) {
		t.Run(se.name, func(t *testing.T) {
			t.Parallel()
			ep := lookup(t, se.name)
			require.Equal(t, se.path, ep.Path, "the path of %s", se.specName)

			var scopes []catalog.Scope
			switch m := scopeList.FindStringSubmatch(se.params); {
			case strings.Contains(se.params, "no scope"):
			case m != nil:
				for _, w := range upperWord.FindAllString(m[1], -1) {
					scopes = append(scopes, catalog.Scope(w))
				}
			case strings.Contains(se.params, "common parameters"), regexp.MustCompile(`\bscope\b`).MatchString(se.params):
				scopes = common
			}
			require.Equal(t, scopes, ep.Scopes, "the scopes of %s (%q)", se.name, se.params)
			if scopes != nil {
				p, ok := ep.Param("scope")
				require.True(t, ok, "%s takes no scope parameter", ep.Name)
				require.True(t, p.Required)
				var enum []string
				for _, sc := range scopes {
					enum = append(enum, string(sc))
				}
				require.Equal(t, enum, p.Enum, "the scope parameter of %s", ep.Name)
			} else {
				_, ok := ep.Param("scope")
				require.False(t, ok, "%s takes no scope", ep.Name)
			}

			order := ""
			if m := defaultOrder.FindStringSubmatch(se.params); m != nil {
				order = m[1]
			}
			require.Equal(t, order, ep.DefaultOrder, "the default order_by of %s", ep.Name)
			if p, ok := ep.Param("order_by"); ok {
				require.Equal(t, order, p.Default, "the default of the order_by parameter of %s", ep.Name)
			}

			var fields []string
			if m := defaultFields.FindStringSubmatch(se.params); m != nil {
				fields = splitList(m[1])
			}
			require.Equal(t, fields, ep.DefaultFields, "the default fields of %s", ep.Name)
		})
	}
}

var (
	parenthetical = regexp.MustCompile(`\([^)]*\)`)
	ruleDefault   = regexp.MustCompile(`default (\w+)|(\w+) \(default\)`)
)

// literalDefault returns the default a rule states as a value, or "" when
// it states none or describes one ("default the current month").
func literalDefault(rule string) string {
	m := ruleDefault.FindStringSubmatch(rule)
	if m == nil {
		return ""
	}
	v := m[1] + m[2]
	switch v {
	case "the", "all", "oldest", "current":
		return ""
	}
	return v
}

// TestParams checks every endpoint's query parameters, whether they are
// required and their defaults against 4.1, 4.3 and 4.4.
func TestParams(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	// rules are the rules of a table of parameters, by parameter name.
	rules := func(n string) (names []string, rule map[string]string) {
		rule = map[string]string{}
		for _, row := range s.table(t, n).rows {
			names = append(names, row["Parameter"])
			rule[row["Parameter"]] = row["Rule"]
		}
		return names, rule
	}
	commonNames, common := rules("4.1")
	_, keyword := rules("4.4")

	for _, se := range s.endpoints(t) {
		t.Run(se.name, func(t *testing.T) {
			t.Parallel()
			ep := lookup(t, se.name)
			rule := map[string]string{}
			var names []string
			switch {
			case se.name == catalogName("keyword metrics"):
				names, rule = splitList(se.params), keyword
			case strings.Contains(se.params, "common parameters"):
				names = commonNames
				for _, n := range names {
					rule[n] = common[n]
				}
			default:
				clause, _, _ := strings.Cut(parenthetical.ReplaceAllString(se.params, ""), ";")
				names = splitList(strings.TrimSuffix(strings.TrimSpace(clause), " only"))
				for _, n := range names {
					rule[n] = common[n] // "" for parameters that are not common
				}
			}
			var got []string
			for _, p := range ep.Params {
				got = append(got, p.Name)
			}
			require.ElementsMatch(t, names, got, "the parameters of %s (%q)", ep.Name, se.params)

			for _, name := range names {
				p, _ := ep.Param(name)
				// What the endpoint's own text says overrides the common rule.
				own := regexp.MustCompile(`\b` + name + ` (\([^)]*\)|default \w+)`).FindStringSubmatch(se.params)
				required := strings.HasPrefix(rule[name], "required")
				def := literalDefault(rule[name])
				if own != nil {
					required = required || strings.Contains(own[1], "required")
					if d := literalDefault(own[1]); d != "" || strings.Contains(own[1], "default") {
						def = d
					}
				}
				require.Equal(t, required, p.Required, "is %s of %s required?", name, ep.Name)
				if name == "fields" {
					continue // its default is Endpoint.DefaultFields, checked by TestEndpoints
				}
				require.Equal(t, def, p.Default, "the default of %s of %s (spec: %q %q)", name, ep.Name, rule[name], own)
			}
		})
	}
}

// TestCountries checks the country codes against 4.4.
func TestCountries(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	var codes []string
	for _, line := range s.section(t, "4.4") {
		if rest, ok := strings.CutPrefix(line, "Allowed country values:"); ok {
			codes = splitList(strings.TrimSuffix(strings.TrimSpace(rest), "."))
		}
	}
	require.NotEmpty(t, codes, "4.4 lists no countries")
	require.Equal(t, codes, catalog.Countries)
	p, ok := lookup(t, "keyword-metrics").Param("country")
	require.True(t, ok)
	require.Equal(t, codes, p.Enum)
	for _, c := range codes {
		require.True(t, catalog.ValidCountry(c), c)
	}
	require.False(t, catalog.ValidCountry("GB"), "the spec says UK, not GB")
}

var number = regexp.MustCompile(`\d+`)

// numbers are the integers in s.
func numbers(t *testing.T, s string) []int {
	t.Helper()
	var out []int
	for _, m := range number.FindAllString(s, -1) {
		n, err := strconv.Atoi(m)
		require.NoError(t, err)
		out = append(out, n)
	}
	return out
}

// TestBounds checks the input bounds of 8.3 that concern the catalog.
func TestBounds(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	bounds := map[string]string{}
	for _, row := range s.table(t, "8.3").rows {
		bounds[row["Item"]] = row["Bound"]
	}
	tests := []struct {
		item  string
		check func(t *testing.T, bound string)
	}{
		{"url (backlink endpoints)", func(t *testing.T, bound string) {
			n := numbers(t, bound)
			require.Equal(t, []int{catalog.MaxURLLen}, n)
			for _, ep := range catalog.All() {
				if p, ok := ep.Param("url"); ok {
					require.Equal(t, n[0], p.MaxLen, "url of %s", ep.Name)
					require.True(t, p.Required, "url of %s", ep.Name)
				}
			}
		}},
		{"urls on comparison", func(t *testing.T, bound string) {
			n := numbers(t, bound)
			require.Equal(t, []int{catalog.MaxComparisonURLs}, n)
			p, ok := lookup(t, "comparison").Param("urls")
			require.True(t, ok)
			require.Equal(t, n[0], p.Max)
		}},
		{"urls on matrix", func(t *testing.T, bound string) {
			n := numbers(t, bound)
			require.Equal(t, []int{catalog.MaxMatrixURLs}, n)
			p, ok := lookup(t, "matrix").Param("urls")
			require.True(t, ok)
			require.Equal(t, n[0], p.Max)
		}},
		{"keyword", func(t *testing.T, bound string) {
			n := numbers(t, bound)
			require.Equal(t, []int{catalog.MinKeywordLen, catalog.MaxKeywordLen}, n)
			p, ok := lookup(t, "keyword-metrics").Param("keyword")
			require.True(t, ok)
			require.Equal(t, []int{p.MinLen, p.MaxLen}, n)
		}},
		{"month of keyword metrics", func(t *testing.T, bound string) {
			m := regexp.MustCompile(`from (\d{4}-\d{2}) to the current month`).FindStringSubmatch(bound)
			require.NotNil(t, m, bound)
			require.Equal(t, m[1], catalog.FirstKeywordMonth)
		}},
		{"score-profile rows", func(t *testing.T, bound string) {
			require.Equal(t, []int{catalog.MaxScoreProfileRows}, numbers(t, bound))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.item, func(t *testing.T) {
			t.Parallel()
			bound, ok := bounds[tt.item]
			require.True(t, ok, "8.3 has no bound for %q", tt.item)
			tt.check(t, bound)
		})
	}
}

// TestDefaults checks the page sizes of 8.4.
func TestDefaults(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	m := regexp.MustCompile(`limit (\d+) \(summary (\d+)\)`).FindStringSubmatch(s.text(t, "8.4"))
	require.NotNil(t, m, "8.4 states no default limit")
	require.Equal(t, []string{strconv.Itoa(catalog.DefaultLimit), strconv.Itoa(catalog.DefaultSummaryLimit)}, m[1:])
	for _, ep := range catalog.All() {
		p, ok := ep.Param("limit")
		if !ok {
			continue
		}
		want := m[1]
		if ep.Name == "summary" {
			want = m[2]
		}
		require.Equal(t, want, p.Default, "the default limit of %s", ep.Name)
	}
}

var metaEchoes = regexp.MustCompile(`Meta echoes:? ([^.]+)\.`)

// TestEchoes checks each endpoint's meta echoes against the "Meta echoes"
// sentence of the section that describes its rows (same names; the order
// is not meaningful in JSON). Sections without one give nil.
func TestEchoes(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	for _, se := range s.endpoints(t) {
		t.Run(se.name, func(t *testing.T) {
			t.Parallel()
			var want []string
			if m := metaEchoes.FindStringSubmatch(s.text(t, se.rowsIn)); m != nil {
				for _, item := range splitList(strings.ReplaceAll(m[1], "`", "")) {
					want = append(want, strings.Fields(item)[0]) // "date_to (`YYYY-MM`)" -> date_to
				}
			}
			require.ElementsMatch(t, want, lookup(t, se.name).Echoes)
		})
	}
}
