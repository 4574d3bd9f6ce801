package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
)

// The desired relation: a table or view of the user's, one row per
// location. Its columns are named after the request fields of spec 2.14
// (catalog.LocationFields with InRequest), either as the spec spells them
// (camelCase, "locationName") or in snake case ("location_name", the
// names of listings_current), in any case (created unquoted, locationName
// is locationname); the id may also be named location_id, as in
// listings_current. Every request field needs a column, since the push
// sends the whole location (spec 4.5 rule 5): a column missing is an
// error that names it, and so is a field given by two columns. Other
// columns are ignored; a column named account, when there is one, limits
// the rows to the account pushed.
//
// Types: a string field needs a column of a string type (text, varchar,
// char, citext...), NULL meaning empty; businessHours and holidayHours a
// json or jsonb column, or a string column holding JSON; reopenDate a date
// or string column. A column of another type refuses each location, with
// the field and the reason; so does a value that is no JSON, or of the
// wrong JSON type.

// ErrRelation is matched by the errors about the relation itself: its
// name, its existence, its columns.
var ErrRelation = errors.New("the relation of the desired locations cannot be used")

// parseRelation reads a relation name, [schema.]name, each part a plain
// SQL identifier (letters, digits, _ and $, not starting with a digit;
// folded to lower case as PostgreSQL does) or a double-quoted one ("" for
// a quote inside). It refuses anything else, semicolons and stray quotes
// included, with the reason.
func parseRelation(s string) (pgx.Identifier, error) {
	bad := func(format string, args ...any) (pgx.Identifier, error) {
		return nil, fmt.Errorf("%w: %q is not a relation name ([schema.]name): %s", ErrRelation, s, fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(s) == "" {
		return bad("it is empty")
	}
	var parts pgx.Identifier
	rest := s
	for {
		var part string
		if strings.HasPrefix(rest, `"`) {
			i := 1
			var b strings.Builder
			for {
				j := strings.IndexByte(rest[i:], '"')
				if j < 0 {
					return bad("a quoted name is not closed")
				}
				b.WriteString(rest[i : i+j])
				i += j + 1
				if strings.HasPrefix(rest[i:], `"`) {
					b.WriteByte('"')
					i++
					continue
				}
				break
			}
			part, rest = b.String(), rest[i:]
			if part == "" {
				return bad("a quoted name is empty")
			}
			if strings.ContainsRune(part, 0) {
				return bad("a name holds a NUL character")
			}
		} else {
			end := strings.IndexByte(rest, '.')
			if end < 0 {
				end = len(rest)
			}
			part, rest = rest[:end], rest[end:]
			for i, r := range part {
				if !(r == '_' || unicode.IsLetter(r) || (i > 0 && (unicode.IsDigit(r) || r == '$'))) {
					return bad("%q may not be in an unquoted name (quote the name with \" to use it)", r)
				}
			}
			if part == "" {
				return bad("a part of the name is empty")
			}
			part = strings.ToLower(part)
		}
		parts = append(parts, part)
		if rest == "" {
			break
		}
		if !strings.HasPrefix(rest, ".") {
			return bad("%q follows a quoted name", rest[:1])
		}
		rest = rest[1:]
		if len(parts) == 2 {
			return bad("at most a schema and a name")
		}
	}
	return parts, nil
}

// snake is the snake-case form of a camelCase name: locationName is
// location_name.
func snake(name string) string {
	var b strings.Builder
	for _, r := range name {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// columnNames are the column names a field may be given by.
func columnNames(f catalog.LocationField) []string {
	names := []string{f.Name}
	if s := snake(f.Name); s != f.Name {
		names = append(names, s)
	}
	if f.Use == catalog.UseID {
		names = append(names, "location_id")
	}
	return names
}

// column is the column of a field in the relation.
type column struct {
	field catalog.LocationField
	name  string
	typ   string // format_type
	kind  string // how it is read: "text", "json", "date"; "" a type the field cannot take
}

// relation is the desired relation, inspected.
type relation struct {
	ident   pgx.Identifier
	name    string // as given
	columns []column
	account string // its column account (in any case), "" when none
}

// inspect finds the relation and its columns.
func inspect(ctx context.Context, q querier, name string) (*relation, error) {
	ident, err := parseRelation(name)
	if err != nil {
		return nil, err
	}
	var oid *uint32
	if err := q.QueryRow(ctx, `SELECT to_regclass($1)::oid`, ident.Sanitize()).Scan(&oid); err != nil {
		return nil, fmt.Errorf("looking up the relation %s: %w", name, err)
	}
	if oid == nil {
		return nil, fmt.Errorf("%w: relation %s does not exist (or this role cannot see it): create a table or view with one row per location id", ErrRelation, name)
	}
	rows, err := q.Query(ctx, `
		SELECT a.attname, format_type(a.atttypid, a.atttypmod), t.typcategory, t.typname
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, *oid)
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", name, err)
	}
	type col struct{ typ, cat, typname string }
	cols := map[string]col{}
	for rows.Next() {
		var n, typ, cat, typname string
		if err := rows.Scan(&n, &typ, &cat, &typname); err != nil {
			return nil, fmt.Errorf("reading the columns of %s: %w", name, err)
		}
		cols[n] = col{typ, cat, typname}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", name, err)
	}
	// Names compare in any case: a column created unquoted as
	// locationName is locationname.
	folded := map[string][]string{}
	for n := range cols {
		folded[strings.ToLower(n)] = append(folded[strings.ToLower(n)], n)
	}
	for _, ns := range folded {
		slices.Sort(ns)
	}
	r := &relation{ident: ident, name: name}
	if acc := folded["account"]; len(acc) > 0 {
		r.account = acc[0]
	}
	var missing, twice []string
	for _, f := range catalog.LocationFields {
		if !f.InRequest() {
			continue
		}
		var found []string
		for _, n := range columnNames(f) {
			found = append(found, folded[strings.ToLower(n)]...)
		}
		switch len(found) {
		case 0:
			missing = append(missing, strings.Join(quoteAll(columnNames(f)), " or "))
			continue
		case 1:
		default:
			twice = append(twice, fmt.Sprintf("%s by %s", f.Name, strings.Join(quoteAll(found), " and ")))
			continue
		}
		c := cols[found[0]]
		kind := ""
		switch {
		case c.cat == "S":
			kind = "text"
			if f.Type != catalog.LString {
				kind = "jsontext"
			}
		case f.Type != catalog.LString && (c.typname == "json" || c.typname == "jsonb"):
			kind = "json"
		case f.Name == "reopenDate" && c.typname == "date":
			kind = "date"
		}
		if f.Use == catalog.UseID && kind != "text" {
			return nil, fmt.Errorf("%w: the id column %q of %s is of type %s; it must be of a string type (text)", ErrRelation, found[0], name, c.typ)
		}
		r.columns = append(r.columns, column{field: f, name: found[0], typ: c.typ, kind: kind})
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s has no column %s (one column per request field of spec 2.14, named as the spec spells it or in snake case, in any case; the push sends the whole location)",
			ErrRelation, name, strings.Join(missing, ", no column "))
	}
	if len(twice) > 0 {
		return nil, fmt.Errorf("%w: %s gives a field by two columns: %s; keep one", ErrRelation, name, strings.Join(twice, "; "))
	}
	return r, nil
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = `"` + n + `"`
	}
	return out
}

// desired is one row of the relation, read.
type desired struct {
	id       string
	null     bool // the id is NULL
	loc      listing.Location
	problems []listing.Problem
}

// read reads the rows of the relation (those of the account when it has
// a column account; those of only when it is not empty), in id order.
func (r *relation) read(ctx context.Context, q querier, account string, only []string) ([]desired, error) {
	var sel []string
	for _, c := range r.columns {
		ident := pgx.Identifier{c.name}.Sanitize()
		switch c.kind {
		case "text", "json", "jsontext":
			sel = append(sel, ident+"::text")
		case "date":
			sel = append(sel, "to_char("+ident+", 'YYYY-MM-DD')")
		default:
			sel = append(sel, "NULL::text")
		}
	}
	idCol := pgx.Identifier{r.columns[0].name}.Sanitize()
	sql := "SELECT " + strings.Join(sel, ", ") + " FROM " + r.ident.Sanitize() + " WHERE true"
	var args []any
	if r.account != "" {
		args = append(args, account)
		sql += fmt.Sprintf(" AND %s::text = $%d", pgx.Identifier{r.account}.Sanitize(), len(args))
	}
	if len(only) > 0 {
		args = append(args, only)
		sql += fmt.Sprintf(" AND %s::text = ANY($%d)", idCol, len(args))
	}
	sql += " ORDER BY " + idCol + "::text"
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("reading the desired locations from %s: %w", r.name, err)
	}
	defer rows.Close()
	var out []desired
	vals := make([]*string, len(r.columns))
	ptrs := make([]any, len(r.columns))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("reading the desired locations from %s: %w", r.name, err)
		}
		out = append(out, r.row(vals))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the desired locations from %s: %w", r.name, err)
	}
	return out, nil
}

// row turns the values of a row into a desired location.
func (r *relation) row(vals []*string) desired {
	fields := map[string]json.RawMessage{}
	var problems []listing.Problem
	for i, c := range r.columns {
		v := vals[i]
		switch {
		case c.kind == "":
			problems = append(problems, listing.Problem{Code: listing.CodeInvalidType, Field: c.field.Name,
				Message: fmt.Sprintf("%s must be %s; its column %q is of type %s", c.field.Name, wants(c.field), c.name, c.typ)})
		case v == nil:
			fields[c.field.Name] = json.RawMessage("null")
		case (c.kind == "json" || c.kind == "jsontext") && holdsNUL(*v):
			problems = append(problems, listing.Problem{Code: CodeNUL, Field: c.field.Name,
				Message: fmt.Sprintf(`%s holds the character \u0000 (NUL), which no text of PostgreSQL can hold; remove it`, c.field.Name)})
			fields[c.field.Name] = json.RawMessage("null")
		case c.kind == "json" || c.kind == "jsontext":
			fields[c.field.Name] = json.RawMessage(*v)
		default:
			b, _ := json.Marshal(*v)
			fields[c.field.Name] = b
		}
	}
	loc, more := listing.ParseDesired(fields)
	problems = append(problems, more...)
	d := desired{id: loc.ID, null: vals[0] == nil, loc: loc, problems: problems}
	return d
}

// holdsNUL reports whether the JSON text v holds a NUL character in a
// string or a member name (escaped, \u0000: a json column may hold one,
// a text or jsonb column cannot). Text that is no JSON holds none here.
func holdsNUL(v string) bool {
	if !strings.Contains(v, `\u0000`) {
		return false
	}
	var x any
	if json.Unmarshal([]byte(v), &x) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(x any) bool {
		switch x := x.(type) {
		case string:
			return strings.ContainsRune(x, 0)
		case []any:
			return slices.ContainsFunc(x, walk)
		case map[string]any:
			for k, e := range x {
				if strings.ContainsRune(k, 0) || walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(x)
}

// wants is what a column of the field must hold.
func wants(f catalog.LocationField) string {
	switch {
	case f.Name == "reopenDate":
		return "a date (a date column, or text yyyy-mm-dd)"
	case f.Type == catalog.LString:
		return "a string (a text column)"
	}
	return "JSON " + f.Type.String() + " (a json or jsonb column, or text holding JSON)"
}

// sortProblems orders problems by field, as listing does.
func sortProblems(ps []listing.Problem) {
	rank := func(field string) int {
		name, _, _ := strings.Cut(field, ".")
		return slices.IndexFunc(catalog.LocationFields, func(f catalog.LocationField) bool { return f.Name == name })
	}
	slices.SortStableFunc(ps, func(a, b listing.Problem) int { return rank(a.Field) - rank(b.Field) })
}

// CheckRelation reports whether s names a relation as Config.Relation
// must ([schema.]name, each part a plain or double-quoted SQL
// identifier), for a job spec read before any push runs. Whether the
// relation exists is known only when the push runs.
func CheckRelation(s string) error {
	_, err := parseRelation(s)
	return err
}
