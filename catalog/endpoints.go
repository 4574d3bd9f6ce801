package catalog

// Bounds and lists of the spec that are not tied to one endpoint.
const (
	// MaxURLLen bounds url on backlink endpoints (spec 8.3).
	MaxURLLen = 2000
	// MaxComparisonURLs bounds urls on comparison (spec 8.3).
	MaxComparisonURLs = 10
	// MaxMatrixURLs bounds urls on matrix (spec 8.3).
	MaxMatrixURLs = 6
	// MinKeywordLen and MaxKeywordLen bound keyword (spec 4.4).
	MinKeywordLen = 1
	MaxKeywordLen = 255
	// FirstKeywordMonth is the oldest month keyword metrics accepts (spec 4.4);
	// the newest is the current month.
	FirstKeywordMonth = "2012-01"
	// MaxScoreProfileRows bounds the score profile (spec 4.3 note 2).
	MaxScoreProfileRows = 101
	// DefaultLimit is the page size when limit is absent (spec 8.4).
	DefaultLimit = 100
	// DefaultSummaryLimit is summary's page size when limit is absent.
	DefaultSummaryLimit = 12
)

// Countries are the country codes keyword metrics accepts (spec 4.4), in the
// spec's order.
var Countries = []string{
	"AF", "AL", "DZ", "AO", "AR", "AM", "AU", "AT", "AZ", "BS", "BH", "BD", "BY", "BE", "BZ", "BO", "BA", "BW", "BR", "BN",
	"BG", "KH", "CM", "CA", "CV", "CL", "CO", "CR", "HR", "CY", "CZ", "CD", "DK", "DO", "EC", "EG", "SV", "EE", "ET", "FI",
	"FR", "GE", "DE", "GH", "GR", "GT", "GY", "HT", "HN", "HK", "HU", "IS", "IN", "ID", "IE", "IL", "IT", "JM", "JP", "JO",
	"KZ", "KW", "LV", "LB", "LY", "LT", "LU", "MG", "MY", "MT", "MU", "MX", "MD", "MN", "ME", "MA", "MZ", "NA", "NP", "NL",
	"NZ", "NI", "NG", "NO", "OM", "PK", "PA", "PY", "PE", "PH", "PL", "PT", "QA", "RO", "RU", "SA", "SN", "RS", "SG", "SK",
	"SI", "ZA", "KR", "ES", "LK", "SE", "CH", "TW", "TH", "TT", "TN", "TR", "UA", "AE", "UK", "US", "UY", "VE", "VN", "ZM",
	"ZW",
}

// Parameters shared by several endpoints (spec 4.1).
var (
	pURL       = Param{Name: "url", Kind: PString, Required: true, MinLen: 1, MaxLen: MaxURLLen, Doc: "target, with or without protocol"}
	pFields    = Param{Name: "fields", Kind: PList, Doc: "comma separated response field names to return"}
	pOrderBy   = Param{Name: "order_by", Kind: PString, Doc: "response field to sort by; must be among the fields returned"}
	pDirection = Param{Name: "direction", Kind: PDirection, Default: "DESC", Enum: []string{"ASC", "DESC"}, Doc: "sort direction"}
	pLimit     = Param{Name: "limit", Kind: PInt, Default: "100", Min: 1, Doc: "rows to return"}
	pOffset    = Param{Name: "offset", Kind: PInt, Min: 0, Doc: "rows to skip"}
	pFilter    = Param{Name: "filter", Kind: PFilter, Doc: "filter expression (spec 4.2)"}
	pFormat    = Param{Name: "format", Kind: PEnum, Default: "json", Enum: []string{"json", "csv"}, Doc: "response format"}
)

func scopeParam(scopes []Scope) Param {
	enum := make([]string, len(scopes))
	for i, s := range scopes {
		enum[i] = string(s)
	}
	return Param{Name: "scope", Kind: PEnum, Required: true, Enum: enum, Doc: "kind of target"}
}

func listParams(scopes []Scope, defaultOrder string) []Param {
	order := pOrderBy
	order.Default = defaultOrder
	return []Param{pURL, scopeParam(scopes), pFields, order, pDirection, pLimit, pOffset, pFilter, pFormat}
}

// Field docs used by several endpoints.
const (
	docFirstSeen = "when the API first saw it (UTC)"
	docLastSeen  = "when the API last saw it (UTC)"
)

var endpoints = []*Endpoint{
	{
		Name: "overview", Path: "/apis/v4/backlinks/v1/overview", Shape: Object,
		Doc:    "Aggregate backlink counts of a target.",
		Scopes: AllScopes,
		Params: []Param{pURL, scopeParam(AllScopes), pFields, pFormat},
		Fields: []Field{
			{"backlinks_count", Int, "number of backlinks"},
			{"domains_count", Int, "referring domains"},
			{"urls_count", Int, "referring pages"},
			{"follows_count", Int, "dofollow backlinks"},
			{"nofollows_count", Int, "nofollow backlinks"},
			{"sponsored_count", Int, "sponsored backlinks"},
			{"ugc_count", Int, "UGC backlinks"},
			{"frames_count", Int, "backlinks placed in iframes"},
			{"forms_count", Int, "backlinks placed in forms"},
			{"images_count", Int, "image backlinks"},
			{"texts_count", Int, "text backlinks"},
			{"ips_count", Int, "referring IP addresses"},
			{"ip_class_c_count", Int, "referring IP class C subnets"},
			{"new_count", Int, "new backlinks (first_seen_at within the last 30 days)"},
			{"lost_count", Int, "lost backlinks"},
			{"score", Int, "page score when scope is PAGE, otherwise domain score (0-100)"},
		},
		Price: Price{45, PerRequest}, Table: "backlink_overview", PerTarget: true,
	},
	{
		Name: "summary", Path: "/apis/v4/backlinks/v1/summary", Shape: List,
		Doc:    "Monthly history of a target's backlink counts.",
		Scopes: []Scope{RootDomain, Subdomain, Page},
		Params: []Param{
			pURL, scopeParam([]Scope{RootDomain, Subdomain, Page}), pFields,
			{Name: "limit", Kind: PInt, Default: "12", Min: 1, Doc: "months to return; capped by available history"},
			{Name: "date_from", Kind: PMonth, Doc: "first month, inclusive; default the oldest available month"},
			{Name: "date_to", Kind: PMonth, Doc: "last month, inclusive; default the current month"},
			pFormat,
		},
		Fields: []Field{
			{"score", Int, "authority score 0-100; page score for PAGE scope, else domain score"},
			{"backlinks_count", Int, "backlinks in that month"},
			{"domains_count", Int, "referring domains"},
			{"follows_count", Int, "follow backlinks"},
			{"month_date", Date, "first day of the month the row describes"},
			{"url", Text, "target exactly as passed in the request"},
		},
		DefaultFields: []string{"score", "backlinks_count", "domains_count", "follows_count", "month_date"},
		DefaultLimit:  DefaultSummaryLimit,
		Price:         Price{40, PerLine}, Table: "backlink_history", MonthField: "month_date", PerTarget: true,
		Echoes: []string{"date_from", "date_to", "effective_url", "scope", "url", "total"},
	},
	{
		Name: "links", Path: "/apis/v4/backlinks/v1/links", Shape: List,
		Doc:    "Individual backlinks of a target.",
		Scopes: AllScopes, Params: listParams(AllScopes, "page_score"),
		Fields: []Field{
			{"source_url", Text, "source page URL"},
			{"target_url", Text, "target page URL"},
			{"anchor", Text, "anchor text"},
			{"redirect_url", Text, "original URL found on the source page when it redirects; then target_url holds the final resolved URL"},
			{"source_title", Text, "title of the source page"},
			{"target_title", Text, "title attribute of the anchor element"},
			{"image_url", Text, "src attribute when the backlink is an image"},
			{"image_alt", Text, "alt attribute when the backlink is an image"},
			{"ip_address", Text, "source page IP address"},
			{"lang", Text, "language of the source page, ISO 639-1 two-letter code when one exists, else ISO 639-2 three-letter code"},
			{"source_size", Int, "source page content size in bytes"},
			{"external_links_count", Int, "external links on the source page"},
			{"internal_links_count", Int, "internal links on the source page"},
			{"response_code", Int, "HTTP status of the source page"},
			{"page_score", Int, "source page score 0-100"},
			{"domain_score", Int, "source domain score 0-100"},
			{"first_seen_at", Timestamp, docFirstSeen},
			{"last_seen_at", Timestamp, docLastSeen},
			{"source_domain", Text, "source page domain"},
			{"is_nofollow", Bool, "has rel nofollow"},
			{"is_ugc", Bool, "has rel ugc"},
			{"is_sponsored", Bool, "has rel sponsored"},
			{"is_form", Bool, "inside a form element"},
			{"is_frame", Bool, "inside an iframe"},
			{"is_image", Bool, "image-based"},
			{"is_sitewide_main", Bool, "main URL among sitewide backlinks"},
			{"is_new", Bool, "first_seen_at is less than 31 days ago"},
			{"is_lost", Bool, "lost"},
		},
		DefaultOrder: "page_score", DefaultLimit: DefaultLimit,
		Echoes: []string{"direction", "effective_url", "filter", "limit", "offset", "order_by", "scope", "total", "url"},
		Price:  Price{45, PerLine}, Table: "backlinks", TotalField: "backlinks_count",
		Key:       []string{"source_url", "target_url", "anchor", "image_url"},
		PerTarget: true,
	},
	{
		Name: "ref-domains", Path: "/apis/v4/backlinks/v1/ref-domains", Shape: List,
		Doc:    "Domains that link to a target.",
		Scopes: AllScopes, Params: listParams(AllScopes, "backlinks_count"),
		Fields: []Field{
			{"domain", Text, "referring domain"},
			{"ip_address", Text, "IP of the hosting server"},
			{"country", Text, "country of the IP, ISO 3166-1 alpha-2, uppercase"},
			{"backlinks_count", Int, "backlinks from this domain to the target"},
			{"domain_score", Int, "0-100"},
			{"first_seen_at", Timestamp, docFirstSeen},
			{"last_seen_at", Timestamp, docLastSeen},
			{"is_follow", Bool, "dofollow"},
			{"is_new", Bool, "first_seen_at within the last 30 days"},
			{"is_lost", Bool, "lost"},
		},
		DefaultOrder: "backlinks_count", DefaultLimit: DefaultLimit,
		Price: Price{40, PerLine}, Table: "ref_domains", Key: []string{"domain"}, PerTarget: true, TotalField: "domains_count",
		Echoes: []string{"total", "url", "scope", "direction", "order_by", "limit", "offset", "filter"},
	},
	{
		Name: "ref-ips", Path: "/apis/v4/backlinks/v1/ref-ips", Shape: List,
		Doc:    "IP addresses that link to a target.",
		Scopes: AllScopes, Params: listParams(AllScopes, "domains_count"),
		Fields: []Field{
			{"ip_address", Text, "referring server IP"},
			{"country", Text, "ISO 3166-1 alpha-2 uppercase"},
			{"backlinks_count", Int, "backlinks from this IP"},
			{"domains_count", Int, "domains on this IP"},
			{"first_seen_at", Timestamp, docFirstSeen},
			{"last_seen_at", Timestamp, docLastSeen},
		},
		DefaultOrder: "domains_count", DefaultLimit: DefaultLimit,
		Price: Price{20, PerLine}, Table: "ref_ips", Key: []string{"ip_address"}, PerTarget: true, TotalField: "ips_count",
	},
	{
		Name: "pages", Path: "/apis/v4/backlinks/v1/pages", Shape: List,
		Doc:    "Pages of a target that have backlinks.",
		Scopes: AllScopes, Params: listParams(AllScopes, "domains_count"),
		Fields: []Field{
			{"source_url", Text, "page URL"},
			{"source_title", Text, "page title"},
			{"response_code", Int, "HTTP status"},
			{"backlinks_count", Int, "backlinks to the page"},
			{"domains_count", Int, "referring domains to the page"},
			{"external_links_count", Int, "external links on the page"},
			{"internal_links_count", Int, "internal links on the page"},
			{"first_seen_at", Timestamp, docFirstSeen},
			{"last_seen_at", Timestamp, docLastSeen},
		},
		DefaultOrder: "domains_count", DefaultLimit: DefaultLimit,
		Price: Price{40, PerLine}, Table: "indexed_pages", Key: []string{"source_url"}, PerTarget: true,
	},
	{
		Name: "anchors", Path: "/apis/v4/backlinks/v1/anchors", Shape: List,
		Doc:    "Anchor texts of a target's backlinks.",
		Scopes: AllScopes, Params: listParams(AllScopes, "domains_count"),
		Fields: []Field{
			{"anchor", Text, "anchor text"},
			{"backlinks_count", Int, "backlinks with this anchor"},
			{"domains_count", Int, "domains with this anchor"},
			{"first_seen_at", Timestamp, docFirstSeen},
			{"last_seen_at", Timestamp, docLastSeen},
		},
		DefaultOrder: "domains_count", DefaultLimit: DefaultLimit,
		Price: Price{40, PerLine}, Table: "anchors", Key: []string{"anchor"}, PerTarget: true,
	},
	{
		Name: "score-profile", Path: "/apis/v4/backlinks/v1/score-profile", Shape: List,
		Doc:    "Referring domains of a target counted by their authority score; at most 101 rows.",
		Scopes: AllScopes,
		Params: []Param{pURL, scopeParam(AllScopes), pFormat},
		Fields: []Field{
			{"domain_score", Int, "authority score 0-100"},
			{"domains_count", Int, "referring domains with that score"},
		},
		Price: Price{1, PerLine}, Table: "score_profile", Key: []string{"domain_score"}, PerTarget: true, MaxRows: MaxScoreProfileRows,
		Echoes: []string{"url", "effective_url", "scope", "total"},
	},
	{
		Name: "competitors", Path: "/apis/v4/backlinks/v1/competitors", Shape: List,
		Doc: "Domains that share referring domains with a domain (at least 5, similarity at least 0.01).",
		Params: []Param{
			{Name: "domain", Kind: PString, Required: true, MinLen: 1, MaxLen: MaxURLLen, Doc: "the domain whose competitors to return"},
			pFields, withDefault(pOrderBy, "similarity"), pDirection, pLimit, pOffset, pFormat,
		},
		Fields: []Field{
			{"domain", Text, "competitor domain"},
			{"similarity", Float, "similarity with the queried domain, 0-1"},
			{"common_refdomains", Int, "referring domains shared with the queried domain"},
		},
		DefaultOrder: "similarity", DefaultLimit: DefaultLimit,
		Price: Price{40, PerLine}, Table: "competitors", Key: []string{"domain"}, PerTarget: true,
		Echoes: []string{"domain", "direction", "order_by", "limit", "offset", "total"},
	},
	{
		Name: "comparison", Path: "/apis/v4/backlinks/v1/comparison", Shape: List,
		Doc:    "Backlink counts of up to 10 targets side by side, one row per target.",
		Scopes: []Scope{RootDomain, Subdomain, Page},
		Params: []Param{
			{Name: "urls", Kind: PList, Required: true, Min: 1, Max: MaxComparisonURLs, MaxLen: MaxURLLen, Doc: "targets, comma separated"},
			scopeParam([]Scope{RootDomain, Subdomain, Page}), pFields, pFormat,
		},
		Fields: []Field{
			{"score", Int, "authority score; page score for PAGE scope, else domain score"},
			{"backlinks_count", Int, "backlinks"},
			{"domains_count", Int, "referring domains"},
			{"follows_count", Int, "follow backlinks"},
			{"month_date", Date, "first day of the month the row describes"},
			{"url", Text, "target as passed in the request"},
		},
		DefaultFields: []string{"score", "backlinks_count", "domains_count", "follows_count", "url", "scope"},
		Price:         Price{40, PerLine}, Table: "comparison", PerTarget: true, TargetField: "url", MonthField: "month_date",
		Echoes: []string{"scope", "total", "urls"},
	},
	{
		Name: "matrix", Path: "/apis/v4/backlinks/v1/matrix", Shape: List,
		Doc:    "Referring domains of up to 6 targets with the backlinks each sends to each target (gap analysis).",
		Scopes: []Scope{RootDomain, Subdomain, Page},
		Params: []Param{
			{Name: "urls", Kind: PList, Required: true, Min: 1, Max: MaxMatrixURLs, MaxLen: MaxURLLen, Doc: "targets, comma separated"},
			scopeParam([]Scope{RootDomain, Subdomain, Page}), pOrderBy, pDirection, pLimit, pOffset, pFilter,
		},
		Fields: []Field{
			{"domain", Text, "domain name"},
			{"domain_score", Int, "0-100"},
			{"ip_address", Text, "domain IP"},
			{"country", Text, "ISO 3166-1 alpha-2 uppercase"},
			{"backlinks_counts", IntList, "backlinks from the domain to each requested target, in the order of the request"},
			{"matches_count", Int, "number of requested targets the domain refers to"},
		},
		DefaultLimit: DefaultLimit, JSONOnly: true,
		Price: Price{40, PerLine}, Table: "matrix", Key: []string{"domain"}, PerSet: true,
		Echoes: []string{"urls", "scope", "total"},
	},
	{
		Name: "keyword-metrics", Path: "/apis/v4/keywords/v1/metrics", Shape: Object,
		Doc: "Metrics of one keyword in one country for one monthly snapshot.",
		Params: []Param{
			{Name: "keyword", Kind: PString, Required: true, MinLen: MinKeywordLen, MaxLen: MaxKeywordLen, Doc: "the keyword"},
			{Name: "country", Kind: PEnum, Required: true, Enum: Countries, Doc: "country code"},
			{Name: "month", Kind: PMonth, MinMonth: FirstKeywordMonth, UpToNow: true, Doc: "YYYY-MM from 2012-01 to the current month; default the current month"},
			pFormat,
		},
		Fields: []Field{
			{"competitive_density", Int, "competitive density of the keyword"},
			{"cpc", DecString, "cost per click"},
			{"intents", TextList, "search intents of the keyword"},
			{"keyword_difficulty", Int, "difficulty"},
			{"number_of_results", IntString, "number of results"},
			{"search_volume", IntString, "search volume"},
			{"serp_features", TextList, "SERP features present"},
			{"trends", IntList, "a series of twelve integers"},
		},
		Context: []Field{
			{"keyword", Text, "the keyword as requested"},
			{"country", Text, "country code as requested"},
		},
		Price: Price{20, PerRequest}, Table: "keyword_metrics", Key: []string{"keyword", "country"},
		Echoes: []string{"country", "keyword", "month"},
	},
}

func withDefault(p Param, def string) Param {
	p.Default = def
	return p
}
