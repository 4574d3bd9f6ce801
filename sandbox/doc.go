// Package sandbox is a deterministic stand-in for the data API: users try job
// specs against it for free, and every test and benchmark of the pipeline
// runs against it, so it answers the way the real API does (spec and design
// notes) and invents data that hold together.
//
// # What it owns
//
//   - Serving every endpoint of package catalog at its Path, GET only, with
//     the real API's behaviour around the data: API key auth (header
//     "Authorization: Apikey KEY" or query parameter key=KEY) or a bearer
//     token of the token service ("Authorization: Bearer TOKEN", spec 5.2:
//     the request is the account's, the API key the token was issued for,
//     and spends its units; bearerAccount), 401 otherwise (an unknown,
//     revoked or expired token with WWW-Authenticate: Bearer),
//     parameter validation read from the catalog's Params (400 naming each
//     bad parameter, unknown ones included), the JSON envelope with its meta
//     echoes, format=csv, and the JSON error envelope with "retryable".
//   - Its CSV encoder (spec 2.1): ';' between cells, lists joined with ',',
//     a cell holding ';', '"', CR or LF quoted with '"' and inner quotes
//     doubled, "\n" after each row, columns in catalog order or in the order
//     of fields. Bodies are written row by row through a small buffer, never
//     built whole.
//   - Usage: units charged per key by the catalog's Price (per answered
//     request, or per line returned; failures cost nothing), readable with
//     Server.Usage and GET /sandbox/usage?key=KEY.
//   - The data model below, and every list endpoint's ordering, paging and
//     filtering.
//   - The token service of spec 5 on the same address (package oauth: its
//     paths, flows, sandbox-only approval and choices are documented
//     there), configured by Config.DeviceExpiresIn, DeviceInterval,
//     DeviceAutoApprove, ClientID and ClientSecret. Its tokens belong to
//     the configured API keys; Server.IssueToken gives one without a flow.
//     The status and slow faults of Config.Faults hit its token endpoints
//     too (package oauth says why no cut).
//   - The listing-management endpoints of spec 4.5 under both of
//     catalog.LocationsPrefixes (listing.go; "Listing management" below),
//     over the locations of package locations.
//
// Every catalog endpoint has a generator (the generators table); New
// refuses to start when one is missing.
//
// # How data are derived
//
// Nothing is stored. Every value is a pure function of the seed, the
// request and the sandbox day (the UTC date of Config.Now), computed with
// integer arithmetic only, so the same request gives the same bytes on every
// machine; a CSV body is byte-identical, and so is a JSON one, because the
// request id is derived the same way.
//
// A backlink target belongs to a root domain, its registrable domain
// (approximated: the last two labels, three under a common two-label
// suffix). The root gets a profile from a hash of (seed, root): its number
// of backlinks, or exactly N when a label is "n" followed by digits (such a
// label starts a registrable domain of its own: blog.n250000.example
// belongs to n250000.example, which has exactly 250000 backlinks; N is at
// most 20,000,000, beyond which the label is an ordinary one), ratios
// for referring domains, pages, IPs and class C subnets, flag counts
// (nofollow, sponsored, UGC, frame, form, image, lost), a domain score, and
// a history of 6 to 120 months with a growth curve.
//
// The profile numbers its backlinks by time rank r, 0 to N-1: rank r was
// first seen at seen(r), a non-decreasing curve from the history's start to
// the sandbox day, broken by bursts: in about one month in seven of a
// history (targets of 100 backlinks or more), on a day of it, 2 to 6% of
// the backlinks are first seen at once (a spike of link velocity, spread
// over that day). A burst's day and size are drawn from the root and its
// month alone, so a snapshot taken at any later sandbox day shows it on
// the same day. The share of lost backlinks is the root's, moved by up to
// a half each month, so the lost links (and domains) vary month by month. Referring domain j owns a contiguous range of ranks, and
// no domain owns more than the one before it: the sizes are a sum of linear
// profiles (a long tail plus a heavy head, the top 0.25% of domains holding
// up to a quarter of the backlinks, as sitewide links do), whose prefix sums
// are floor sums, so the first rank of any domain is a closed formula.
// Each domain's ranks are split evenly into its referring pages; referring
// IP i hosts a contiguous range of domains (again never more than the IP
// before it); consecutive IPs share a class C subnet; each flag marks exactly
// its count of ranks, spread evenly. Hence the backlink of any rank is
// derivable on demand in O(log^2 N), a neighbouring one in O(1), a list of
// five million rows costs no memory up front, and every count of a prefix of
// ranks is a formula or a binary search that equals counting the rows.
//
// Referring domains come from one pool per seed: domain j of a root is pool
// position pool.mark(j), every f-th position of the pool's first f*domains
// (f from 2 to 10, per root). A domain's name, the host and paths of its
// pages, its language and its domain score are functions of its pool
// position alone, so two targets share a referring domain exactly when both
// draw its position (matrix, competitors), and it looks the same in both.
// The score falls with the position (4.3 points per doubling from 100), so
// domains in rank order come in domain score order. A domain's IP address
// and country belong to the target's IP structure: the same pool domain may
// show another IP under another target, and the matrix shows the IP of the
// first target that has it.
//
// # Scopes
//
// A root has a site: its host, for an ordinary root up to three invented
// subdomains (blog, shop, m, ...; a sized n<digits> root or an IP address
// has its host only), and a finite list of pages that have backlinks (one
// per three referring IPs, at most 5000): each host's home page, common
// pages (/pricing, /about, /über-uns, ...) and numbered ones, some with
// queries, ';', ',' or Unicode in their path. Every referring IP links to
// exactly one page, drawn by weight (the root's home page draws a third),
// so all the domains on an IP, and all their backlinks, point to that page.
//
// A scope is the set of pages it covers: ROOT_DOMAIN all; SUBDOMAIN the
// pages of that host (www. is the bare host); SUBFOLDER those of the host
// whose path starts with the folder ("/" is the whole host); PAGE the page
// whose path and query equal the url's ("/" when it has none). A host,
// folder or page the site does not have covers nothing and has no backlinks
// (a 200 with zeros and empty lists). So PAGE within SUBFOLDER within SUBDOMAIN within
// ROOT_DOMAIN holds row by row: a narrower scope covers whole IPs, hence
// whole domains, so its links, referring domains, referring IPs and pages
// are rows of the wider scope, unchanged; its anchors are anchors of the
// wider one with counts no larger. Where a scope covers the whole site its
// counts are the profile's formulas; a narrower one is counted in one pass
// over the root's domains (O(domains), no memory; about 30 ms for half a
// million backlinks).
//
// # Endpoints
//
//   - overview: the scope's counts. urls_count counts referring pages
//     (distinct source_url of the links); new_count the backlinks first seen
//     within the last 30 days. score is the root's domain score, the page
//     score at PAGE scope (0 without backlinks).
//   - summary: per month, the backlinks first seen by the month's end (lost
//     backlinks are lost within the current month, so they count in every
//     month before), the domains of those backlinks, their follows, and the
//     score grown with the square root of the share of backlinks; its current
//     month is the overview.
//   - links: one row per backlink. target_url is the page its IP links to;
//     redirect_url is set on about 4% (an old http:// URL of that page);
//     image links (the image flag) have an empty anchor, an image_url and,
//     mostly, an image_alt; other links have an anchor from the target's
//     vocabulary (its brand, its URL, generic and awkward texts), shifted by
//     the link's place on its page so that no two links of a page share one:
//     (source_url, target_url, anchor, image_url) is unique. lang is per
//     referring domain: ISO 639-1, ISO 639-2 for languages without a
//     two-letter code (fil, haw, gsw, ...), or empty. response_code,
//     source_size and the links counts are per referring page (about 12%
//     not 200).
//     page_score falls with the referring page's rank and never exceeds the
//     domain's score; is_sitewide_main marks the oldest link of a domain
//     linking from 5 pages or more; is_new is first_seen_at within the last
//     30 days (spec 2.4 says "less than 31 days ago" and 2.2 "within the
//     last 30 days" for new_count; one threshold keeps new_count equal to
//     the links with is_new); is_lost follows the lost flag, and a lost link
//     was last seen during the current month, a live one within the last 7
//     days.
//   - ref-domains: one row per referring domain, aggregating its links:
//     backlinks_count its links, is_follow when one of them is dofollow,
//     is_lost when all are lost, is_new when first seen within 30 days,
//     first and last seen the min and max of its links'.
//   - ref-ips: one row per referring IP: its domains and their links.
//   - pages: the pages of the target that have backlinks (the "indexed
//     pages" of spec 2.7; not the referring pages urls_count counts), with
//     their backlinks and referring domains (both add up to the target's:
//     a domain links to one page), title, status and first and last seen.
//   - anchors: one row per anchor text, the empty anchor of image links
//     included; backlinks add up to the target's.
//   - score-profile: the referring domains counted by domain score, highest
//     first, scores without domains left out (at most 101 rows).
//   - competitors: of the domain's root: invented domains of a quarter to
//     four times its referring domains (and sized n<digits> rivals of half
//     to twice its backlinks), each a root of its own that any request about
//     it finds the same, kept when they share at least 5 referring domains
//     and their Jaccard similarity (shared / union of the referring domains)
//     is at least 0.01 (spec 4.3 note 3). similarity has four decimals.
//   - comparison: one row per url, in the order given, with that target's
//     overview numbers; month_date is the current month. The default fields
//     name scope, which is not a row field: it is left out of the rows.
//   - matrix: the union of the targets' referring domains (at their scope),
//     backlinks_counts[i] the backlinks the domain sends to the i-th url,
//     matches_count the non-zero counts.
//
// # Order, paging and filters
//
// Each list has a generation order: links by rank, ref-domains by domain,
// ref-ips by IP, matrix by pool position. The model makes it the default
// order, descending (page_score, backlinks_count, domains_count; matrix,
// which has no default in the spec, by domain_score), so the default order
// streams without sorting, in either direction, from any offset: an offset
// costs a binary search at the root scope, a walk over the domains in a
// narrower one, and a merge of the targets' domains on matrix (whose total
// is a first merge). Streaming keeps the heap flat: BenchmarkStreamLinks
// streams millions of links as CSV in about 4 MiB of heap, whatever N. The bounded tables (pages, anchors, score profile,
// competitors, comparison) are built whole in one pass and sorted in
// memory; their size does not depend on the target's.
//
// Ties are broken by generation order: DESC keeps it, ASC reverses it, so
// ASC is exactly the reverse of DESC for every field and paging is exact in
// every order. An order_by other than the rows' own is sorted in memory as
// (key, id) pairs: at most 2,000,000 rows after the filter for numbers,
// timestamps and booleans (16 bytes each), at most 250,000 for text;
// beyond, the answer is a 400 naming order_by that says so. order_by must
// be a returned field (fields) and not a list.
//
// A filter (spec 4.2, package filter) applies before ordering and paging:
// meta.total counts the matching rows, which costs a pass over the list
// (about a second for five million links), and the page is a second pass
// from where the first saw its first row. On matrix, backlinks_counts[n]
// past the number of urls is a 400.
//
// limit must be at least 1 and has no upper bound: "the effective maximum
// depends on available data" (spec 8.2), so a page holds at most the rows
// there are. offset is 0 when absent (the spec states no default) and may
// pass the total (an empty page). urls (comparison, matrix) must name each
// target once. Meta echoes are the catalog's per endpoint (filter is null
// when absent); ref-ips, pages and anchors, whose echoes the spec does not
// list, echo what links echoes (they take the same parameters, and a client
// cannot page without total), and matrix adds filter to its list. urls are
// echoed as an array of strings. Matrix answers JSON only: format is a 400
// naming it.
//
// # Keyword metrics
//
// Keyword metrics derive from (seed, keyword lowercased with spaces
// collapsed, country): its size, intents and typical cost; and from the
// month: seasonality, cpc and density drift, SERP features. trends are the
// twelve months ending at the requested one, oldest first, each in percent
// of the busiest; search_volume is their average monthly volume rounded to
// two significant digits. A month's volume is the same in every request
// whose trends include it.
//
// # Limits, balance and faults
//
// Around the data the sandbox behaves as the real API does with an account
// (design notes). An authenticated request meets, in this order:
//
//   - The limits of its key, across all endpoints: Config.RatePerSecond
//     requests a second (a golang.org/x/time/rate token bucket whose burst
//     is the rate, read on Config.WallClock: the sandbox clock is usually
//     pinned and would never refill it) and Config.MaxConcurrent requests
//     in flight; 10 and 10 by default, negative for none. Past either the
//     answer is 429 with the error envelope, retryable, and without
//     Retry-After. A request refused for concurrency takes no token. The
//     usage endpoint is not limited.
//   - Validation (400) and the generator. A paged endpoint (one that
//     takes limit and offset) serves at most Config.MaxLimit lines a
//     request (10,000 by default, DefaultMaxLimit): a larger limit, or a
//     default past it, answers 400 "limit must be from 1 to N for
//     ENDPOINT, got M" (with Config.UnnamedLimit, without the bound),
//     free like every invalid request. The spec does not show the bound
//     (8.2); summary's limit, which counts months, is capped by the
//     available history instead.
//   - Fault injection (below), only for requests that would succeed.
//   - The balance (Config.Units; 0 for none). The price is known before the
//     body: the generator says how many rows it will write, and a per-line
//     endpoint costs its price times those lines. Under the key's lock the
//     price is compared with the balance less what the key spent and what
//     its requests being written have reserved, then reserved, or the
//     answer is 403 "units_exhausted" (not retryable), never a truncated
//     body. Once the body is written the reservation is settled to the
//     lines actually written (fewer only when the client left), so
//     concurrent requests of a key never spend more than its balance
//     together. GET /sandbox/usage adds "units_remaining".
//
// 403s, 429s and injected status faults cost nothing; they count as failed
// requests.
//
// Config.Faults (etl sandbox --faults) sets the rate, 0 to 1, of each
// fault: 429, 500 and 503 answer that status with the error envelope
// (retryable; the three share one draw, so their rates add up to at most
// 1); slow delays whatever answer follows by Config.SlowDelay (2s by
// default) while the request keeps its concurrency slot; cut sends the
// header and the start of the body, then breaks the connection, so the
// client reads an unexpected EOF; malformed is a rate per CSV data row,
// replacing the row by one with a cell too many or too few, or with text
// such as "n/a" in an integer column. The response header X-Sandbox-Faults
// lists what was injected ("503", "slow, cut", "malformed=3").
//
// A cut answer is charged its full price: the API computed the answer
// before sending it, and a client cannot know which of the rows it received
// were paid for; it also keeps the charge equal to the reservation. The cut
// point is uniform within the body (bodies under 32 KiB arrive in one write
// and are measured; a longer body's size is estimated from its rows), and
// the last byte is always held back, so a planned cut always breaks the
// body. Malformed rows are rows returned and charged as lines. The CSV
// stream is corrupted on its way out, by an http.ResponseWriter that
// follows line ends outside quotes (the sandbox quotes every cell holding
// ';', '"', CR or LF), so the header stays intact and whole lines are
// replaced; JSON answers are never malformed.
//
// Faults are reproducible. Every decision is a draw from a key hashed from
// the seed, the API key, the canonical request (method, path, query
// parameters sorted, the key removed) and n, how many times that key sent
// that same request before. So a retry draws afresh; two runs that send the
// same requests meet the same faults at the same places, down to the same
// malformed rows and cut points; and identical requests sent concurrently
// share out the same outcomes whichever arrives first. Requests refused by
// the limits or by validation draw nothing, so timing, which decides a 429
// of the limiter, never shifts the faults of later requests. The counts
// live in memory for the life of the Server, one per distinct request.
//
// # Listing management
//
// The endpoints of spec 4.5 (Get location, Get locations, Update location,
// Update locations) answer under both location prefixes, which are
// interchangeable; package locations owns the data and what each
// operation does (validation with package listing, updates kept in memory
// and seen by later reads, a bulk update's per-item states), and
// listing.go the HTTP around it. A request meets, in this order:
//
//   - The path and the method: a path under a prefix that is neither the
//     prefix nor the prefix and one segment is a 404; a method other than
//     GET and PUT a 405 with Allow: GET, PUT. Both in the error envelope of
//     spec 7.1, code RESOURCE_NOT_FOUND or METHOD_NOT_ALLOWED (the latter
//     the sandbox's).
//   - A bearer token of the token service (bearerAccount; an API key is
//     not enough): without a valid one, 401 with the body of spec 7.2,
//     {code: 401, message}, and WWW-Authenticate: Bearer.
//   - The Local Pro plan (spec 4.5). The spec does not say how an account
//     without it is answered; the sandbox's choice: every account has the
//     plan but the API keys of Config.NoLocalPro (etl sandbox
//     --no-local-pro), whose tokens are answered 403 in the envelope of
//     7.1, code FORBIDDEN with detail LOCAL_PRO_PLAN_REQUIRED. Their
//     tokens still work on the backlink and keyword endpoints.
//   - The rate limits of spec 8.2, per account and operation (the
//     catalog's RateLimit): sliding windows on Config.WallClock
//     (listing_limits.go says why not token buckets) and, for Update
//     locations, one request in flight; past them 429 with {code: 429,
//     message}. Config.RatePerSecond and MaxConcurrent do not apply.
//   - The form of the request: page and size of Get locations (int32s,
//     default 1 and 20; VALIDATION_ERROR naming the parameter otherwise,
//     and for a size above locations.MaxPageSize); an update's
//     Content-Type, which must be application/json (415 otherwise, detail
//     UNSUPPORTED_MEDIA_TYPE), and its body, at most MaxListingBody bytes
//     (413, detail BODY_TOO_LARGE).
//   - Faults (below).
//   - The operation, its answer {data, requested} for one location and
//     {data, requestId} for a page or a bulk update (HTTP 200 even when
//     items FAILED), or its error object in the envelope of 7.1 with
//     requestId, 404 for RESOURCE_NOT_FOUND and 400 for VALIDATION_ERROR
//     and BAD_REQUEST (locations.Status).
//
// Every listing answer carries X-Request-Id, the id its body names. The id
// is derived as for the data endpoints, and an update's from its body too:
// the same update sent twice has the same id, two updates of the same
// location on the same day have two.
//
// Locations belong to the account of the token (the API key it was issued
// for): how many, their statuses (COMPLETE, and the sandbox's own
// IN_PROGRESS and NOT_SYNCED; the second location of every account is
// IN_PROGRESS) and their errors are package locations' to say.
//
// Listing calls cost no units (spec 8.1) and leave Usage alone: they are
// not counted as requests or failures of the key, and a key's balance does
// not refuse them.
//
// The status and slow faults of Config.Faults hit these endpoints too,
// drawn once a request is admitted and well formed, before the operation:
// an injected 429, 500 or 503 (with the body of spec 7.2, {code,
// message}; the spec shows no body for a 5xx) means that nothing was done,
// so a client may retry an update it was answered a 5xx for. A cut breaks the answer of a
// successful Get location or Get locations; an update's answer is never
// cut, so a client never has to guess whether an update was applied.
package sandbox
