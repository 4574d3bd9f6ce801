package redact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// Patterns of credentials whatever their value: the key query parameter (in
// a URL, at the start of a raw query, or URL-encoded inside another URL),
// Authorization header values, and OAuth 2.0's tokens, codes and client
// secret as parameters or JSON fields.
var patterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)((?:^|[?&;]|%3F|%26)(?:k|%6B)(?:e|%65)(?:y|%79)(?:=|%3D))(?:[^&\s"';%]|%(?:[013-9A-Fa-f][0-9A-Fa-f]|2[0-57-9A-Fa-f]))+`),
	regexp.MustCompile(`(?i)((?:Apikey|Bearer)\s+)[^\s"',;]+`),
	// OAuth 2.0 (spec 5): tokens, codes and the client secret in a query or
	// form body, and the tokens in a JSON token answer.
	regexp.MustCompile(`(?i)((?:^|[?&;]|%3F|%26)(?:access_token|refresh_token|id_token|code|device_code|client_secret)(?:=|%3D))(?:[^&\s"';%]|%(?:[013-9A-Fa-f][0-9A-Fa-f]|2[0-57-9A-Fa-f]))+`),
	regexp.MustCompile(`(?i)("(?:access_token|refresh_token|id_token|device_code|client_secret)"\s*:\s*")(?:[^"\\]|\\.)*`),
}

// clues holds, for each of patterns, pieces of which a text (folded)
// holds at least one wherever the pattern matches: a text without any is
// not searched by the pattern. Go's regexp searches a large text slowly
// (seconds for the 13 MB of etl runs show --json of a 30,000-task run),
// and such a text seldom holds a clue.
var clues = [][]string{
	{"key=", "key%3d", "%6b", "%65", "%79"}, // k, e, y as such or escaped, then = or %3D
	{"apikey", "bearer"},
	{"token=", "token%3d", "code=", "code%3d", "secret=", "secret%3d"},
	{`token"`, `code"`, `secret"`},
}

// fold lowers s as the patterns' (?i) matches it: besides the ASCII
// letters, the Kelvin sign matches k and the long s matches s.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\u212A':
			return 'k'
		case '\u017F':
			return 's'
		}
		if 'A' <= r && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

// Redactor removes secrets from strings, errors and log records. The zero
// value and nil redact only the patterns.
//
// A secret is masked in every form it takes in the texts this program sees:
// as is, escaped inside a JSON string (the way encoding/json writes it, with
// or without its \u escapes of <, > and &, and with '/' written \/ as some
// encoders do), escaped for a URL query (url.QueryEscape) or path
// (url.PathEscape), with upper or lower case hex, quoted in a CSV cell
// ('"' doubled), and HTML-escaped (numeric or named entities).
type Redactor struct {
	// secrets are the secrets as given; raw the same as bytes, for Value.
	secrets []string
	raw     [][]byte
	// forms are every form of every secret, longest first.
	forms []string
}

// MinSecretLen is the shortest secret New masks wherever it appears. A
// shorter value (the sandbox's public key "sandbox", a test key "k") is no
// real credential, and masking it would garble every line that happens to
// contain those letters; the key= and Authorization patterns still mask it.
const MinSecretLen = 8

// New returns a Redactor for the given secrets; secrets shorter than
// MinSecretLen are masked only where the patterns find them.
func New(secrets ...string) *Redactor {
	var keep []string
	for _, s := range secrets {
		if len(s) >= MinSecretLen {
			keep = append(keep, s)
		}
	}
	return (*Redactor)(nil).With(keep...)
}

// With returns a Redactor that masks what r masks and also each of
// secrets, in every form, whatever its length: for secrets the caller
// chose to mask even when short, such as the pieces of a database password
// it cut out of a connection string. Empty strings are ignored; r is not
// changed.
func (r *Redactor) With(secrets ...string) *Redactor {
	out := &Redactor{}
	if r != nil {
		out.secrets = slices.Clone(r.secrets)
		out.raw = slices.Clone(r.raw)
		out.forms = slices.Clone(r.forms)
	}
	for _, s := range secrets {
		if s == "" || slices.Contains(out.secrets, s) {
			continue
		}
		out.secrets = append(out.secrets, s)
		out.raw = append(out.raw, []byte(s))
		for _, f := range forms(s) {
			if !slices.Contains(out.forms, f) {
				out.forms = append(out.forms, f)
			}
		}
	}
	// Longest first, so that of two forms found at the same place the
	// longer decides; every occurrence is masked whatever the order.
	slices.SortStableFunc(out.forms, func(a, b string) int { return len(b) - len(a) })
	return out
}

// forms returns the spellings of secret that a text may hold it in.
func forms(secret string) []string {
	var fs []string
	add := func(f string) {
		if f != "" && !slices.Contains(fs, f) {
			fs = append(fs, f)
		}
	}
	add(secret)
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(secret) // a string always encodes
		inner := strings.TrimSuffix(strings.TrimSpace(b.String()), `"`)[1:]
		add(inner)
		add(strings.ReplaceAll(inner, "/", `\/`))
	}
	for _, u := range []string{url.QueryEscape(secret), url.PathEscape(secret)} {
		add(u)
		add(lowerHex.ReplaceAllStringFunc(u, strings.ToLower)) // %2f as well as %2F
	}
	add(strings.ReplaceAll(secret, `"`, `""`))
	// HTML, as an error page of a proxy or a web server writes it:
	// html.EscapeString's numeric quotes, and the named ones of others.
	add(html.EscapeString(secret))
	add(htmlNamed.Replace(secret))
	return fs
}

// lowerHex finds a URL's percent escapes, for their lower case spelling.
var lowerHex = regexp.MustCompile(`%[0-9A-F]{2}`)

// htmlNamed escapes HTML with named entities (&quot;) where
// html.EscapeString writes numeric ones (&#34;).
var htmlNamed = strings.NewReplacer(`"`, "&quot;", "'", "&#x27;", "&", "&amp;", "<", "&lt;", ">", "&gt;")

// minTail is the shortest start of a secret that Truncated masks at the end
// of a text.
const minTail = 4

// String returns s without secrets.
func (r *Redactor) String(s string) string { return r.mask(s, false) }

// Truncated returns s, a text whose end was cut off (a bounded read, a
// length limit), without secrets: besides what String masks, it masks the
// end of s when that end is the start, 4 bytes or longer, of a form of a
// secret, which the cut left incomplete.
func (r *Redactor) Truncated(s string) string { return r.mask(s, true) }

func (r *Redactor) mask(s string, truncated bool) string {
	if r != nil && len(r.forms) > 0 {
		s = replaceSpans(s, r.spans(s, truncated))
	}
	folded := fold(s)
	for i, p := range patterns {
		if !slices.ContainsFunc(clues[i], func(c string) bool { return strings.Contains(folded, c) }) {
			continue
		}
		s = p.ReplaceAllString(s, "${1}"+Mask)
		folded = fold(s)
	}
	return s
}

// spans returns where s holds a form of a secret, as sorted, merged
// [start, end) pairs: overlapping occurrences (a secret repeated, or two
// secrets sharing letters) are masked as one.
func (r *Redactor) spans(s string, truncated bool) [][2]int {
	var spans [][2]int
	for _, f := range r.forms {
		for from := 0; from < len(s); {
			i := strings.Index(s[from:], f)
			if i < 0 {
				break
			}
			spans = append(spans, [2]int{from + i, from + i + len(f)})
			from += i + 1
		}
	}
	if truncated {
		if n := r.tail(s); n > 0 {
			spans = append(spans, [2]int{len(s) - n, len(s)})
		}
	}
	if len(spans) == 0 {
		return nil
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp[0] <= last[1] {
			last[1] = max(last[1], sp[1])
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// tail returns the length of the longest end of s, minTail bytes or more,
// that begins a form of a secret; 0 when there is none.
func (r *Redactor) tail(s string) int {
	best := 0
	for _, f := range r.forms {
		for n := min(len(f)-1, len(s)); n >= minTail && n > best; n-- {
			if strings.HasSuffix(s, f[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

func replaceSpans(s string, spans [][2]int) string {
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for _, sp := range spans {
		b.WriteString(s[at:sp[0]])
		b.WriteString(Mask)
		at = sp[1]
	}
	b.WriteString(s[at:])
	return b.String()
}

// Value returns b with every secret that it holds as is (not escaped)
// replaced by Mask; b itself, not a copy, when it holds none. It is the
// cheap pass for data values (an anchor text a server echoed the key
// into), where String's patterns would take a "key=" in a URL for a
// credential.
func (r *Redactor) Value(b []byte) []byte {
	if r == nil {
		return b
	}
	for _, s := range r.raw {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte(Mask))
		}
	}
	return b
}

// Cut returns the longest start of s that is at most n bytes long and ends
// neither inside a Mask nor inside a UTF-8 sequence. Mask a text before
// cutting it: cut first, the part of a secret left at the end is no longer
// the whole secret that String looks for.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			n = i
			break
		}
	}
	for i := max(0, n-len(Mask)+1); i < n; i++ {
		if strings.HasPrefix(s[i:], Mask) {
			n = i
			break
		}
	}
	return s[:n]
}

// Error returns err with a redacted message. errors.Is and errors.As still
// see the original chain, so callers can branch on it; only the text changes.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := r.String(msg)
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Is lets errors.Is match through the redaction.
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }

// Handler wraps h so that the message and every attribute of every record are
// redacted (strings, errors, and anything printed with %v).
func (r *Redactor) Handler(h slog.Handler) slog.Handler { return &handler{r: r, h: h} }

type handler struct {
	r *Redactor
	h slog.Handler
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &handler{r: h.r, h: h.h.WithAttrs(clean)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{r: h.r, h: h.h.WithGroup(name)}
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = h.attr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.r.String(x.Error()))
		case []string:
			// A list stays a list (a JSON array), each item masked.
			clean := make([]string, len(x))
			for i, s := range x {
				clean[i] = h.r.String(s)
			}
			return slog.Any(a.Key, clean)
		case []int, []int64, []float64, []bool:
			// Numbers hold no secret: a JSON array of numbers.
			return slog.Attr{Key: a.Key, Value: v}
		}
		// Anything else is printed by the inner handler; print it here
		// instead so the text can be checked.
		return slog.String(a.Key, h.r.String(v.String()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
