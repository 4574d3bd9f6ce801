package oauth

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/seoetl/etl/catalog"
)

// oauthError is an error answer of the token service: the RFC 6749 section
// 5.2 object {error, error_description} (spec 5.3 step 6, 7.2). Its
// description never holds a secret (a token, a code, a client secret or an
// API key): it is logged.
type oauthError struct {
	status      int
	code        string
	description string
	// basic asks for HTTP Basic (WWW-Authenticate), as RFC 6749 section
	// 5.2 requires of a 401 to a client that authenticated with it.
	basic bool
	allow string // the method a 405 allows
}

func (e *oauthError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.status, e.code, e.description)
}

// badRequest is a 400 with code.
func badRequest(code, format string, args ...any) *oauthError {
	return &oauthError{status: http.StatusBadRequest, code: code, description: fmt.Sprintf(format, args...)}
}

func invalidRequest(format string, args ...any) *oauthError {
	return badRequest(catalog.ErrInvalidRequest, format, args...)
}

func invalidGrant(format string, args ...any) *oauthError {
	return badRequest(catalog.ErrInvalidGrant, format, args...)
}

func methodNotAllowed(r *http.Request, allow string) *oauthError {
	return &oauthError{status: http.StatusMethodNotAllowed, code: catalog.ErrInvalidRequest, allow: allow,
		description: fmt.Sprintf("method %s is not allowed at %s; use %s", r.Method, r.URL.Path, allow)}
}

// injected is the answer of a status fault, RFC-shaped: 500 server_error,
// 503 and 429 temporarily_unavailable (RFC 6749 has no code for a rate
// limit).
func injected(status int) *oauthError {
	code := catalog.ErrTemporarilyUnavailable
	if status == http.StatusInternalServerError {
		code = catalog.ErrServerError
	}
	return &oauthError{status: status, code: code,
		description: fmt.Sprintf("%s (a fault injected by the sandbox)", strings.ToLower(http.StatusText(status)))}
}

// writeError writes e as the RFC 6749 section 5.2 object.
func writeError(w http.ResponseWriter, e *oauthError) {
	switch {
	case e.allow != "":
		w.Header().Set("Allow", e.allow)
	case e.basic:
		w.Header().Set("WWW-Authenticate", `Basic realm="sandbox"`)
	}
	writeJSON(w, e.status, struct {
		Error       string `json:"error"`
		Description string `json:"error_description,omitempty"`
	}{e.code, e.description})
}

// writeJSON writes v as a JSON answer of the token service: never cached
// (RFC 6749 section 5.1).
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v) // cannot fail: strings and integers
	h := w.Header()
	h.Set("Content-Type", "application/json;charset=UTF-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// maxBody bounds a request body of the token service.
const maxBody = 64 << 10

const formType = "application/x-www-form-urlencoded"

// readForm reads the parameters of a POST to a token endpoint: a
// form-encoded body only (spec 5.3 step 3, 5.4 step 3; RFC 8628 section
// 3.1 for the device code request, whose encoding the spec does not show).
// A JSON body is refused, and so are parameters in the query (RFC 6749
// section 3.2: the token endpoint takes POST; client credentials must not
// travel in a URL) and a parameter given twice (RFC 6749 section 3.2).
// Parameters the service does not know are ignored (RFC 6749 section 3.1).
func readForm(r *http.Request) (url.Values, *oauthError) {
	if r.URL.RawQuery != "" {
		return nil, invalidRequest("parameters go in the form-encoded body (Content-Type: %s), not in the query string", formType)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	switch {
	case err != nil:
		return nil, invalidRequest("the body could not be read: %v", err)
	case len(body) > maxBody:
		return nil, invalidRequest("the body is larger than %d KiB", maxBody>>10)
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && len(bytes.TrimSpace(body)) == 0 {
		return url.Values{}, nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != formType {
		if mt == "application/json" || strings.HasSuffix(mt, "+json") || (ct == "" && bytes.HasPrefix(bytes.TrimSpace(body), []byte("{"))) {
			return nil, invalidRequest("a JSON body is refused: send the parameters form-encoded, with Content-Type: %s (spec 5.4 step 3)", formType)
		}
		if ct == "" {
			return nil, invalidRequest("the body has no Content-Type: send the parameters form-encoded, with Content-Type: %s", formType)
		}
		return nil, invalidRequest("the body is %q: send the parameters form-encoded, with Content-Type: %s", ct, formType)
	}
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, invalidRequest("the form body is malformed: %v", err)
	}
	if err := once(vals); err != nil {
		return nil, err
	}
	return vals, nil
}

// once refuses a parameter given more than once (RFC 6749 section 3.1).
func once(vals url.Values) *oauthError {
	var twice []string
	for name, vs := range vals {
		if len(vs) > 1 {
			twice = append(twice, name)
		}
	}
	if len(twice) == 0 {
		return nil
	}
	slices.Sort(twice)
	return invalidRequest("%s given more than once; each parameter may be sent once (RFC 6749 section 3.1)", strings.Join(twice, ", "))
}

// required returns the named parameters, or an invalid_request naming the
// missing ones.
func required(vals url.Values, names ...string) ([]string, *oauthError) {
	out := make([]string, len(names))
	var missing []string
	for i, n := range names {
		if out[i] = vals.Get(n); out[i] == "" {
			missing = append(missing, n)
		}
	}
	switch len(missing) {
	case 0:
		return out, nil
	case 1:
		return nil, invalidRequest("%s is missing", missing[0])
	}
	return nil, invalidRequest("%s are missing", strings.Join(missing, " and "))
}

// authenticateClient checks the client credentials of a request to the
// access token endpoint (spec 5.4 steps 3 and 5): client_id and
// client_secret in the form body, or HTTP Basic (RFC 6749 section 2.3.1,
// the two each form-encoded first); not both ways at once. A wrong or
// missing credential is invalid_client, 401.
func (s *Service) authenticateClient(r *http.Request, vals url.Values) *oauthError {
	id, secret, basic := r.BasicAuth()
	if basic {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return &oauthError{status: http.StatusUnauthorized, code: catalog.ErrInvalidClient, basic: true,
				description: "the HTTP Basic credentials are not form-encoded (RFC 6749 section 2.3.1)"}
		}
		if vals.Get("client_secret") != "" {
			return invalidRequest("the client authenticated twice, with HTTP Basic and with client_secret in the body; use one way (RFC 6749 section 2.3.1)")
		}
		if fid := vals.Get("client_id"); fid != "" && fid != id {
			return invalidRequest("client_id in the body is not the client of the HTTP Basic credentials")
		}
	} else {
		id, secret = vals.Get("client_id"), vals.Get("client_secret")
		if id == "" || secret == "" {
			return &oauthError{status: http.StatusUnauthorized, code: catalog.ErrInvalidClient,
				description: "client authentication is required: client_id and client_secret in the form body, or HTTP Basic"}
		}
	}
	idOK := subtle.ConstantTimeCompare([]byte(id), []byte(s.cfg.ClientID)) == 1
	secretOK := subtle.ConstantTimeCompare([]byte(secret), []byte(s.cfg.ClientSecret)) == 1
	if !idOK || !secretOK {
		return &oauthError{status: http.StatusUnauthorized, code: catalog.ErrInvalidClient, basic: basic,
			description: "client authentication failed: unknown client_id or wrong client_secret"}
	}
	return nil
}

// checkScope checks the syntax of a scope parameter (RFC 6749 section 3.3):
// space-separated tokens of printable ASCII without '"' and '\'. Which
// scopes exist the spec does not show; any well-formed one is granted.
func checkScope(scope string) *oauthError {
	for tok := range strings.SplitSeq(scope, " ") {
		if tok == "" {
			return badRequest(catalog.ErrInvalidScope, "scope holds an empty token: separate scope tokens by one space (RFC 6749 section 3.3)")
		}
		for i := 0; i < len(tok); i++ {
			if c := tok[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
				return badRequest(catalog.ErrInvalidScope, "scope holds a character RFC 6749 section 3.3 does not allow (printable ASCII but '\"' and '\\')")
			}
		}
	}
	return nil
}

// fault asks Config.Fault about a well-formed request; done reports that
// the request is answered (an injected status) or abandoned.
func (s *Service) fault(w http.ResponseWriter, r *http.Request) (res Result, done bool) {
	if s.cfg.Fault == nil {
		return Result{}, false
	}
	status, faults, err := s.cfg.Fault(w, r)
	switch {
	case err != nil:
		return Result{Faults: faults, Err: err}, true
	case status != 0:
		e := injected(status)
		writeError(w, e)
		return Result{Status: status, Faults: faults, Err: e}, true
	}
	return Result{Faults: faults}, false
}

// fail writes e and reports it.
func fail(w http.ResponseWriter, e *oauthError, faults string) Result {
	writeError(w, e)
	return Result{Status: e.status, Faults: faults, Err: e}
}
