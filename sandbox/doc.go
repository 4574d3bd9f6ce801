// Package sandbox is a deterministic stand-in for the data API: users try job
// specs against it for free, and every test and benchmark of the pipeline
// runs against it, so it answers the way the real API does (spec and design
// notes) and invents data that hold together.
//
// # What it owns
//
//   - Serving every endpoint of package catalog at its Path, GET only, with
//     the real API's behaviour around the data: API key auth (header
//     "Authorization: Apikey KEY" or query parameter key=KEY; 401 otherwise),
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
//   - The data model below.
//
// This version generates overview, summary and keyword metrics. The other
// catalog endpoints go through the same routing, auth and validation and
// then answer 501 (not retryable); serving one is adding a generator to the
// generators table.
//
// # How data are derived
//
// Nothing is stored. Every value is a pure function of the seed, the
// request and the sandbox day (the UTC date of Config.Now), computed with
// integer arithmetic only, so the same request gives the same bytes on every
// machine; a CSV body is byte-identical, and so is a JSON one, because the
// request id is derived the same way.
//
// A backlink target is a chain of levels from its registrable domain down to
// the scope asked for: root domain, subdomain, each folder of the path, the
// page. The root domain gets a fresh profile from a hash of (seed, domain):
// its number of backlinks (or exactly N when its first label is "n"
// followed by digits, as in n250000.example), ratios for referring domains,
// pages, IPs and class C subnets, flag counts (nofollow, sponsored, UGC,
// frame, form, image, lost), a domain score, and a history of 6 to 120
// months with a growth curve. Each narrower level keeps a hashed share of
// its parent's backlinks, and every count scales with it, so a subdomain,
// folder or page never has more of anything than the level above it. A level
// that names nothing narrower (www.example.com, the folder "/", a folder's
// index page) is its parent. The one exception is a subdomain whose own first
// label is n<digits>: it gets exactly N backlinks and a fresh profile.
//
// A profile numbers its backlinks by time rank r, 0 to N-1: rank r was first
// seen at seen(r), a non-decreasing curve from the history's start to the
// sandbox day. Referring domain j owns a contiguous range of ranks (older
// domains own more), split into its referring pages; consecutive domains
// share an IP and consecutive IPs a subnet; each flag marks exactly its count
// of ranks, spread evenly. Hence the backlink of any rank is derivable on
// demand in O(log N) (profile.linkAt), a list of five million rows costs no
// memory up front, and every aggregate (the overview's counts, the
// backlinks, domains and follows of any past month) is a closed formula or a
// binary search that always equals counting the rows:
//
//   - overview reports the profile's counts; new_count is the ranks first
//     seen within the last 30 days of the sandbox day;
//   - summary reports, per month, the ranks first seen by the month's end
//     (lost backlinks are lost within the current month, so they count in
//     every month before), the domains of those ranks, their follows, and the
//     score grown with the square root of the share of backlinks; its current
//     month therefore equals the overview.
//
// Keyword metrics derive from (seed, keyword lowercased with spaces
// collapsed, country): its size, intents and typical cost; and from the
// month: seasonality, cpc and density drift, SERP features. trends are the
// twelve months ending at the requested one, oldest first, each in percent
// of the busiest; search_volume is their average monthly volume rounded to
// two significant digits. A month's volume is the same in every request
// whose trends include it.
package sandbox
