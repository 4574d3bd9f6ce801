package catalog_test

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// The tests below check the listing facts of the catalog against sections
// 2.14, 3, 4.5, 7.1 and 8.1 to 8.4 of the spec, read from its text as the
// other catalog tests do.

// TestLocationFields checks the fields of a location against the table of
// 2.14: names in order, types, use in requests and maximum lengths.
func TestLocationFields(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	tbl := s.tables(t, "2.14")[0]
	require.Len(t, catalog.LocationFields, len(tbl.rows), "2.14 lists a different number of location fields")
	maxChars := regexp.MustCompile(`max (\d+) characters`)
	for i, row := range tbl.rows {
		f := catalog.LocationFields[i]
		t.Run(row["Field"], func(t *testing.T) {
			t.Parallel()
			require.Equal(t, row["Field"], f.Name, "2.14: field %d", i)
			require.True(t, strings.HasPrefix(row["Type"], f.Type.String()), "2.14: type of %s is %q, the catalog says %v", f.Name, row["Type"], f.Type)
			use := map[string]catalog.FieldUse{
				"bulk update: in each item": catalog.UseID,
				"required":                  catalog.UseRequired,
				"optional":                  catalog.UseOptional,
				"response only":             catalog.UseResponse,
			}[row["In requests"]]
			require.NotZero(t, use, "2.14: unknown use %q", row["In requests"])
			require.Equal(t, use, f.Use, "2.14: use of %s", f.Name)
			want := 0
			if m := maxChars.FindStringSubmatch(row["Rules"]); m != nil {
				want, _ = strconv.Atoi(m[1])
			}
			require.Equal(t, want, f.MaxLen, "2.14: maximum length of %s", f.Name)
			got, ok := catalog.LocationFieldByName(f.Name)
			require.True(t, ok)
			require.Equal(t, f, got)
		})
	}
	text := s.text(t, "2.14")
	require.Contains(t, text, "`from` and `to`, both strings `HH:MM` (24 hour clock)")
	require.Equal(t, "15:04", catalog.TimeLayout)
	require.Contains(t, text, "`type` (string, values "+catalog.HolidayRange+" or "+catalog.HolidayClosed+")")
	require.Contains(t, text, "`day` (string `YYYY-MM-DD`)")
	require.Equal(t, "2006-01-02", catalog.DateLayout)
	require.Contains(t, text, "keys "+strings.Join(catalog.Weekdays[:6], ", ")+", "+catalog.Weekdays[6]+",")
	require.Contains(t, text, "observed value "+catalog.StatusComplete)
	require.Contains(t, text, "`state` ("+catalog.StateUpdated+" or "+catalog.StateFailed+")")
}

// TestListingOperations checks the operations of 4.5: methods, paths, the
// prefixes, page parameters and the name of the request id.
func TestListingOperations(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	text := s.text(t, "4.5")
	for _, p := range catalog.LocationsPrefixes {
		require.Contains(t, text, "`"+p+"`", "4.5 names no prefix %s", p)
	}
	require.Equal(t, []string{catalog.LocationsPrefix, catalog.LocationsRawPrefix}, catalog.LocationsPrefixes)
	require.Contains(t, text, "interchangeably")

	rows := s.tables(t, "4.5")[0].rows
	ops := catalog.ListingOperations()
	require.Len(t, ops, len(rows), "4.5 lists a different number of operations")
	requestID := regexp.MustCompile(`(requested|requestId): string`)
	for i, row := range rows {
		op := ops[i]
		t.Run(row["Operation"], func(t *testing.T) {
			t.Parallel()
			require.Equal(t, row["Operation"], op.Name)
			method, path, ok := strings.Cut(row["Method and path"], " ")
			require.True(t, ok)
			require.Equal(t, method, op.Method)
			require.Equal(t, strings.HasSuffix(path, "/<location_id>"), op.ByID, "%s: by id", op.Name)
			require.Equal(t, method == "PUT", op.Body)
			m := requestID.FindStringSubmatch(row["Success response"])
			require.NotNil(t, m, "%s: no request id in %q", op.Name, row["Success response"])
			require.Equal(t, m[1], op.RequestID, "%s: the name of the request id", op.Name)
			if op.MaxItems > 0 {
				require.Contains(t, row["Request"], "up to "+strconv.Itoa(op.MaxItems)+" items")
				require.Contains(t, row["Request"], "ids must be unique")
			}
			for _, p := range op.Params {
				require.Equal(t, 1, p.Min, "%s: %s", op.Name, p.Name)
				require.Equal(t, math.MaxInt32, p.Max, "%s: %s is an int32", op.Name, p.Name)
				re := regexp.MustCompile(p.Name + ` \(int32,[^)]*default (\d+)\)`)
				d := re.FindStringSubmatch(row["Request"])
				require.NotNil(t, d, "%s: 4.5 gives no default for %s", op.Name, p.Name)
				require.Equal(t, d[1], p.Default, "%s: default of %s", op.Name, p.Name)
			}
		})
	}
	_, ok := catalog.GetLocations.Param("page")
	require.True(t, ok)
	require.Contains(t, rows[1]["Request"], "one-based")
	require.Contains(t, rows[1]["Success response"], "{page, totalElements, totalPages, content[]}")

	rule := regexp.MustCompile("Single-location success responses name their request identifier `(\\w+)`; list and bulk responses and all error envelopes name it `(\\w+)`")
	m := rule.FindStringSubmatch(text)
	require.NotNil(t, m, "4.5 rule 1")
	require.Equal(t, []string{catalog.RequestIDSingle, catalog.RequestIDOther}, m[1:])
}

func TestListingOperationPaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		op      *catalog.ListingOperation
		pattern string
		path    string
	}{
		{catalog.GetLocation, "GET " + catalog.LocationsPrefix + "/{location_id}", catalog.LocationsPrefix + "/a%2Fb%20c"},
		{catalog.GetLocations, "GET " + catalog.LocationsPrefix, catalog.LocationsPrefix},
		{catalog.UpdateLocation, "PUT " + catalog.LocationsPrefix + "/{location_id}", catalog.LocationsPrefix + "/a%2Fb%20c"},
		{catalog.UpdateLocations, "PUT " + catalog.LocationsPrefix, catalog.LocationsPrefix},
	}
	for _, tt := range tests {
		t.Run(tt.op.Name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.pattern, tt.op.Pattern(catalog.LocationsPrefix))
			require.Equal(t, tt.path, tt.op.Path(catalog.LocationsPrefix, "a/b c"))
		})
	}
}

// TestListingRates checks the rate limits of 8.2 and that listing calls
// cost nothing (1, 8.1).
func TestListingRates(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	rows := s.table(t, "8.2").rows
	byName := map[string]string{}
	for _, row := range rows {
		byName[row["Operation"]] = row["Limit"]
	}
	perSecond := regexp.MustCompile(`^up to (\d+) requests per second$`)
	for _, op := range catalog.ListingOperations() {
		t.Run(op.Name, func(t *testing.T) {
			t.Parallel()
			limit, ok := byName[op.Name]
			require.True(t, ok, "8.2 has no limit for %s", op.Name)
			if m := perSecond.FindStringSubmatch(limit); m != nil {
				require.Equal(t, catalog.RateLimit{Requests: atoi(t, m[1]), Per: time.Second}, op.Rate)
				return
			}
			m := regexp.MustCompile(`^one such request at a time, up to (\d+) requests per minute, up to (\d+) locations per request$`).FindStringSubmatch(limit)
			require.NotNil(t, m, "8.2: %q", limit)
			require.Equal(t, catalog.RateLimit{Requests: atoi(t, m[1]), Per: time.Minute, Concurrent: 1}, op.Rate)
			require.Equal(t, atoi(t, m[2]), op.MaxItems)
		})
	}
	for _, row := range s.table(t, "8.1").rows {
		if row["Endpoint"] == "all listing management endpoints" {
			require.Equal(t, "none consumed", row["Price"])
			for _, op := range catalog.ListingOperations() {
				require.Zero(t, op.Price.Worst(catalog.MaxBulkLocations), op.Name)
				require.Zero(t, op.Price.Cost(catalog.MaxBulkLocations), op.Name)
			}
		}
	}
	require.Contains(t, s.text(t, "1"), "Listing calls consume none.")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// TestListingErrors checks the codes of 7.1 and the bulk states of 3.
func TestListingErrors(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	rows := s.table(t, "7.1").rows
	require.Len(t, catalog.ListingErrors, len(rows))
	for i, row := range rows {
		e := catalog.ListingErrors[i]
		require.Equal(t, row["error.code"], e.Code, "7.1 row %d", i)
		require.Equal(t, row["detail code"], e.Detail, "7.1 row %d", i)
		require.Equal(t, strings.Contains(row["Condition"], "reported per item"), e.PerItem, "7.1: %s per item", e.Detail)
		if e.Detail == catalog.DetailTimesTooManyRanges {
			require.Contains(t, row["Condition"], "speaks of three")
			require.Equal(t, 3, catalog.MaxHolidayRanges)
		}
	}
	envelope := s.text(t, "7.1")
	require.Contains(t, envelope, "`{error: {code: string, message: string, details: array of {code, message, field?, index?}}, "+catalog.RequestIDOther+": string}`")
	rules := s.text(t, "4.5")
	require.Contains(t, rules, "rejected with detail "+catalog.DetailTimesNotAllowed)
	require.Contains(t, rules, "rejected with detail "+catalog.DetailTimesTooManyRanges)
	require.Contains(t, rules, "inside a "+catalog.CodeValidationError)

	states := map[string]string{}
	for _, row := range s.tables(t, "3")[0].rows {
		if row["Entity"] == "Bulk update item" {
			states[row["Condition"]] = row["Next state"]
			if row["Next state"] == catalog.StateFailed {
				require.Contains(t, row["Else"], "error "+catalog.CodeBadRequest+" with detail "+catalog.DetailLocationHasNotCompleteStatus)
				require.Contains(t, row["Else"], "HTTP status is still 200")
			}
		}
	}
	require.Equal(t, map[string]string{
		"location has status " + catalog.StatusComplete + " and data valid": catalog.StateUpdated,
		"location does not have status " + catalog.StatusComplete:           catalog.StateFailed,
	}, states)
}

// TestListingBounds checks the listing rows of 8.3 and the page defaults
// of 8.4.
func TestListingBounds(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	bounds := map[string]string{}
	for _, row := range s.table(t, "8.3").rows {
		bounds[row["Item"]] = row["Bound"]
	}
	for _, f := range catalog.LocationFields {
		if f.MaxLen == 0 {
			continue
		}
		b, ok := bounds[f.Name]
		require.True(t, ok, "8.3 has no bound for %s", f.Name)
		require.Equal(t, strconv.Itoa(f.MaxLen)+" characters", b, "8.3: %s", f.Name)
	}
	require.Equal(t, strconv.Itoa(catalog.MaxWeekdayRanges)+", not overlapping", bounds["ranges per weekday in businessHours"])
	require.Equal(t, "after the current date, before "+catalog.ReopenDateBefore, bounds["reopenDate"])
	require.Equal(t, strconv.Itoa(catalog.MaxBulkLocations)+", unique ids", bounds["locations per bulk update"])

	m := regexp.MustCompile(`locations page (\d+), size (\d+)`).FindStringSubmatch(s.text(t, "8.4"))
	require.NotNil(t, m, "8.4 states no locations page default")
	require.Equal(t, []string{strconv.Itoa(catalog.DefaultLocationsPage), strconv.Itoa(catalog.DefaultLocationsSize)}, m[1:])
}
