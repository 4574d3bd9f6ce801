package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// Kind is the type of a row field as the API sends it and as it lands.
type Kind int

// The kinds of row fields. Each maps to one Arrow type and one PostgreSQL
// type; see ArrowType (package transform) and PGType.
const (
	Int       Kind = iota + 1 // JSON integer; CSV digits; lands as bigint
	Float                     // JSON number; lands as double precision
	Text                      // string; lands as text
	Bool                      // true/false; lands as boolean
	Timestamp                 // YYYY-MM-DDTHH:MM:SS in UTC; lands as timestamptz
	Date                      // YYYY-MM-DD (month_date is YYYY-MM-01); lands as date
	IntString                 // a string holding digits (number_of_results, search_volume); lands as bigint
	DecString                 // a string holding a decimal number (cpc); lands as numeric
	TextList                  // string[]; ','-joined in CSV; lands as text[]
	IntList                   // integer[]; ','-joined in CSV; lands as bigint[]
)

var kindNames = map[Kind]string{
	Int: "integer", Float: "number", Text: "string", Bool: "boolean",
	Timestamp: "timestamp", Date: "date", IntString: "string holding digits",
	DecString: "string holding a decimal", TextList: "string[]", IntList: "integer[]",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// PGType is the PostgreSQL column type a field of this kind lands as.
func (k Kind) PGType() string {
	switch k {
	case Int, IntString:
		return "bigint"
	case Float:
		return "double precision"
	case Text:
		return "text"
	case Bool:
		return "boolean"
	case Timestamp:
		return "timestamp with time zone"
	case Date:
		return "date"
	case DecString:
		return "numeric"
	case TextList:
		return "text[]"
	case IntList:
		return "bigint[]"
	}
	panic(fmt.Sprintf("catalog: no PostgreSQL type for %v", k))
}

// IsList reports whether values of this kind are lists.
func (k Kind) IsList() bool { return k == TextList || k == IntList }

// Field is one field of a response row.
type Field struct {
	Name string
	Kind Kind
	// Doc is the spec's meaning of the field; it becomes the column's COMMENT.
	Doc string
}

// Scope is the kind of target a backlink request is about.
type Scope string

// The scopes of the spec (4.1).
const (
	RootDomain Scope = "ROOT_DOMAIN"
	Subdomain  Scope = "SUBDOMAIN"
	Subfolder  Scope = "SUBFOLDER"
	Page       Scope = "PAGE"
)

// AllScopes lists the scopes from the widest to the narrowest.
var AllScopes = []Scope{RootDomain, Subdomain, Subfolder, Page}

// PriceUnit says what a price is charged for.
type PriceUnit int

// The two ways the API charges (spec 8.1).
const (
	PerRequest PriceUnit = iota + 1
	PerLine
)

func (u PriceUnit) String() string {
	switch u {
	case PerRequest:
		return "per request"
	case PerLine:
		return "per line"
	}
	return fmt.Sprintf("PriceUnit(%d)", int(u))
}

// Price is what one request of an endpoint costs in API units.
type Price struct {
	Units int64
	Per   PriceUnit
}

// Worst is the most a request returning at most limit lines can cost;
// math.MaxInt64 when that passes what an int64 counts (it saturates, see
// AddUnits, and so never fits a cap).
func (p Price) Worst(limit int) int64 {
	if p.Per == PerLine {
		return MulUnits(p.Units, int64(limit))
	}
	return p.Units
}

// Cost is what a request that returned lines rows costs; it saturates at
// math.MaxInt64 as Worst does.
func (p Price) Cost(lines int) int64 {
	if p.Per == PerLine {
		return MulUnits(p.Units, int64(lines))
	}
	return p.Units
}

func (p Price) String() string { return fmt.Sprintf("%d %s", p.Units, p.Per) }

// Shape says whether data is one object or an array of rows.
type Shape int

// Response shapes (spec 2.1).
const (
	Object Shape = iota + 1
	List
)

// ParamKind is the type of a query parameter.
type ParamKind int

// Parameter kinds.
const (
	PString    ParamKind = iota + 1 // free text with an optional length bound
	PInt                            // integer with optional bounds
	PEnum                           // one of Enum
	PList                           // comma separated strings (fields, urls)
	PMonth                          // YYYY-MM
	PFilter                         // a filter expression (spec 4.2)
	PDirection                      // ASC or DESC
)

// Param is one query parameter of an endpoint.
type Param struct {
	Name     string
	Kind     ParamKind
	Required bool
	// Default is the value the API assumes when the parameter is absent, as
	// the spec states it ("" when none is stated).
	Default string
	// Min and Max bound integers; MaxLen bounds strings (0: unbounded); for
	// PList, Max bounds the number of items.
	Min, Max int
	MinLen   int
	MaxLen   int
	Enum     []string
	// MinMonth is the oldest month a PMonth parameter accepts ("" for
	// none); UpToNow says it accepts no month after the current one.
	MinMonth string
	UpToNow  bool
	Doc      string
}

// Endpoint describes one backlink or keyword endpoint of the data API.
type Endpoint struct {
	// Name is the endpoint's short name as used in job specs ("links").
	Name string
	// Path is relative to the API base address.
	Path  string
	Shape Shape
	Doc   string
	// Params are the query parameters the endpoint accepts.
	Params []Param
	// Scopes the endpoint allows; nil when it takes no scope (competitors,
	// keyword metrics).
	Scopes []Scope
	// Fields are the row fields in the spec's default CSV column order.
	Fields []Field
	// DefaultFields is the spec's default value of the fields parameter when
	// it differs from all of Fields (summary, comparison). It may name
	// something that is not a row field (comparison names scope).
	DefaultFields []string
	// DefaultOrder is the default order_by; "" when the endpoint has none.
	DefaultOrder string
	// DefaultLimit is the default page size; 0 when the endpoint takes no limit.
	DefaultLimit int
	// MaxRows bounds the rows of one answer of a list endpoint that takes no
	// limit (score profile); 0 when the bound is the limit, or the number of
	// urls (comparison).
	MaxRows int
	// TotalField names the overview field that counts this endpoint's rows
	// for a target at its scope when no filter narrows them (links:
	// backlinks_count, spec 2.2 and 2.4), so one overview request tells
	// the totals of several lists; "" when no overview field does (pages
	// are indexed pages, which urls_count, the referring pages, is not).
	TotalField string
	Price      Price
	// JSONOnly is true when the endpoint answers JSON only (matrix).
	JSONOnly bool
	// Table is the warehouse fact table the rows land in.
	Table string
	// Key is the natural key of a row within its target and month, as field
	// names (row fields or Context fields).
	Key []string
	// Context are columns of the warehouse table that come from the request
	// rather than from the row (keyword metrics: keyword and country).
	Context []Field
	// MonthField names the row field whose value is the month a row describes
	// (summary: month_date); "" when the month is the request's month.
	MonthField string
	// PerTarget is false for endpoints whose rows are not about one target
	// (matrix, keyword metrics).
	PerTarget bool
	// TargetField names the row field that says which of the request's
	// targets a row is about, for per-target endpoints that take several
	// targets at once (comparison: url).
	TargetField string
	// PerSet is true for endpoints whose rows are about a set of targets
	// requested together (matrix: a referring domain of any of them).
	PerSet bool
	// Echoes are the members of a JSON answer's meta that echo the request,
	// as the spec lists them per endpoint; nil where the spec lists none.
	Echoes []string
}

// Field returns the row field called name.
func (e *Endpoint) Field(name string) (Field, bool) {
	for _, f := range e.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// FieldNames returns the names of the row fields in CSV column order.
func (e *Endpoint) FieldNames() []string {
	names := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		names[i] = f.Name
	}
	return names
}

// Param returns the parameter called name.
func (e *Endpoint) Param(name string) (Param, bool) {
	for _, p := range e.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// AllowsScope reports whether the endpoint accepts scope s.
func (e *Endpoint) AllowsScope(s Scope) bool { return slices.Contains(e.Scopes, s) }

// AllowsCSV reports whether the endpoint can answer format=csv.
func (e *Endpoint) AllowsCSV() bool { return !e.JSONOnly }

// Lookup returns the endpoint called name.
func Lookup(name string) (*Endpoint, bool) {
	for _, e := range endpoints {
		if e.Name == name {
			return e, true
		}
	}
	return nil, false
}

// ByPath returns the endpoint served at path.
func ByPath(path string) (*Endpoint, bool) {
	for _, e := range endpoints {
		if e.Path == path {
			return e, true
		}
	}
	return nil, false
}

// All returns every endpoint in the spec's order.
func All() []*Endpoint { return slices.Clone(endpoints) }

// Names returns the names of every endpoint, for error messages.
func Names() []string {
	names := make([]string, len(endpoints))
	for i, e := range endpoints {
		names[i] = e.Name
	}
	return names
}

// ValidCountry reports whether code is a country keyword metrics accepts.
func ValidCountry(code string) bool { return slices.Contains(Countries, code) }

// ScopeNames joins scopes for messages.
func ScopeNames(scopes []Scope) string {
	s := make([]string, len(scopes))
	for i, sc := range scopes {
		s[i] = string(sc)
	}
	return strings.Join(s, ", ")
}

// Required lists the row fields a row cannot be loaded without: its key
// and the field that says its month.
func (ep *Endpoint) Required() []string {
	var names []string
	for _, k := range ep.Key {
		if _, ok := ep.Field(k); ok {
			names = append(names, k)
		}
	}
	if ep.TargetField != "" {
		names = append(names, ep.TargetField)
	}
	if ep.MonthField != "" {
		names = append(names, ep.MonthField)
	}
	return names
}
