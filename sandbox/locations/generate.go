package locations

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
)

// This file invents the locations of an account: how many, and each one's
// fields, from the seed, the account and the location's index (and, for
// what moves with time, the sandbox day). Every location it invents passes
// listing.Validate on its day.

// MaxLocations bounds the N of an account named with n<digits>: a page of
// any account costs only its size, but a hundred thousand locations
// already pass anything an agency manages. A sandbox refuses to start
// with a key that asks for more (SizeAsked): it would otherwise serve a
// drawn few, silently.
const MaxLocations = 100_000

// SizeAsked returns the number of locations the name of account asks
// for: the digits of its first token (the parts between characters other
// than ASCII letters and digits) that is "n" followed by digits
// (agency-n1500 asks for 1500), and whether it has one. digits is that
// token's digits as written; n is -1 when they pass an int.
func SizeAsked(account string) (n int, digits string, ok bool) {
	for _, tok := range strings.FieldsFunc(strings.ToLower(account), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}) {
		if len(tok) < 2 || tok[0] != 'n' || strings.Trim(tok[1:], "0123456789") != "" {
			continue
		}
		n, err := strconv.Atoi(tok[1:])
		if err != nil {
			n = -1
		}
		return n, tok[1:], true
	}
	return 0, "", false
}

// The statuses of the sandbox's locations. The spec shows COMPLETE only
// ("Allowed values of status other than COMPLETE: not shown", 2.14); these
// two are the sandbox's choice, named after what a listing service does
// with a location it has not finished (IN_PROGRESS: submitted, not yet
// synced to the directories) or could not sync (NOT_SYNCED).
const (
	StatusInProgress = "IN_PROGRESS"
	StatusNotSynced  = "NOT_SYNCED"
)

// count is how many locations an account owns: N when a token of its name
// (the parts between characters other than ASCII letters and digits) is
// "n" followed by digits and N is at most MaxLocations (agency-n1500 owns
// 1500, n0 none), as the sandbox's sized targets are named (a sandbox
// refuses a key asking for more); otherwise a
// draw of the seed and the account: 3 to 30 locations (70% of accounts),
// 31 to 300 (25%) or 301 to 2500 (5%).
func count(seed int64, account string) int {
	if n, _, ok := SizeAsked(account); ok && n >= 0 && n <= MaxLocations {
		return n
	}
	k := newKey(seed, "locations", "count", account)
	switch d := between(k.draw("band"), 0, 99); {
	case d < 70:
		return int(between(k.draw("n"), 3, 30))
	case d < 95:
		return int(between(k.draw("n"), 31, 300))
	default:
		return int(between(k.draw("n"), 301, 2500))
	}
}

// place is a city locations are invented in.
type place struct {
	country, city, region string
	// zip draws a postal code.
	zip func(d uint64) string
	// phones are formats of the place's numbers, '#' a drawn digit.
	phones []string
	// streets of the place; numberFirst puts the house number before
	// the street (82 Cromley St), else after it (Bahnhofstrasse 12).
	streets     []string
	numberFirst bool
}

// zipRange draws a postal code in [lo, hi] written with format.
func zipRange(format string, lo, hi int64) func(uint64) string {
	return func(d uint64) string { return fmt.Sprintf(format, between(d, lo, hi)) }
}

// zipList draws one of codes.
func zipList(codes ...string) func(uint64) string {
	return func(d uint64) string { return pick(d, codes) }
}

// usPlace is a US city: its state, the first three digits of its ZIP
// codes (in the state's range of listing's cross-check) and its area
// code; the numbers are of the 555-01xx block, reserved for fiction.
func usPlace(city, state string, zip3 int64, area string, streets ...string) place {
	return place{
		country: "US", city: city, region: state,
		zip:     zipRange("%05d", zip3*100, zip3*100+99),
		phones:  []string{"+1" + area + "55501##", "+1 " + area + "-555-01##", "+1 (" + area + ") 555-01##"},
		streets: streets, numberFirst: true,
	}
}

// The places: the USA three times out of five, then countries with and
// without a region (Switzerland, Germany, France, the United Kingdom and
// the Netherlands use none; Spain, Italy, Canada and Australia do).
var (
	usPlaces = []place{
		usPlace("Ashville", "OH", 431, "740", "Cromley St", "Main St", "Long St"),
		usPlace("Columbus", "OH", 432, "614", "High St", "Broad St"),
		usPlace("Austin", "TX", 787, "512", "Congress Ave", "6th Street", "Lamar Blvd"),
		usPlace("Dallas", "TX", 752, "214", "Elm St", "Commerce St"),
		usPlace("San Francisco", "CA", 941, "415", "Market St", "Valencia St", "Mission St"),
		usPlace("Los Angeles", "CA", 900, "213", "Sunset Blvd", "Spring St"),
		usPlace("New York", "NY", 100, "212", "Broadway", "Bleecker St", "5th Ave"),
		usPlace("Buffalo", "NY", 142, "716", "Elmwood Ave", "Main St"),
		usPlace("Boston", "MA", 21, "617", "Newbury St", "Tremont St"),
		usPlace("Chicago", "IL", 606, "312", "Michigan Ave", "Wabash Ave"),
		usPlace("Denver", "CO", 802, "303", "Larimer St", "Colfax Ave"),
		usPlace("Seattle", "WA", 981, "206", "Pike St", "Pine St"),
		usPlace("Miami", "FL", 331, "305", "Collins Ave", "Ocean Dr"),
		usPlace("Atlanta", "GA", 303, "404", "Peachtree St", "Auburn Ave"),
		usPlace("Portland", "OR", 972, "503", "Alberta St", "Hawthorne Blvd"),
		usPlace("Phoenix", "AZ", 850, "602", "Roosevelt St", "Central Ave"),
		usPlace("Nashville", "TN", 372, "615", "Broadway", "Music Row"),
		usPlace("Minneapolis", "MN", 554, "612", "Nicollet Mall", "Hennepin Ave"),
	}
	otherPlaces = []place{
		{country: "CH", city: "Zürich", zip: zipRange("%d", 8001, 8099),
			phones: []string{"+41 44 2## ## ##", "+41442######"}, streets: []string{"Bahnhofstrasse", "Langstrasse", "Seefeldstrasse"}},
		{country: "DE", city: "München", zip: zipRange("%05d", 80331, 81929),
			phones: []string{"+49 89 #######", "+49 (0)89 #######"}, streets: []string{"Leopoldstraße", "Sendlinger Straße", "Theresienstraße"}},
		{country: "DE", city: "Berlin", zip: zipRange("%05d", 10115, 14199),
			phones: []string{"+49 30 ########"}, streets: []string{"Torstraße", "Kastanienallee", "Oranienstraße"}},
		{country: "FR", city: "Paris", zip: zipRange("%05d", 75001, 75020),
			phones: []string{"+33 1 ## ## ## ##", "+331########"}, streets: []string{"rue de Rivoli", "rue Oberkampf", "boulevard Saint-Germain"}, numberFirst: true},
		{country: "GB", city: "London", zip: zipList("EC1Y 8SY", "N1 9GU", "SE1 7PB", "W1D 3QF"),
			phones:  []string{"+44 20 7946 0###"}, // Ofcom's range for drama
			streets: []string{"Old Street", "Upper Street", "Borough High Street"}, numberFirst: true},
		{country: "NL", city: "Amsterdam", zip: zipList("1012 AB", "1015 CJ", "1017 PN", "1072 GH"),
			phones: []string{"+31 20 ### ####"}, streets: []string{"Prinsengracht", "Haarlemmerstraat", "Utrechtsestraat"}},
		{country: "ES", city: "Barcelona", region: "Barcelona", zip: zipRange("%05d", 8001, 8042),
			phones: []string{"+34 93 ### ## ##"}, streets: []string{"Carrer de Mallorca", "Passeig de Gràcia", "Carrer del Consell de Cent"}},
		{country: "IT", city: "Milano", region: "MI", zip: zipRange("%05d", 20121, 20162),
			phones: []string{"+39 02 #### ####"}, streets: []string{"Via Torino", "Corso Buenos Aires", "Via Dante"}},
		{country: "CA", city: "Toronto", region: "ON", zip: zipList("M5V 2T6", "M5H 2N2", "M6J 1H5"),
			phones: []string{"+1 416-555-01##"}, streets: []string{"Queen St W", "King St W", "Dundas St W"}, numberFirst: true},
		{country: "AU", city: "Sydney", region: "NSW", zip: zipRange("%d", 2000, 2099),
			phones: []string{"+61 2 5550 ####"}, streets: []string{"George St", "Oxford St", "King St"}, numberFirst: true},
	}
)

// phone fills the '#' of one of the place's formats with drawn digits.
func (p place) phone(d uint64) string {
	format := pick(d, p.phones)
	b := []byte(format)
	j := int64(0)
	for i, c := range b {
		if c == '#' {
			b[i] = byte('0' + between(sub(d, int(j)+1), 0, 9))
			j++
		}
	}
	return string(b)
}

// address draws a house number and a street.
func (p place) address(d uint64) string {
	street, n := pick(d, p.streets), between(sub(d, 1), 1, 400)
	if p.numberFirst {
		return fmt.Sprintf("%d %s", n, street)
	}
	return fmt.Sprintf("%s %d", street, n)
}

// Words of business names.
var (
	brandFirst = []string{"Blue", "Golden", "Green", "Silver", "Northern", "Old Town", "Sunny", "Little", "Urban", "Maple", "Cedar", "Copper", "Riverside", "Café", "Fox &"}
	brandLast  = []string{"Harbor", "Oak", "Lantern", "Bridge", "Anchor", "Sparrow", "Meadow", "Pine", "Stone", "Willow", "Compass", "Hound"}
	brandKind  = []string{"Bakery", "Coffee", "Dental", "Fitness", "Books", "Pharmacy", "Florist", "Garage", "Bistro", "Hardware", "Optics", "Yoga", "Bar"}
	units      = []string{"Suite %d", "Floor %d", "Unit %d", "Building %d", "%d floor"}
)

// Error codes of the errors array. The spec shows no catalogue ("Catalogue
// of location error codes in the errors array: not shown", 2.14); these
// are the sandbox's, in the style of the one code the provider's sample
// shows: a directory's prefix and a number.
var locationErrors = []listing.LocationError{
	{Code: "G_020", Message: "Some location business information can't be processed by Google."},
	{Code: "G_031", Message: "Google did not accept the phone number of the location."},
	{Code: "FB_004", Message: "The location is not connected to a Facebook page."},
	{Code: "AP_012", Message: "Apple Business Connect could not verify the address of the location."},
	{Code: "BG_007", Message: "Bing Places reports a possible duplicate of the location."},
}

// hoursPattern is a weekly pattern of opening hours, Monday first.
type hoursPattern [7][]listing.TimeRange

func tr(from, to string) listing.TimeRange { return listing.TimeRange{From: from, To: to} }

func week(mon, tue, wed, thu, fri, sat, sun []listing.TimeRange) hoursPattern {
	return hoursPattern{mon, tue, wed, thu, fri, sat, sun}
}

func rs(r ...listing.TimeRange) []listing.TimeRange { return r }

// patterns: an office, a shop, a split day, a bar open past midnight, open
// around the clock (00:00-00:00), a café, a restaurant with lunch and
// dinner.
var patterns = []hoursPattern{
	week(rs(tr("09:00", "17:00")), rs(tr("09:00", "17:00")), rs(tr("09:00", "17:00")), rs(tr("09:00", "17:00")), rs(tr("09:00", "17:00")), nil, nil),
	week(rs(tr("10:00", "19:00")), rs(tr("10:00", "19:00")), rs(tr("10:00", "19:00")), rs(tr("10:00", "19:00")), rs(tr("10:00", "20:00")), rs(tr("10:00", "20:00")), rs(tr("11:00", "16:00"))),
	week(rs(tr("08:00", "12:00"), tr("13:00", "18:00")), rs(tr("08:00", "12:00"), tr("13:00", "18:00")), rs(tr("08:00", "12:00")), rs(tr("08:00", "12:00"), tr("13:00", "18:00")), rs(tr("08:00", "12:00"), tr("13:00", "18:00")), rs(tr("09:00", "12:00")), nil),
	week(nil, rs(tr("17:00", "01:00")), rs(tr("17:00", "01:00")), rs(tr("17:00", "02:00")), rs(tr("17:00", "03:00")), rs(tr("15:00", "03:00")), rs(tr("15:00", "00:00"))),
	week(rs(tr("00:00", "00:00")), rs(tr("00:00", "00:00")), rs(tr("00:00", "00:00")), rs(tr("00:00", "00:00")), rs(tr("00:00", "00:00")), rs(tr("00:00", "00:00")), rs(tr("00:00", "00:00"))),
	week(rs(tr("07:00", "15:00")), rs(tr("07:00", "15:00")), rs(tr("07:00", "15:00")), rs(tr("07:00", "15:00")), rs(tr("07:00", "15:00")), rs(tr("08:00", "14:00")), rs(tr("08:00", "14:00"))),
	week(nil, rs(tr("11:30", "14:30"), tr("18:00", "23:00")), rs(tr("11:30", "14:30"), tr("18:00", "23:00")), rs(tr("11:30", "14:30"), tr("18:00", "23:00")), rs(tr("11:30", "14:30"), tr("18:00", "23:30")), rs(tr("11:30", "14:30"), tr("18:00", "23:30")), rs(tr("11:30", "15:00"))),
}

// sandboxDay is the day number of now: whole days since 1970-01-01, UTC.
func sandboxDay(now time.Time) int64 { return floorDiv(now.Unix(), 86400) }

// floorDiv is a / b rounded down, for a positive b.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// generate invents the location of index i on the sandbox day of now.
//
// What it is made of: a place (the USA three times out of five), a name
// (one of the account's one to five brands, each two words and a kind of
// business, followed half of the time by the city), an address and phone of the place, sometimes an address line 2, mostly a
// website, mostly business hours of one of a few weekly patterns (past
// midnight and around the clock among them), for two in five of those the
// year-end holidays of the sandbox year, and for one in thirty a
// reopenDate, the first of the month after next. Its status is COMPLETE
// but for the location of index 1, always IN_PROGRESS so that every
// account of two locations or more has one a bulk update fails on, and
// about one location in fourteen else (IN_PROGRESS or NOT_SYNCED); index
// 0 is always COMPLETE. These never change with the day.
//
// Its errors come and go with the day: each location has a period of 3 to
// 10 days and a phase, and in each period it carries, one time in eight,
// one of the sandbox's error codes (and, one time in forty, a second), so
// a problem lasts a period or, when periods follow each other, longer.
func (a *account) generate(i int, now time.Time) listing.Location {
	k := a.key.child("location").child(strconv.Itoa(i))
	var pl place
	if percent(k.draw("us"), 60) {
		pl = pick(k.draw("place"), usPlaces)
	} else {
		pl = pick(k.draw("place"), otherPlaces)
	}
	brand := a.brand(int(between(k.draw("brand"), 0, int64(a.brands)-1)))
	address := pl.address(k.draw("address"))
	name := brand
	if percent(k.draw("branch"), 50) {
		name += " " + pl.city
	}
	loc := listing.Location{
		ID:           a.id(i),
		LocationName: name,
		City:         pl.city,
		Address:      address,
		Zip:          pl.zip(k.draw("zip")),
		Phone:        pl.phone(k.draw("phone")),
		Region:       pl.region,
		Status:       catalog.StatusComplete,
		CountryCode:  pl.country,
	}
	if d := k.draw("unit"); percent(d, 30) {
		loc.AdditionalAddressInfo = fmt.Sprintf(pick(sub(d, 1), units), between(sub(d, 2), 1, 40))
	}
	switch d := k.draw("web"); {
	case percent(d, 10):
	case percent(sub(d, 1), 10):
		loc.WebsiteURL = "http://" + slug(brand) + ".example/"
	default:
		loc.WebsiteURL = fmt.Sprintf("https://www.%s.example/locations/%s-%d", slug(brand), slug(pl.city), i)
	}
	if d := k.draw("hours"); percent(d, 90) {
		p := pick(sub(d, 1), patterns)
		loc.BusinessHours = &listing.BusinessHours{}
		for day, name := range catalog.Weekdays {
			loc.BusinessHours.SetDay(name, append([]listing.TimeRange(nil), p[day]...))
		}
		if percent(k.draw("holidays"), 40) {
			loc.HolidayHours = holidays(now.UTC().Year(), k.draw("holiday-set"))
		}
	}
	if percent(k.draw("reopen"), 3) {
		y, m, _ := now.UTC().Date()
		if d := time.Date(y, m+2, 1, 0, 0, 0, 0, time.UTC).Format(catalog.DateLayout); d < catalog.ReopenDateBefore {
			loc.ReopenDate = d
		}
	}
	switch d := k.draw("status"); {
	case i == 0:
	case i == 1 || percent(d, 5):
		loc.Status = StatusInProgress
	case percent(sub(d, 1), 2):
		loc.Status = StatusNotSynced
	}
	loc.Errors = a.errors(k, now)
	return loc
}

// errors are the errors a location carries on the sandbox day of now.
func (a *account) errors(k key, now time.Time) []listing.LocationError {
	period := between(k.draw("error-period"), 3, 10)
	phase := between(k.draw("error-phase"), 0, period-1)
	d := k.child("errors").at(floorDiv(sandboxDay(now)+phase, period))
	if !percent(d, 12) {
		return nil
	}
	first := int(between(sub(d, 1), 0, int64(len(locationErrors))-1))
	out := []listing.LocationError{locationErrors[first]}
	if percent(sub(d, 2), 20) {
		out = append(out, locationErrors[(first+1+int(between(sub(d, 3), 0, int64(len(locationErrors))-2)))%len(locationErrors)])
	}
	return out
}

// holidays are year-end entries of the sandbox year: some of Christmas
// Eve (short hours), Christmas Day (closed), New Year's Eve (short hours,
// then past midnight) and New Year's Day (closed).
func holidays(year int, d uint64) []listing.HolidayHours {
	all := []listing.HolidayHours{
		{Type: catalog.HolidayRange, Day: fmt.Sprintf("%04d-12-24", year), Times: rs(tr("09:00", "13:00"))},
		{Type: catalog.HolidayClosed, Day: fmt.Sprintf("%04d-12-25", year)},
		{Type: catalog.HolidayRange, Day: fmt.Sprintf("%04d-12-31", year), Times: rs(tr("10:00", "14:00"), tr("20:00", "02:00"))},
		{Type: catalog.HolidayClosed, Day: fmt.Sprintf("%04d-01-01", year+1)},
	}
	var out []listing.HolidayHours
	for j, h := range all {
		if j == 1 || d>>j&1 == 1 {
			out = append(out, h)
		}
	}
	return out
}

// brand is the j-th brand of the account.
func (a *account) brand(j int) string {
	k := a.key.child("brand").child(strconv.Itoa(j))
	return pick(k.draw("first"), brandFirst) + " " + pick(k.draw("last"), brandLast) + " " + pick(k.draw("kind"), brandKind)
}

// slug is s in lower-case ASCII letters and digits joined by '-', for a
// host or a path (ü becomes u, é e, & and other signs nothing).
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch r {
		case 'ü':
			r = 'u'
		case 'é':
			r = 'e'
		case 'ö':
			r = 'o'
		}
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}
