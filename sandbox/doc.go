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
//   - Validation (400) and the generator.
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
package sandbox
