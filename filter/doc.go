// Package filter is the filter language of the data API (spec 4.2): one
// parser, type checker and evaluator for both of its users. The client parses
// a job spec's filter before it spends a unit, so a bad filter is refused
// with a message that says where it is wrong and what was expected there;
// the sandbox parses the filter parameter of a request and matches the rows
// it generates.
//
// # What it owns
//
//   - The grammar below and its lexical rules; the canonical form of an
//     expression (Expr.String).
//   - Type checking against package catalog: a filter of an endpoint names
//     that endpoint's row fields (catalog Endpoint.Fields) and nothing else,
//     and each literal must fit its field's kind.
//   - Evaluation of a parsed expression on a row (Expr.Match), compiled once
//     at parse time: field names resolved, literals converted, LIKE patterns
//     split, so that matching a row neither allocates nor parses.
//
// It does not know which endpoints take a filter parameter (competitors and
// keyword metrics take none; the catalog's Params say so, and the caller
// checks), nor how many targets a request names (see Expr.CheckTargets).
//
// # Grammar
//
// In EBNF (https://go.dev/ref/spec#Notation), tokens separated by optional
// white space (space, tab, CR, LF):
//
//	Expression = Or .
//	Or         = And { "OR" And } .
//	And        = Primary { "AND" Primary } .
//	Primary    = Condition | "(" Or ")" .
//	Condition  = Operand Comparison Value
//	           | Operand [ "NOT" ] "LIKE" String .
//	Operand    = Field [ "[" Integer "]" ] .
//	Comparison = "=" | "!=" | "<>" | "<" | "<=" | ">" | ">=" .
//	Value      = Integer | Decimal | String | Date | DateTime | "TRUE" | "FALSE" .
//
//	Field      = Letter { Letter | Digit } .  (a name that is not a keyword)
//	Letter     = "A" … "Z" | "a" … "z" | "_" .
//	Digit      = "0" … "9" .
//	Integer    = [ "-" ] Digit { Digit } .
//	Decimal    = Integer "." Digit { Digit } .
//	Date       = Digit Digit Digit Digit "-" Digit Digit "-" Digit Digit .
//	DateTime   = Date "T" Digit Digit ":" Digit Digit ":" Digit Digit [ "Z" ] .
//	String     = "'" { Char | `\'` | `\\` } "'"
//	           | `"` { Char | `\"` | `\\` } `"` .
//
// AND binds tighter than OR: a OR b AND c is a OR (b AND c). The keywords
// AND, OR, NOT, LIKE, TRUE and FALSE are case-insensitive; field names are
// not (they are the API's, all lower case; a near miss gets a "did you
// mean"). Char is any character but the string's own quote and the
// backslash; a backslash followed by anything other than that quote or a
// backslash is an error, as the spec says no other escape exists. Numbers,
// dates and names are words: two words need white space between them
// ("50AND" is an error), and a number or date runs on until a character
// that cannot continue a word, so "1e5" or "2026-01-15T10:00:00+02:00" is
// one bad literal with its own message.
//
// # Types
//
// Each condition is checked when parsed; the field must be on the left and a
// literal on the right (see below). By the field's catalog kind:
//
//	Int, IntString     an Integer (int64)                       all six comparisons
//	Float, DecString   an Integer or a Decimal, at most 15      all six comparisons
//	                   significant digits (what a float64 holds exactly)
//	Text               a String                                 all six, LIKE, NOT LIKE
//	Bool               TRUE or FALSE                            = and != only
//	Timestamp          a Date or a DateTime, bare or quoted     all six comparisons
//	Date               a Date, bare or quoted                   all six comparisons
//	IntList            backlinks_counts[n] on matrix only; an element is an Integer
//	TextList, IntList  otherwise not filterable
//
// != and <> are the same operator. LIKE and NOT LIKE take only a string
// field and a string pattern.
//
// # Choices where the spec is silent
//
//   - The field goes on the left and a literal on the right; a condition
//     written the other way round ("50 < page_score") is refused with the
//     flipped form in the message, and two fields are never compared. The
//     spec shows only the field-first form, and the real API may accept
//     nothing else, so the client should not send it.
//   - Nothing beyond spec 4.2: no NOT before a condition or parentheses (NOT
//     appears only in NOT LIKE), no IN, BETWEEN, IS NULL or NULL literal, no
//     exponents, no arithmetic. A filter the client accepts is one the spec
//     promises the API understands.
//   - Strings compare byte by byte (=, < and the rest are the order of UTF-8
//     bytes, which is the order of code points; no collation, no case
//     folding).
//   - LIKE is case-sensitive, as in standard SQL and PostgreSQL, where the
//     warehouse keeps the data; it matches the whole value. % matches any run
//     of characters, empty included; it is the only wildcard: _ matches
//     itself, and since the spec allows no other escapes there is no way to
//     match a literal %. A pattern without % is equality.
//   - A date compared with a Timestamp field means its midnight UTC, so
//     first_seen_at = 2026-01-15 matches only 2026-01-15T00:00:00; a whole
//     day is >= 2026-01-15 AND < 2026-01-16. A date-time ends in an optional
//     Z (UTC) and takes no other offset; quoted, it may have a space for its
//     T ('2026-01-15 10:00:00'). Date fields (month_date) take dates only: a
//     date-time there is refused rather than silently never equal.
//   - Quoted numbers and booleans ('5', 'true') are strings and are refused
//     for number and boolean fields, with a hint; only dates may be quoted.
//   - Number fields: an Integer literal is accepted and means the same
//     number; comparison is float64 comparison (similarity = 0.1 is exact
//     equality with the float64 nearest 0.1).
//   - backlinks_counts[n]: n is checked at parse time against 1 and the most
//     targets the endpoint takes (the bound of its urls parameter in the
//     catalog, 6 on matrix), and against the request's own number of targets
//     by Expr.CheckTargets, which the client and the sandbox call with the
//     number of urls. At evaluation an element beyond the row's list makes
//     the condition false. Other list fields (intents, trends...) cannot be
//     filtered.
//   - NULL: a field whose value is NULL (Value.Null) makes its condition
//     false, whatever the operator, != and NOT LIKE included, as SQL's
//     WHERE does. Since the language has no NOT before a condition, this
//     two-valued shortcut gives the same rows as SQL's three-valued logic.
//   - Empty or white-space-only expressions are errors: an absent filter is
//     a nil *Expr, which matches everything.
//   - Bounds: at most MaxLen (4096) bytes and MaxDepth (64) nested
//     parentheses, so no input can exhaust memory or the stack; AND and OR
//     chains are read by loops, not recursion. The text must be valid UTF-8.
//   - Errors: every error is an *Error with the 1-based column (counted in
//     characters) where the problem starts, or where something was expected;
//     the message names what was found and what was expected. The first
//     problem from the left is reported, after the length bound and UTF-8,
//     which are checked first.
//
// # Canonical form
//
// Expr.String gives one form per expression: keywords in upper case, != for
// <>, one space around operators and keywords, no redundant parentheses
// (a AND (b AND c) is a AND b AND c), integers without leading zeros,
// decimals in their shortest form (0.50 is 0.5), dates bare, strings in
// whichever quote needs fewer escapes (single on a tie). Parsing it gives an
// equal expression with the same String.
package filter
