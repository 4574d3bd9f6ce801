package extract

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/seoetl/etl/catalog"
)

// The spec does not show the upper bound of limit or size ("Upper bound
// accepted for limit and size: not shown", 8.2). The API refuses a value
// past it as invalid (400 or 422); this file reads such a refusal and the
// bound it states, for the callers that learn it (package pipeline).
//
// Reading the bound out of a text is a heuristic: a number counts only
// when the words before it make it an upper bound ("between 1 and N", "1
// to N", "from 1 to N", "1-N", "[1, N]", "at most N", "up to N", "no more
// than N", "not exceed N", "<= N", "max/maximum ... N", and N-1 for "less
// than N" or "< N"), and only when it is below the value refused, since a
// value above the maximum is what was refused (so an echo of the refused
// value, "got 500", never passes for the bound). Of those, the largest. A
// caller that reads 0 must pick a smaller value of its own (halving).

// LimitRefused reports whether err is the API refusing the limit of a
// backlink request as invalid: an *APIError with status 400 or 422 whose
// details name the parameter limit (a detail's "parameter", "param",
// "field" or "name"), or, when no detail names a parameter, whose details
// or message speak of limit. asked is the limit the request sent; maxLimit
// is the bound the refusal states below it, 0 when it states none that can
// be read. The sandbox answers "limit must be from 1 to 10000 for links,
// got 100000".
func LimitRefused(err error, asked int) (maxLimit int, ok bool) {
	var e *APIError
	if !errors.As(err, &e) || (e.Status != http.StatusBadRequest && e.Status != http.StatusUnprocessableEntity) {
		return 0, false
	}
	var texts, loose []string
	named := false
	for _, raw := range e.Details {
		var d map[string]any
		if json.Unmarshal(raw, &d) != nil {
			continue
		}
		msg, _ := d["message"].(string)
		param := ""
		for _, k := range []string{"parameter", "param", "field", "name"} {
			if v, ok := d[k].(string); ok && v != "" {
				param = v
				break
			}
		}
		switch {
		case param != "":
			named = true
			if strings.EqualFold(param, "limit") {
				texts = append(texts, msg)
			}
		case limitWord.MatchString(msg):
			loose = append(loose, msg)
		}
	}
	if !named {
		texts = loose
		if limitWord.MatchString(e.Message) {
			texts = append(texts, e.Message)
		}
	}
	if len(texts) == 0 {
		return 0, false
	}
	return statedBound(texts, asked), true
}

// limitWord finds the word limit in a message.
var limitWord = regexp.MustCompile(`(?i)\blimit\b`)

// SizeRefused reports whether err is the API refusing the size of a Get
// locations request as invalid: a 400 or 422 whose error object is a
// VALIDATION_ERROR or a BAD_REQUEST with a detail on the field size (or a
// detail without a field, or the object's message, that speaks of size).
// maxSize is the bound the refusal states below the size refused, 0 when
// it states none that can be read. The sandbox answers "size must be
// between 1 and 100, got 500".
func SizeRefused(err error) (maxSize int, ok bool) {
	var e *ListingError
	if !errors.As(err, &e) || e.Operation != catalog.GetLocations.Name || e.Object == nil {
		return 0, false
	}
	if e.Status != http.StatusBadRequest && e.Status != http.StatusUnprocessableEntity {
		return 0, false
	}
	if e.Object.Code != catalog.CodeValidationError && e.Object.Code != catalog.CodeBadRequest {
		return 0, false
	}
	var texts []string
	for _, d := range e.Object.Details {
		if strings.EqualFold(d.Field, "size") || (d.Field == "" && sizeWord.MatchString(d.Message)) {
			texts = append(texts, d.Message)
		}
	}
	if sizeWord.MatchString(e.Object.Message) {
		texts = append(texts, e.Object.Message)
	}
	if len(texts) == 0 {
		return 0, false
	}
	return statedBound(texts, e.size), true
}

// sizeWord finds the word size in a message.
var sizeWord = regexp.MustCompile(`(?i)\bsize\b`)

// statedBound is the largest upper bound that texts state below refused.
func statedBound(texts []string, refused int) int {
	n := 0
	for _, t := range texts {
		n = max(n, upperBound(t, refused))
	}
	return n
}

// The phrasings of an upper bound N (its digits the last group), inclusive
// (N is allowed) and exclusive (N-1 is the bound).
var (
	boundInclusive = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\bbetween\s+-?\d+\s+and\s+(\d+)`),
		regexp.MustCompile(`(?i)\b-?\d+\s*(?:-|–|\.\.|to)\s*(\d+)\b`),
		regexp.MustCompile(`\[\s*-?\d+\s*,\s*(\d+)\s*\]`),
		regexp.MustCompile(`(?i)\b(?:at\s+most|up\s+to|not\s+(?:be\s+)?(?:more|greater|larger|bigger)\s+than|no\s+(?:more|greater|larger|bigger)\s+than|not\s+exceed|(?:less|lower|smaller)\s+than\s+or\s+equal\s+to)\s*(\d+)`),
		regexp.MustCompile(`(?:<=|≤)\s*(\d+)`),
		regexp.MustCompile(`(?i)\bmax(?:imum|imal)?\b[^\d.;!?]{0,24}?(\d+)`),
	}
	boundExclusive = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\b(?:less|lower|smaller|fewer)\s+than\s+(\d+)`),
		regexp.MustCompile(`<\s*(\d+)`),
	}
)

// upperBound is the largest upper bound that text states below refused
// (any, when refused is not positive); 0 when it states none.
func upperBound(text string, refused int) int {
	best := 0
	consider := func(re *regexp.Regexp, exclusive bool) {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			n, err := strconv.Atoi(m[len(m)-1])
			if err != nil {
				continue
			}
			if exclusive {
				n--
			}
			if n < 1 || (refused > 0 && n >= refused) {
				continue
			}
			best = max(best, n)
		}
	}
	for _, re := range boundInclusive {
		consider(re, false)
	}
	for _, re := range boundExclusive {
		consider(re, true)
	}
	return best
}
