package sandbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// apiError is an error answer of the sandbox, rendered as the data API's
// error envelope (design notes, "What the real API does beyond the spec").
type apiError struct {
	status  int
	typ     string
	message string
	details []detail
	// challenge is the WWW-Authenticate header of a 401, when there is one.
	challenge string
}

// detail is one item of error.details: a message, and the parameter it is
// about when there is one.
type detail struct {
	Parameter string `json:"parameter,omitempty"`
	Message   string `json:"message"`
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d %s: %s", e.status, e.typ, e.message) }

// retryable follows the real API: 429 and 5xx are worth retrying, 4xx are
// not.
func (e *apiError) retryable() bool {
	return e.status == http.StatusTooManyRequests || e.status >= 500
}

// invalid is a 400 about the parameters named by problems.
func invalid(problems ...detail) *apiError {
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Message
	}
	return &apiError{status: http.StatusBadRequest, typ: "invalid_parameter",
		message: strings.Join(msgs, "; "), details: problems}
}

// invalidf is a 400 about one parameter.
func invalidf(param, format string, args ...any) *apiError {
	return invalid(detail{Parameter: param, Message: fmt.Sprintf(format, args...)})
}

func unauthorized(msg string) *apiError {
	return &apiError{status: http.StatusUnauthorized, typ: "unauthorized", message: msg}
}

func notFound(path string) *apiError {
	return &apiError{status: http.StatusNotFound, typ: "not_found",
		message: fmt.Sprintf("no endpoint at %s", path)}
}

func methodNotAllowed(method string) *apiError {
	return &apiError{status: http.StatusMethodNotAllowed, typ: "method_not_allowed",
		message: fmt.Sprintf("method %s is not allowed; use GET", method)}
}

// unitsExhausted is the 403 of a request whose price, units, is more than
// the left of the key's balance of API units.
func unitsExhausted(units, left, balance int64) *apiError {
	return &apiError{status: http.StatusForbidden, typ: "units_exhausted",
		message: fmt.Sprintf("not enough API units: the request costs %d, %d of the key's balance of %d remain", units, max(left, 0), balance)}
}

// tooManyPerSecond is the 429 past the requests per second of a key.
func tooManyPerSecond(perSecond int) *apiError {
	return &apiError{status: http.StatusTooManyRequests, typ: "too_many_requests",
		message: fmt.Sprintf("rate limit of this API key exceeded (at most %d a second)", perSecond)}
}

// tooManyConcurrent is the 429 past the concurrent requests of a key.
func tooManyConcurrent(n int) *apiError {
	return &apiError{status: http.StatusTooManyRequests, typ: "too_many_requests",
		message: fmt.Sprintf("concurrency limit of this API key exceeded (at most %d requests in flight)", n)}
}

// injected is the answer of a status fault: 429, 500 or 503, as the real
// API would send it, the message saying the sandbox made it up.
func injected(status int) *apiError {
	typ := map[int]string{
		http.StatusTooManyRequests:     "too_many_requests",
		http.StatusInternalServerError: "internal",
		http.StatusServiceUnavailable:  "service_unavailable",
	}[status]
	return &apiError{status: status, typ: typ,
		message: fmt.Sprintf("%s (a fault injected by the sandbox)", strings.ToLower(http.StatusText(status)))}
}

func internal(format string, args ...any) *apiError {
	return &apiError{status: http.StatusInternalServerError, typ: "internal",
		message: fmt.Sprintf(format, args...)}
}

// errorEnvelope is the JSON body of an error.
type errorEnvelope struct {
	Meta struct {
		Success    bool   `json:"success"`
		StatusCode int    `json:"status_code"`
		RequestID  string `json:"request_id"`
	} `json:"meta"`
	Error struct {
		Type      string   `json:"type"`
		Code      int      `json:"code"`
		Message   string   `json:"message"`
		Retryable bool     `json:"retryable"`
		Details   []detail `json:"details"`
	} `json:"error"`
}

// writeError writes e as the error envelope.
func writeError(w http.ResponseWriter, requestID string, e *apiError) {
	var env errorEnvelope
	env.Meta.StatusCode, env.Meta.RequestID = e.status, requestID
	env.Error.Type, env.Error.Code, env.Error.Message = e.typ, e.status, e.message
	env.Error.Retryable, env.Error.Details = e.retryable(), e.details
	if env.Error.Details == nil {
		env.Error.Details = []detail{}
	}
	body, _ := json.Marshal(env) // cannot fail: strings, ints and bools
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.status == http.StatusMethodNotAllowed {
		h.Set("Allow", http.MethodGet)
	}
	if e.challenge != "" {
		h.Set("WWW-Authenticate", e.challenge)
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(append(body, '\n'))
}
