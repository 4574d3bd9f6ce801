package transform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/redact"
	"github.com/seoetl/etl/listing"
)

// This file decodes the answers of the listing-management API that carry
// locations (spec 2.14, 4.5) into Arrow records, as the decoders of the
// backlink endpoints do: Get locations (DecodeListingPage) and Get
// location (DecodeLocation). A location is decoded strictly, from its own
// bytes, into a listing.Location, then appended as one row of
// ListingSchema; the errors array of a location goes to a record of
// problems. An item that cannot be decoded is a Reject, and the page goes
// on with the next item.

// ListingPage is a decoded page of Get locations (or one location of Get
// location). The caller must Release it.
type ListingPage struct {
	// Page, TotalElements and TotalPages are those of data; 0 for a
	// single location, or when the page leaves them out.
	Page, TotalElements, TotalPages int
	// Items is the number of items in content, good, rejected or
	// repeated (1 for a single location): the positions of the list the
	// page covers, which a repeated id leaves fewer rows than.
	Items int
	// Locations has ListingSchema: one row per good item, in the order of
	// the items. An id given by two good items counts once: the later
	// item wins, at its place, and the earlier one is left out of
	// Locations, Problems and IDs (it is no reject either).
	Locations arrow.Record
	// Problems has ListingProblemSchema: the entries of the errors array
	// of each location of Locations, in order.
	Problems arrow.Record
	// IDs are the ids of the rows of Locations, in order.
	IDs []string
	// Rejects are the items that could not be decoded, in order. Line is
	// the item's 1-based position in content (1 for a single location);
	// Raw is its JSON as sent, with secrets masked and cut to
	// Options.MaxRowBytes; Reason names the item, its id when it has one,
	// the field and what is wrong with it:
	// `item 7 (id "ab12"): field businessHours: want an object, got a string`.
	Rejects []Reject
	// Drift.Unknown are the member names of the items (of good and
	// rejected items, at most the first 256) that a location does not
	// have, nested ones as a path (businessHours.lunes,
	// holidayHours[].note); their values are left out. Drift.Missing is
	// empty: every field of a location is optional but its id.
	Drift Drift
}

// Release frees the records of the page. It may be called more than once.
func (p *ListingPage) Release() {
	if p == nil {
		return
	}
	if p.Locations != nil {
		p.Locations.Release()
		p.Locations = nil
	}
	if p.Problems != nil {
		p.Problems.Release()
		p.Problems = nil
	}
}

// The columns of ListingSchema, in order. They are the columns of the
// warehouse's listing_versions that a location fills.
const (
	lcID = iota
	lcName
	lcCity
	lcAddress
	lcAddress2
	lcZip
	lcPhone
	lcRegion
	lcWebsite
	lcCountry
	lcStatus
	lcHours
	lcHolidays
	lcReopen
	lcOpenDays
	lcHolidayCount
	lcHash
)

var listingSchema = arrow.NewSchema([]arrow.Field{
	{Name: "location_id", Type: arrow.BinaryTypes.String},
	{Name: "location_name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "city", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "address", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "additional_address_info", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "zip", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "phone", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "website_url", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "country_code", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "business_hours", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "holiday_hours", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "reopen_date", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "open_days", Type: arrow.PrimitiveTypes.Int16},
	{Name: "holiday_count", Type: arrow.PrimitiveTypes.Int16},
	{Name: "content_hash", Type: arrow.BinaryTypes.Binary},
}, nil)

var listingProblemSchema = arrow.NewSchema([]arrow.Field{
	{Name: "location_id", Type: arrow.BinaryTypes.String},
	{Name: "code", Type: arrow.BinaryTypes.String},
	{Name: "message", Type: arrow.BinaryTypes.String},
}, nil)

// ListingSchema is the schema of ListingPage.Locations, one row per
// location:
//
//   - location_id: id, never null.
//   - location_name, city, address, additional_address_info, zip, phone,
//     region, website_url, country_code, status: the text fields of spec
//     2.14, null when empty or absent (a page's items carry no status).
//   - business_hours: businessHours as JSON text, re-encoded from the
//     decoded value (weekdays in the spec's order, closed ones left out);
//     null when the location has none.
//   - holiday_hours: holidayHours as JSON text, re-encoded; null when it
//     has no entry.
//   - reopen_date: reopenDate, a Date32; null when empty.
//   - open_days: Int16, the weekdays of businessHours with at least one
//     range.
//   - holiday_count: Int16, the entries of holidayHours.
//   - content_hash: Binary, listing.ContentHash of the location.
func ListingSchema() *arrow.Schema { return listingSchema }

// ListingProblemSchema is the schema of ListingPage.Problems: location_id,
// code and message, text, never null.
func ListingProblemSchema() *arrow.Schema { return listingProblemSchema }

// DecodeListingPage decodes the body of Get locations: {data: {page,
// totalElements, totalPages, content: [location...]}, requestId} (spec
// 4.5). It reads the body as a stream, the items of content one at a
// time, each held no longer than it takes to append it.
//
// The envelope must be whole: a body that is empty (ErrEmptyBody), not
// JSON, not an object, without data, whose data is not an object, without
// content or whose content is not an array (null is no items), whose
// page, totalElements or totalPages is not a non-negative integer, with an
// error member (the error envelope of spec 7.1: the error wraps a
// *listing.Error), or with anything after the envelope fails the whole
// page, as does a value too long to hold (16 times Options.MaxRowBytes or
// 1 MiB, whichever is more); a body whose reading failed before the
// envelope closed fails it with ErrCut (a body cut after it is whole). An item that is not a location fills a Reject instead, and the
// page goes on: an item that is not an object, has no id (or an id that
// is not a string or is empty), has a field of the wrong JSON type or
// twice, a text that is not valid UTF-8 or holds NUL (PostgreSQL text can
// hold neither), a reopenDate that is not YYYY-MM-DD, an errors entry
// without a string code and message, or is longer than
// Options.MaxRowBytes. Null is the absence of a field. Unknown members
// are left out and reported as Drift.
//
// Options: Allocator, MaxRowBytes, Redactor (rejects, errors and values of
// good rows, as in the other decoders) and Logger apply; BatchRows and
// Required do not.
func DecodeListingPage(r io.Reader, o Options) (*ListingPage, error) {
	return decodeListing(r, o, true)
}

// DecodeLocation decodes the body of Get location: {data: location,
// requested} (spec 4.5), the location with its status. The page it
// returns has one row, or one Reject (Line 1) when data is not a
// location; a body without data, whose data is null, or which is broken
// otherwise fails as in DecodeListingPage.
func DecodeLocation(r io.Reader, o Options) (*ListingPage, error) {
	return decodeListing(r, o, false)
}

func decodeListing(r io.Reader, o Options, page bool) (*ListingPage, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	what := "Get location"
	if page {
		what = "Get locations"
	}
	body := &bodyReader{r: r}
	d := &listingDecoder{
		what: what, opts: o, body: body, markedDecoder: newMarkedDecoder(body, o),
		out: &ListingPage{}, b: newListingBuilder(o.Allocator),
		seen: map[string]bool{},
	}
	d.item.red = o.Redactor
	d.item.unknown = d.noteUnknown
	defer d.b.release()
	if err := d.envelope(page); err != nil {
		return nil, err
	}
	p, err := d.finish()
	if err != nil {
		return nil, err
	}
	o.Logger.LogAttrs(context.Background(), slog.LevelDebug, "listing body decoded",
		slog.String("body", what),
		slog.Int("locations", len(p.IDs)),
		slog.Int("rejected", len(p.Rejects)),
		slog.Any("unknown", p.Drift.Unknown))
	return p, nil
}

// listingDecoder reads one listing body.
type listingDecoder struct {
	what string // "Get locations" or "Get location"
	opts Options
	body *bodyReader
	markedDecoder

	raw, skip json.RawMessage
	items     int // complete items of content read
	item      locationDecoder
	b         *listingBuilder
	out       *ListingPage
	seen      map[string]bool // unknown names noted
}

// envelope reads the body to its end.
func (d *listingDecoder) envelope(page bool) error {
	tok, err := d.token()
	if errors.Is(err, io.EOF) && !d.body.cut(err) {
		return fmt.Errorf("%w: no JSON value", ErrEmptyBody)
	}
	if err != nil {
		return d.bodyError(err)
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("transform: the %s JSON body is %s, not an object with data", d.what, tokenType(tok))
	}
	sawData := false
	for {
		tok, err := d.token()
		if err != nil {
			return d.bodyError(err)
		}
		if tok == json.Delim('}') {
			break
		}
		switch name, _ := tok.(string); name { // encoding/json checks that a member starts with its name
		case "data":
			if sawData {
				return fmt.Errorf("transform: the %s JSON envelope has data twice", d.what)
			}
			sawData = true
			if page {
				err = d.pageData()
			} else {
				err = d.locationData()
			}
			if err != nil {
				return err
			}
		case "error":
			if err := d.decode(&d.skip); err != nil {
				return d.bodyError(err)
			}
			if !bytes.Equal(d.skip, []byte("null")) {
				return d.errorEnvelope(d.skip)
			}
		default: // requestId, requested, and members the spec does not name
			if err := d.decode(&d.skip); err != nil {
				return d.bodyError(err)
			}
		}
	}
	// Nothing may follow the envelope. A body cut after it is whole.
	if tok, err := d.token(); !errors.Is(err, io.EOF) && !d.body.cut(err) {
		if err != nil {
			return d.bodyError(err)
		}
		return fmt.Errorf("transform: the %s JSON body goes on after its envelope with %s", d.what, tokenType(tok))
	}
	if !sawData {
		return fmt.Errorf("transform: the %s JSON envelope has no data", d.what)
	}
	return nil
}

// pageData reads the data of Get locations, after its name.
func (d *listingDecoder) pageData() error {
	tok, err := d.token()
	if err != nil {
		return d.bodyError(err)
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("transform: the %s JSON data is %s, not an object with page and content", d.what, tokenType(tok))
	}
	sawContent := false
	for {
		tok, err := d.token()
		if err != nil {
			return d.bodyError(err)
		}
		if tok == json.Delim('}') {
			break
		}
		switch name, _ := tok.(string); name {
		case "page", "totalElements", "totalPages":
			if err := d.decode(&d.skip); err != nil {
				return d.bodyError(err)
			}
			n, ok := count(d.skip)
			if !ok {
				return fmt.Errorf("transform: the %s JSON data.%s is %s, not a non-negative integer",
					d.what, name, showJSON(d.opts.Redactor, d.skip))
			}
			switch name {
			case "page":
				d.out.Page = n
			case "totalElements":
				d.out.TotalElements = n
			default:
				d.out.TotalPages = n
			}
		case "content":
			if sawContent {
				return fmt.Errorf("transform: the %s JSON data has content twice", d.what)
			}
			sawContent = true
			if err := d.content(); err != nil {
				return err
			}
		default:
			if err := d.decode(&d.skip); err != nil {
				return d.bodyError(err)
			}
		}
	}
	if !sawContent {
		return fmt.Errorf("transform: the %s JSON data has no content", d.what)
	}
	return nil
}

// content reads the content array, after its name, item by item.
func (d *listingDecoder) content() error {
	tok, err := d.token()
	if err != nil {
		return d.bodyError(err)
	}
	switch tok {
	case nil:
		return nil
	case json.Delim('['):
	default:
		return fmt.Errorf("transform: the %s JSON data.content is %s, not an array of locations", d.what, tokenType(tok))
	}
	for d.more() {
		if err := d.decode(&d.raw); err != nil {
			return d.bodyError(err)
		}
		d.items++
		d.location(d.raw, d.items)
	}
	if _, err := d.token(); err != nil { // the closing ']'
		return d.bodyError(err)
	}
	return nil
}

// locationData reads the data of Get location, after its name.
func (d *listingDecoder) locationData() error {
	if err := d.decode(&d.raw); err != nil {
		return d.bodyError(err)
	}
	if d.raw[0] == 'n' {
		return fmt.Errorf("transform: the %s JSON data is null, not a location", d.what)
	}
	d.items = 1
	d.location(d.raw, 1)
	return nil
}

// location decodes the item raw, at position line, into the page: a row,
// or a reject.
func (d *listingDecoder) location(raw []byte, line int) {
	reason := d.item.decode(raw, d.opts.MaxRowBytes)
	if reason == "" {
		d.b.add(&d.item.loc, d.item.reopen)
		return
	}
	item := fmt.Sprintf("item %d", line)
	if d.item.hasID {
		item += fmt.Sprintf(" (id %s)", show(d.opts.Redactor, []byte(d.item.loc.ID)))
	}
	d.out.Rejects = append(d.out.Rejects, Reject{Line: line, Raw: d.opts.rawText(raw, false), Reason: item + ": " + reason})
}

// count reads a non-negative integer of the envelope; null is 0.
func count(raw []byte) (int, bool) {
	if bytes.Equal(raw, []byte("null")) {
		return 0, true
	}
	if raw[0] < '0' || raw[0] > '9' {
		return 0, false
	}
	n, err := strconv.Atoi(string(raw))
	return n, err == nil
}

// errorEnvelope is the error of a body with an error member (spec 7.1).
func (d *listingDecoder) errorEnvelope(raw []byte) error {
	e := &listing.Error{}
	if raw[0] != '{' || json.Unmarshal(raw, e) != nil {
		e = &listing.Error{Message: showJSON(d.opts.Redactor, raw)}
	}
	// An error answer may echo a secret.
	e.Code, e.Message = d.opts.mask(e.Code), d.opts.mask(e.Message)
	for i := range e.Details {
		p := &e.Details[i]
		p.Code, p.Message, p.Field, p.Index = d.opts.mask(p.Code), d.opts.mask(p.Message), d.opts.mask(p.Field), d.opts.mask(p.Index)
	}
	return fmt.Errorf("transform: the %s JSON body is an error, not data: %w", d.what, e)
}

func (d *listingDecoder) noteUnknown(prefix string, name []byte) {
	if len(d.out.Drift.Unknown) == maxUnknown {
		return
	}
	full := prefix + string(name)
	if d.seen[full] {
		return
	}
	d.seen[full] = true
	d.out.Drift.Unknown = append(d.out.Drift.Unknown, d.opts.mask(strings.ToValidUTF8(full, "\uFFFD")))
}

// finish makes the page's records.
func (d *listingDecoder) finish() (*ListingPage, error) {
	p := d.out
	p.Items = d.items
	var err error
	p.Locations, p.Problems, p.IDs, err = d.b.records(d.opts.Allocator)
	if err != nil {
		return nil, fmt.Errorf("transform: the %s JSON body: %w", d.what, err)
	}
	return p, nil
}

// bodyError says what err, from the json.Decoder, means for the body, as
// JSONDecoder.bodyError does.
func (d *listingDecoder) bodyError(err error) error {
	var syntax *json.SyntaxError
	switch {
	case d.body.cut(err):
		return d.body.cutError(fmt.Sprintf("the %s JSON body", d.what), int64(d.items), int64(len(d.out.Rejects)))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("transform: the %s JSON body ends before its envelope is closed: %w", d.what, io.ErrUnexpectedEOF)
	case errors.As(err, &syntax):
		return fmt.Errorf("transform: the %s JSON body is broken at or after byte %d: %w", d.what, d.dec.InputOffset(), err)
	case errors.Is(err, errValueTooLong):
		return fmt.Errorf("transform: the %s JSON body holds a value longer than %d bytes: %w", d.what, d.in.limit, err)
	}
	return fmt.Errorf("transform: reading the %s JSON body: %w", d.what, err)
}

// locationDecoder decodes one item into a listing.Location, strictly: it
// checks the JSON type of every field it knows, as encoding/json would,
// and what encoding/json lets through: a member twice (it keeps the last),
// text PostgreSQL cannot hold (it replaces invalid UTF-8 silently), an
// unpaired surrogate escape (also replaced). It matches member names
// exactly, not ignoring case. A location it accepts is the one
// encoding/json decodes from the same item (FuzzListingPage checks it),
// so ContentHash is that of the location as sent.
type locationDecoder struct {
	red     *redact.Redactor
	unknown func(prefix string, name []byte)

	loc    listing.Location
	reopen arrow.Date32 // reopenDate; valid when loc.ReopenDate is not empty
	hasID  bool         // loc.ID is the item's valid id
	reason string       // the item's first problem
	buf    []byte       // an unescaped string
	name   []byte       // an unescaped member name
}

// The members of a location, by name.
const (
	fID = iota
	fLocationName
	fCity
	fAddress
	fAdditionalAddressInfo
	fZip
	fPhone
	fRegion
	fWebsiteURL
	fBusinessHours
	fHolidayHours
	fReopenDate
	fStatus
	fCountryCode
	fErrors
	nLocationFields
)

// locationFieldNames are the names of the members of a location, by
// index.
var locationFieldNames = func() [nLocationFields]string {
	var out [nLocationFields]string
	for name, f := range locationFields {
		out[f] = name
	}
	return out
}()

var locationFields = map[string]int{
	"id": fID, "locationName": fLocationName, "city": fCity, "address": fAddress,
	"additionalAddressInfo": fAdditionalAddressInfo, "zip": fZip, "phone": fPhone, "region": fRegion,
	"websiteUrl": fWebsiteURL, "businessHours": fBusinessHours, "holidayHours": fHolidayHours,
	"reopenDate": fReopenDate, "status": fStatus, "countryCode": fCountryCode, "errors": fErrors,
}

// weekdayPaths are the paths of the weekdays of businessHours, in the
// order of catalog.Weekdays.
var weekdayPaths = func() []string {
	out := make([]string, len(catalog.Weekdays))
	for i, w := range catalog.Weekdays {
		out[i] = "businessHours." + w
	}
	return out
}()

// decode decodes the item raw into loc; it returns why it cannot, without
// the item's position.
func (d *locationDecoder) decode(raw []byte, maxBytes int) string {
	d.loc, d.reason, d.hasID = listing.Location{}, "", false
	if len(raw) > maxBytes {
		return fmt.Sprintf("longer than %d bytes", maxBytes)
	}
	if raw[0] != '{' {
		return "want an object, got " + jsonType(raw)
	}
	var seen [nLocationFields]bool
	names := &locationFieldNames
	loc := &d.loc
	texts := [nLocationFields]*string{
		fLocationName: &loc.LocationName, fCity: &loc.City, fAddress: &loc.Address,
		fAdditionalAddressInfo: &loc.AdditionalAddressInfo, fZip: &loc.Zip, fPhone: &loc.Phone,
		fRegion: &loc.Region, fWebsiteURL: &loc.WebsiteURL, fStatus: &loc.Status, fCountryCode: &loc.CountryCode,
	}
	for quoted, v := range objectMembers(raw) {
		name := d.memberName(quoted)
		f, ok := locationFields[string(name)]
		if !ok {
			d.unknown("", name)
			continue
		}
		if seen[f] {
			d.fail(names[f], "appears twice")
			continue
		}
		seen[f] = true
		switch f {
		case fID:
			switch {
			case v[0] == 'n':
				d.fail("id", "want a string, got null")
			case !d.text("id", v, &loc.ID):
			case loc.ID == "":
				d.fail("id", "is empty")
			default:
				d.hasID = true
			}
		case fBusinessHours:
			d.hours(v)
		case fHolidayHours:
			d.holidays(v)
		case fReopenDate:
			d.reopenDate(v)
		case fErrors:
			d.errors(v)
		default:
			d.text(names[f], v, texts[f])
		}
	}
	if d.reason == "" && !seen[fID] {
		return "has no id"
	}
	return d.reason
}

// fail notes the item's first problem, at the field path.
func (d *locationDecoder) fail(path, format string, args ...any) {
	if d.reason == "" {
		d.reason = "field " + path + ": " + fmt.Sprintf(format, args...)
	}
}

// memberName unescapes a member name as sent (quoted); a name with a broken
// escape is kept as sent.
func (d *locationDecoder) memberName(quoted []byte) []byte {
	body := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return body
	}
	name, msg := unquote(d.name[:0], body)
	d.name = name
	if msg != "" {
		return body
	}
	return name
}

// text decodes the string (or null, "") v of the field at path into dst;
// false after a failure.
func (d *locationDecoder) text(path string, v []byte, dst *string) bool {
	if msg := d.str(v, dst); msg != "" {
		d.fail(path, "%s", msg)
		return false
	}
	return true
}

// str decodes the string (or null, "") v into dst, or says why it cannot.
func (d *locationDecoder) str(v []byte, dst *string) string {
	switch v[0] {
	case 'n':
		*dst = ""
		return ""
	case '"':
	default:
		return "want a string, got " + jsonType(v)
	}
	b := v[1 : len(v)-1]
	if bytes.IndexByte(b, '\\') >= 0 {
		var msg string
		if d.buf, msg = unquote(d.buf[:0], b); msg != "" {
			return showJSON(d.red, v) + " " + msg
		}
		b = d.buf
	}
	if msg := checkText(b); msg != "" {
		return showJSON(d.red, v) + " " + msg
	}
	*dst = string(d.red.Value(b))
	return ""
}

func (d *locationDecoder) reopenDate(v []byte) {
	if !d.text("reopenDate", v, &d.loc.ReopenDate) || d.loc.ReopenDate == "" {
		return
	}
	t, err := time.Parse(catalog.DateLayout, d.loc.ReopenDate)
	if err != nil {
		d.fail("reopenDate", "%s is not a date (YYYY-MM-DD)", show(d.red, []byte(d.loc.ReopenDate)))
		return
	}
	d.reopen = arrow.Date32FromTime(t)
}

// object checks that v is an object (false for null, after a failure for
// another type).
func (d *locationDecoder) object(path string, v []byte) bool {
	switch v[0] {
	case '{':
		return true
	case 'n':
		return false
	}
	d.fail(path, "want an object, got %s", jsonType(v))
	return false
}

// array checks that v is an array, as object does.
func (d *locationDecoder) array(path string, v []byte) bool {
	switch v[0] {
	case '[':
		return true
	case 'n':
		return false
	}
	d.fail(path, "want an array, got %s", jsonType(v))
	return false
}

// item checks that the array item v is an object: null is not one.
func (d *locationDecoder) item(path string, i int, v []byte) bool {
	if v[0] == '{' {
		return true
	}
	d.fail(fmt.Sprintf("%s[%d]", path, i), "want an object, got %s", jsonType(v))
	return false
}

func (d *locationDecoder) hours(v []byte) {
	if !d.object("businessHours", v) {
		return
	}
	h := &listing.BusinessHours{}
	var seen [7]bool
	for quoted, dv := range objectMembers(v) {
		name := d.memberName(quoted)
		k := -1
		for i, w := range catalog.Weekdays {
			if string(name) == w {
				k = i
				break
			}
		}
		if k < 0 {
			d.unknown("businessHours.", name)
			continue
		}
		if seen[k] {
			d.fail(weekdayPaths[k], "appears twice")
			continue
		}
		seen[k] = true
		h.SetDay(catalog.Weekdays[k], d.ranges(weekdayPaths[k], dv))
	}
	d.loc.BusinessHours = h
}

// ranges decodes an array of time ranges at path.
func (d *locationDecoder) ranges(path string, v []byte) []listing.TimeRange {
	if !d.array(path, v) {
		return nil
	}
	out := make([]listing.TimeRange, 0, 2)
	i := 0
	for item := range arrayItems(v) {
		var r listing.TimeRange
		if d.item(path, i, item) {
			var from, to bool
			for quoted, mv := range objectMembers(item) {
				name := d.memberName(quoted)
				switch string(name) {
				case "from":
					d.member(path, i, "from", &from, false, mv, &r.From)
				case "to":
					d.member(path, i, "to", &to, false, mv, &r.To)
				default:
					d.unknown(path+"[].", name)
				}
			}
		}
		out = append(out, r)
		i++
	}
	return out
}

// member decodes the text member name of item i of the array at path,
// which seen says was met already; null is "" unless required.
func (d *locationDecoder) member(path string, i int, name string, seen *bool, required bool, v []byte, dst *string) {
	if d.reason != "" {
		return // the item is rejected already
	}
	msg := ""
	switch {
	case *seen:
		msg = "appears twice"
	case required && v[0] == 'n':
		msg = "want a string, got null"
	default:
		msg = d.str(v, dst)
	}
	*seen = true
	if msg != "" {
		d.fail(fmt.Sprintf("%s[%d].%s", path, i, name), "%s", msg)
	}
}

func (d *locationDecoder) holidays(v []byte) {
	if !d.array("holidayHours", v) {
		return
	}
	d.loc.HolidayHours = make([]listing.HolidayHours, 0, 4)
	i := 0
	for item := range arrayItems(v) {
		var h listing.HolidayHours
		if d.item("holidayHours", i, item) {
			var typ, day, times bool
			for quoted, mv := range objectMembers(item) {
				name := d.memberName(quoted)
				switch string(name) {
				case "type":
					d.member("holidayHours", i, "type", &typ, false, mv, &h.Type)
				case "day":
					d.member("holidayHours", i, "day", &day, false, mv, &h.Day)
				case "times":
					if d.reason != "" {
						break
					}
					p := fmt.Sprintf("holidayHours[%d].times", i)
					if times {
						d.fail(p, "appears twice")
						break
					}
					times = true
					h.Times = d.ranges(p, mv)
				default:
					d.unknown("holidayHours[].", name)
				}
			}
		}
		d.loc.HolidayHours = append(d.loc.HolidayHours, h)
		i++
	}
}

func (d *locationDecoder) errors(v []byte) {
	if !d.array("errors", v) {
		return
	}
	d.loc.Errors = make([]listing.LocationError, 0, 2)
	i := 0
	for item := range arrayItems(v) {
		var e listing.LocationError
		if d.item("errors", i, item) {
			var code, message bool
			for quoted, mv := range objectMembers(item) {
				name := d.memberName(quoted)
				switch string(name) {
				case "code":
					d.member("errors", i, "code", &code, true, mv, &e.Code)
				case "message":
					d.member("errors", i, "message", &message, true, mv, &e.Message)
				default:
					d.unknown("errors[].", name)
				}
			}
			switch {
			case d.reason != "":
			case !code:
				d.fail(fmt.Sprintf("errors[%d]", i), "has no code")
			case !message:
				d.fail(fmt.Sprintf("errors[%d]", i), "has no message")
			}
		}
		d.loc.Errors = append(d.loc.Errors, e)
		i++
	}
}

// listingBuilder builds the records of a page.
type listingBuilder struct {
	loc, prob *array.RecordBuilder
	text      [lcHolidays + 1]*array.StringBuilder // the String columns of loc, by column
	reopen    *array.Date32Builder
	openDays  *array.Int16Builder
	holidays  *array.Int16Builder
	hash      *array.BinaryBuilder
	probCols  [3]*array.StringBuilder

	ids     []string       // the id of each row
	owner   []int          // the row of each problem
	row     map[string]int // the latest row of each id
	dropped []int          // rows a later item of the same id replaces
}

func newListingBuilder(mem memory.Allocator) *listingBuilder {
	b := &listingBuilder{
		loc:  array.NewRecordBuilder(mem, listingSchema),
		prob: array.NewRecordBuilder(mem, listingProblemSchema),
		row:  map[string]int{},
	}
	for c := range b.text {
		b.text[c] = b.loc.Field(c).(*array.StringBuilder)
	}
	b.reopen = b.loc.Field(lcReopen).(*array.Date32Builder)
	b.openDays = b.loc.Field(lcOpenDays).(*array.Int16Builder)
	b.holidays = b.loc.Field(lcHolidayCount).(*array.Int16Builder)
	b.hash = b.loc.Field(lcHash).(*array.BinaryBuilder)
	for c := range b.probCols {
		b.probCols[c] = b.prob.Field(c).(*array.StringBuilder)
	}
	return b
}

// add appends loc, whose reopenDate is reopen when it has one.
func (b *listingBuilder) add(loc *listing.Location, reopen arrow.Date32) {
	r := len(b.ids)
	if earlier, ok := b.row[loc.ID]; ok {
		b.dropped = append(b.dropped, earlier)
	}
	b.row[loc.ID] = r
	b.ids = append(b.ids, loc.ID)

	b.text[lcID].Append(loc.ID)
	for c, s := range [...]string{
		lcName: loc.LocationName, lcCity: loc.City, lcAddress: loc.Address, lcAddress2: loc.AdditionalAddressInfo,
		lcZip: loc.Zip, lcPhone: loc.Phone, lcRegion: loc.Region, lcWebsite: loc.WebsiteURL,
		lcCountry: loc.CountryCode, lcStatus: loc.Status,
	} {
		if c != lcID {
			appendText(b.text[c], s)
		}
	}
	openDays := 0
	if loc.BusinessHours != nil {
		b.text[lcHours].Append(string(mustJSON(loc.BusinessHours)))
		for _, w := range catalog.Weekdays {
			if len(loc.BusinessHours.Day(w)) > 0 {
				openDays++
			}
		}
	} else {
		b.text[lcHours].AppendNull()
	}
	if len(loc.HolidayHours) > 0 {
		b.text[lcHolidays].Append(string(mustJSON(loc.HolidayHours)))
	} else {
		b.text[lcHolidays].AppendNull()
	}
	if loc.ReopenDate != "" {
		b.reopen.Append(reopen)
	} else {
		b.reopen.AppendNull()
	}
	b.openDays.Append(int16(openDays))
	b.holidays.Append(int16(min(len(loc.HolidayHours), math.MaxInt16)))
	b.hash.Append(listing.ContentHash(*loc))

	for _, e := range loc.Errors {
		b.probCols[0].Append(loc.ID)
		b.probCols[1].Append(e.Code)
		b.probCols[2].Append(e.Message)
		b.owner = append(b.owner, r)
	}
}

// appendText appends s, or null when it is empty.
func appendText(sb *array.StringBuilder, s string) {
	if s == "" {
		sb.AppendNull()
	} else {
		sb.Append(s)
	}
}

// mustJSON encodes hours, which always encode.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("transform: encoding hours: " + err.Error())
	}
	return b
}

// records ends the page: its records, the rows replaced by a later item of
// the same id left out, and their ids.
func (b *listingBuilder) records(mem memory.Allocator) (locs, problems arrow.Record, ids []string, err error) {
	locs, problems = b.loc.NewRecord(), b.prob.NewRecord()
	if len(b.dropped) == 0 {
		return locs, problems, b.ids, nil
	}
	keep := make([]bool, len(b.ids))
	for i := range keep {
		keep[i] = true
	}
	for _, r := range b.dropped {
		keep[r] = false
	}
	for r, id := range b.ids {
		if keep[r] {
			ids = append(ids, id)
		}
	}
	locs, err = keepRows(mem, locs, func(i int) bool { return keep[i] })
	if err != nil {
		problems.Release()
		return nil, nil, nil, err
	}
	problems, err = keepRows(mem, problems, func(i int) bool { return keep[b.owner[i]] })
	if err != nil {
		locs.Release()
		return nil, nil, nil, err
	}
	return locs, problems, ids, nil
}

// keepRows returns the rows of rec that keep keeps, in order, and releases
// rec.
func keepRows(mem memory.Allocator, rec arrow.Record, keep func(i int) bool) (arrow.Record, error) {
	defer rec.Release()
	n := int(rec.NumRows())
	var runs [][2]int64
	rows := int64(0)
	for i := 0; i < n; {
		if !keep(i) {
			i++
			continue
		}
		j := i
		for j < n && keep(j) {
			j++
		}
		runs = append(runs, [2]int64{int64(i), int64(j)})
		rows += int64(j - i)
		i = j
	}
	if len(runs) == 0 {
		runs = append(runs, [2]int64{0, 0})
	}
	cols := make([]arrow.Array, 0, rec.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	parts := make([]arrow.Array, len(runs))
	for _, col := range rec.Columns() {
		for k, r := range runs {
			parts[k] = array.NewSlice(col, r[0], r[1])
		}
		c, err := array.Concatenate(parts, mem)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return array.NewRecord(rec.Schema(), cols, rows), nil
}

// release frees the builders.
func (b *listingBuilder) release() {
	b.loc.Release()
	b.prob.Release()
}
