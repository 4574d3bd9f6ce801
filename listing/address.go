package listing

import (
	"net/url"
	"strings"
)

// Phone numbers (spec 2.14: "must include the international code").
//
// A phone is accepted when it starts with "+" and holds, after it, only
// digits and the separators people write between them (space, '-', '.',
// '(' and ')'), with 7 to 15 digits of which the first is not 0: E.164
// numbers are at most 15 digits with the country code, and no country code
// starts with 0. So "+12096438343", "+1 541-754-3010", "+49 351 8629318"
// and "+41 (44) 668 18 00" pass; "2096438343" (no international code),
// "0049 351 8629318" (the 00 prefix is a dialling habit, not the code),
// "+0 123 4567", "+1 800 FLOWERS" and "+1 555 0100 ext. 12" do not. Whether
// the digits form a number that exists is not checked.
const (
	minPhoneDigits = 7
	maxPhoneDigits = 15
)

func validPhone(s string) bool {
	rest, ok := strings.CutPrefix(s, "+")
	if !ok {
		return false
	}
	digits := 0
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case c >= '0' && c <= '9':
			if digits == 0 && c == '0' {
				return false
			}
			digits++
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')':
		default:
			return false
		}
	}
	return digits >= minPhoneDigits && digits <= maxPhoneDigits
}

// validWebsite reports whether s begins with http:// or https:// (spec
// 2.14; the scheme in any case, as URL schemes are case-insensitive) and
// names a host after it: "https://" alone is no website.
func validWebsite(s string) bool {
	lower := strings.ToLower(s)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.Host != ""
}

// noRegionCountries are the countries whose addresses have no
// administrative area, so that region must be left empty (spec 2.14: "for
// example Switzerland"). The spec gives no list. This one is the countries
// of the spec's country list (4.4, which spells the United Kingdom UK; GB
// is its ISO code) whose address format in Google's libaddressinput data
// (the "fmt" of each region, https://chromium-i18n.appspot.com/ssl-address)
// names no administrative area (%S), the data the listing directories
// format addresses with. Countries that libaddressinput gives no format of
// their own (Angola, Bolivia, Ghana, Qatar, ...) are left out, so region is
// not checked for them, nor for any country not listed here.
var noRegionCountries = setOf(
	"AF", "AL", "AT", "AZ", "BA", "BD", "BE", "BG", "BH", "BN", "CH", "CY", "CZ", "DE", "DK", "DO", "DZ",
	"EC", "ET", "FI", "FR", "GB", "GE", "GR", "GT", "HR", "HT", "HU", "IL", "IS", "JO", "KH", "KW", "LB",
	"LK", "LU", "MA", "MD", "ME", "MG", "MT", "MU", "NA", "NL", "NO", "NP", "NZ", "OM", "PK", "PL", "PT",
	"PY", "RS", "SA", "SE", "SG", "SI", "SK", "SN", "TN", "UK", "ZA", "ZM",
)

// RegionAllowed reports whether a location in the country may have a
// region: false for the countries whose addresses use none.
func RegionAllowed(countryCode string) bool {
	return !noRegionCountries[strings.ToUpper(strings.TrimSpace(countryCode))]
}

func setOf(items ...string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, s := range items {
		m[s] = true
	}
	return m
}

// usState is a state of the USA (or the District of Columbia) and the
// three-digit ZIP prefixes assigned to it.
type usState struct {
	code, name string
	zips       [][2]int // inclusive ranges of three-digit prefixes
}

// usStates is the table of the US state/ZIP cross-check (spec 2.14: "state
// and ZIP in the USA"). Its nature: the first three digits of a ZIP code
// name a sectional center facility of the US Postal Service, and each
// prefix belongs to one state (the USPS assignment, as listed for example
// by Wikipedia's "List of ZIP Code prefixes"). The ranges are coarse: a
// prefix the USPS has not assigned (or has retired) inside a state's range
// counts for that state, so the check refuses a ZIP of another state, not
// every ZIP that does not exist. The few five-digit exceptions (Fishers
// Island, NY, under Connecticut's 063) are not modelled. Military
// addresses (AA, AE, AP) and the territories (PR, VI, GU, AS, MP), which
// have ISO country codes of their own, are not US regions here.
var usStates = []usState{
	{"AL", "Alabama", [][2]int{{350, 369}}},
	{"AK", "Alaska", [][2]int{{995, 999}}},
	{"AZ", "Arizona", [][2]int{{850, 865}}},
	{"AR", "Arkansas", [][2]int{{716, 729}}},
	{"CA", "California", [][2]int{{900, 961}}},
	{"CO", "Colorado", [][2]int{{800, 816}}},
	{"CT", "Connecticut", [][2]int{{60, 69}}},
	{"DE", "Delaware", [][2]int{{197, 199}}},
	{"DC", "District of Columbia", [][2]int{{200, 200}, {202, 205}, {569, 569}}},
	{"FL", "Florida", [][2]int{{320, 339}, {341, 349}}},
	{"GA", "Georgia", [][2]int{{300, 319}, {398, 399}}},
	{"HI", "Hawaii", [][2]int{{967, 968}}},
	{"ID", "Idaho", [][2]int{{832, 838}}},
	{"IL", "Illinois", [][2]int{{600, 629}}},
	{"IN", "Indiana", [][2]int{{460, 479}}},
	{"IA", "Iowa", [][2]int{{500, 528}}},
	{"KS", "Kansas", [][2]int{{660, 679}}},
	{"KY", "Kentucky", [][2]int{{400, 427}}},
	{"LA", "Louisiana", [][2]int{{700, 714}}},
	{"ME", "Maine", [][2]int{{39, 49}}},
	{"MD", "Maryland", [][2]int{{206, 219}}},
	{"MA", "Massachusetts", [][2]int{{10, 27}, {55, 55}}},
	{"MI", "Michigan", [][2]int{{480, 499}}},
	{"MN", "Minnesota", [][2]int{{550, 567}}},
	{"MS", "Mississippi", [][2]int{{386, 397}}},
	{"MO", "Missouri", [][2]int{{630, 658}}},
	{"MT", "Montana", [][2]int{{590, 599}}},
	{"NE", "Nebraska", [][2]int{{680, 693}}},
	{"NV", "Nevada", [][2]int{{889, 898}}},
	{"NH", "New Hampshire", [][2]int{{30, 38}}},
	{"NJ", "New Jersey", [][2]int{{70, 89}}},
	{"NM", "New Mexico", [][2]int{{870, 884}}},
	{"NY", "New York", [][2]int{{5, 5}, {100, 149}}},
	{"NC", "North Carolina", [][2]int{{270, 289}}},
	{"ND", "North Dakota", [][2]int{{580, 588}}},
	{"OH", "Ohio", [][2]int{{430, 459}}},
	{"OK", "Oklahoma", [][2]int{{730, 731}, {734, 749}}},
	{"OR", "Oregon", [][2]int{{970, 979}}},
	{"PA", "Pennsylvania", [][2]int{{150, 196}}},
	{"RI", "Rhode Island", [][2]int{{28, 29}}},
	{"SC", "South Carolina", [][2]int{{290, 299}}},
	{"SD", "South Dakota", [][2]int{{570, 577}}},
	{"TN", "Tennessee", [][2]int{{370, 385}}},
	{"TX", "Texas", [][2]int{{733, 733}, {750, 799}, {885, 885}}},
	{"UT", "Utah", [][2]int{{840, 847}}},
	{"VT", "Vermont", [][2]int{{50, 54}, {56, 59}}},
	{"VA", "Virginia", [][2]int{{201, 201}, {220, 246}}},
	{"WA", "Washington", [][2]int{{980, 994}}},
	{"WV", "West Virginia", [][2]int{{247, 268}}},
	{"WI", "Wisconsin", [][2]int{{530, 549}}},
	{"WY", "Wyoming", [][2]int{{820, 831}}},
}

// usState returns the state a region names: its USPS code or its name, in
// any case, surrounding spaces ignored.
func lookupUSState(region string) (*usState, bool) {
	r := strings.TrimSpace(region)
	for i := range usStates {
		if strings.EqualFold(r, usStates[i].code) || strings.EqualFold(r, usStates[i].name) {
			return &usStates[i], true
		}
	}
	return nil, false
}

// usZipPrefix returns the three-digit prefix of a US ZIP code: five digits,
// optionally followed by "-" and four (ZIP+4).
func usZipPrefix(zip string) (int, bool) {
	z := strings.TrimSpace(zip)
	if len(z) != 5 && len(z) != 10 {
		return 0, false
	}
	for i := 0; i < len(z); i++ {
		if i == 5 {
			if z[i] != '-' {
				return 0, false
			}
			continue
		}
		if z[i] < '0' || z[i] > '9' {
			return 0, false
		}
	}
	return int(z[0]-'0')*100 + int(z[1]-'0')*10 + int(z[2]-'0'), true
}

func (s *usState) hasZipPrefix(p int) bool {
	for _, r := range s.zips {
		if p >= r[0] && p <= r[1] {
			return true
		}
	}
	return false
}

// USStateOfZip returns the USPS code of the state a US ZIP code belongs to
// by the cross-check's table, or false when the ZIP is malformed or its
// prefix is in no state's range.
func USStateOfZip(zip string) (string, bool) {
	p, ok := usZipPrefix(zip)
	if !ok {
		return "", false
	}
	for i := range usStates {
		if usStates[i].hasZipPrefix(p) {
			return usStates[i].code, true
		}
	}
	return "", false
}

// The Spanish rule of spec 2.14: "for Spain the province, not the
// autonomous community". Spain has 17 autonomous communities, of which
// ten hold several provinces; a location there must name its province
// (Barcelona), not its community (Cataluña). The seven communities of one
// province share its name or nearly (Madrid, Comunidad de Madrid), so
// their official long names are refused too, with the province to give.
// Names are compared without case, accents or the separators space and
// '-', and in the community's usual Spanish, co-official and English
// forms. A region that is no community's name passes: the sandbox and
// the push refuse what is known wrong, as the US ZIP check does, not
// every spelling of the 50 provinces (A Coruña, La Coruña, Coruña...).
var spanishCommunities = []struct {
	names     []string
	provinces []string
}{
	{[]string{"Andalucía", "Andalusia"}, []string{"Almería", "Cádiz", "Córdoba", "Granada", "Huelva", "Jaén", "Málaga", "Sevilla"}},
	{[]string{"Aragón", "Aragon"}, []string{"Huesca", "Teruel", "Zaragoza"}},
	{[]string{"Canarias", "Islas Canarias", "Canary Islands"}, []string{"Las Palmas", "Santa Cruz de Tenerife"}},
	{[]string{"Castilla y León", "Castile and León"}, []string{"Ávila", "Burgos", "León", "Palencia", "Salamanca", "Segovia", "Soria", "Valladolid", "Zamora"}},
	{[]string{"Castilla-La Mancha", "Castile-La Mancha"}, []string{"Albacete", "Ciudad Real", "Cuenca", "Guadalajara", "Toledo"}},
	{[]string{"Cataluña", "Catalunya", "Catalonia"}, []string{"Barcelona", "Girona", "Lleida", "Tarragona"}},
	{[]string{"Comunidad Valenciana", "Comunitat Valenciana", "Valencian Community"}, []string{"Alicante", "Castellón", "Valencia"}},
	{[]string{"Extremadura"}, []string{"Badajoz", "Cáceres"}},
	{[]string{"Galicia"}, []string{"A Coruña", "Lugo", "Ourense", "Pontevedra"}},
	{[]string{"País Vasco", "Euskadi", "Basque Country"}, []string{"Álava", "Bizkaia", "Gipuzkoa"}},
	{[]string{"Comunidad de Madrid", "Community of Madrid"}, []string{"Madrid"}},
	{[]string{"Región de Murcia", "Region of Murcia"}, []string{"Murcia"}},
	{[]string{"Principado de Asturias"}, []string{"Asturias"}},
	{[]string{"Comunidad Foral de Navarra", "Nafarroa"}, []string{"Navarra"}},
}

// foldName is a place name compared loosely: lower case, without accents,
// spaces or '-'.
var foldName = strings.NewReplacer(
	"á", "a", "à", "a", "é", "e", "è", "e", "í", "i", "ï", "i", "ó", "o", "ò", "o", "ú", "u", "ü", "u", "ñ", "n", "ç", "c",
	" ", "", "-", "", "·", "",
)

// spanishCommunity returns the provinces of the autonomous community
// called region, when it is the name of one.
func spanishCommunity(region string) ([]string, bool) {
	key := foldName.Replace(strings.ToLower(strings.TrimSpace(region)))
	for _, c := range spanishCommunities {
		for _, n := range c.names {
			if foldName.Replace(strings.ToLower(n)) == key {
				return c.provinces, true
			}
		}
	}
	return nil, false
}

// orList is "A", "A or B", "A, B or C".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
