package redact

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"slices"
	"strings"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// Patterns of credentials whatever their value: the key query parameter (in
// a URL, at the start of a raw query, or URL-encoded inside another URL) and
// Authorization header values.
var patterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)((?:^|[?&;]|%3F|%26)(?:k|%6B)(?:e|%65)(?:y|%79)(?:=|%3D))(?:[^&\s"';%]|%(?:[013-9A-Fa-f][0-9A-Fa-f]|2[0-57-9A-Fa-f]))+`),
	regexp.MustCompile(`(?i)((?:Apikey|Bearer)\s+)[^\s"',;]+`),
}

// Redactor removes secrets from strings, errors and log records. The zero
// value and nil redact only the patterns.
type Redactor struct {
	secrets []string
}

// MinSecretLen is the shortest secret masked wherever it appears. A shorter
// value (the sandbox's public key "sandbox", a test key "k") is no real
// credential, and masking it would garble every line that happens to contain
// those letters; the key= and Authorization patterns still mask it.
const MinSecretLen = 8

// New returns a Redactor for the given secrets; secrets shorter than
// MinSecretLen are masked only where the patterns find them.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if len(s) >= MinSecretLen && !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
	// Longest first, so a secret containing another is removed whole.
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	return r
}

// String returns s without secrets.
func (r *Redactor) String(s string) string {
	if r != nil {
		for _, secret := range r.secrets {
			s = strings.ReplaceAll(s, secret, Mask)
		}
	}
	for _, p := range patterns {
		s = p.ReplaceAllString(s, "${1}"+Mask)
	}
	return s
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
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.r.String(err.Error()))
		}
		// Anything else is printed by the inner handler; print it here
		// instead so the text can be checked.
		return slog.String(a.Key, h.r.String(v.String()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
