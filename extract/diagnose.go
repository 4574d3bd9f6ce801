package extract

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/seoetl/etl/internal/redact"
)

// Refusal says what to fix when err is an answer that no other request of
// a run would get otherwise: a 401 (the key was refused) or a 404 on an
// endpoint's path (the base address is wrong: the backlink and keyword
// paths take no path variable, so no resource of theirs can be missing).
// It also says it for a credential of Config.Authorize that no retry can
// fix (an account that must sign in again). It returns "" for any other
// error. A run stops at the first such answer, as at a 403; at a 404 only
// while the API has answered no other request of the run (later the
// address is known to be right).
func (c *Client) Refusal(err error) string {
	if permanent(err) {
		var p interface{ Permanent() bool }
		errors.As(err, &p)
		return c.redact.String(p.(error).Error())
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return ""
	}
	detail := func() string {
		if apiErr.Message == "" {
			return ""
		}
		return ": " + strings.TrimSpace(redactCut(c, apiErr.Message, 120))
	}
	switch apiErr.Status {
	case http.StatusUnauthorized:
		return fmt.Sprintf("the API refused the key (HTTP 401%s): check ETL_API_KEY", detail())
	case http.StatusNotFound:
		return fmt.Sprintf("ETL_API_URL %s answered 404 Not Found for %s: check that it is the API's base address (scheme, host and port, no path)",
			c.Origin(), apiErr.Endpoint)
	}
	return ""
}

// Unreachable says what to check when err is a request that could not
// reach the API at all (ErrNotSent): the connection refused, a host name
// that does not resolve, a TLS handshake that failed, a connection that
// timed out. It returns "" for any other error. Before the API has
// answered any request of a run, such a failure is a mistake in
// ETL_API_URL (or a sandbox not started), and the run stops at once;
// later in a run it is an outage, tried again with back-off.
func (c *Client) Unreachable(err error) string {
	if !errors.Is(err, ErrNotSent) {
		return ""
	}
	return apiAddress.unreachable(c.Origin(), err)
}

// service is a service the product sends requests to, for the messages
// that say its address is wrong: the environment variable that sets the
// address, and what is meant to answer there.
type service struct{ variable, what string }

var (
	apiAddress  = service{"ETL_API_URL", "the API"}
	authAddress = service{"ETL_AUTH_URL", "the token service"}
)

// unreachable says what to check when err is a failure to reach s at
// base: "" when err is none of the failures it knows.
func (s service) unreachable(base string, err error) string {
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var record tls.RecordHeaderError
	var ne net.Error
	v := s.variable
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("%s %s refused the connection: is %s (or `etl sandbox`) running at that address?", v, base, s.what)
	case errors.As(err, &dns):
		return fmt.Sprintf("%s %s: the host name %q does not resolve (%s): check %s", v, base, dns.Name, dnsReason(dns), v)
	case errors.As(err, &cert), errors.As(err, &unknown), errors.As(err, &hostname):
		return fmt.Sprintf("%s %s: its TLS certificate is not trusted: check %s (the address, and https)", v, base, v)
	case errors.As(err, &record):
		return fmt.Sprintf("%s %s does not speak TLS: check the scheme of %s (http or https)", v, base, v)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("%s %s: connecting timed out: check %s and the network (a firewall, a proxy)", v, base, v)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Sprintf("%s %s: the host is unreachable: check %s and the network", v, base, v)
	}
	return ""
}

// TokenServiceMistake says what to check when err is a request to the
// token service at origin (ETL_AUTH_URL; package auth) that got no HTTP
// answer: in the words AddressMistake has for the data API, naming
// ETL_AUTH_URL. "" when err is none of the failures it knows. Unlike the
// data API's, such a request is not traced, so an answer that is not HTTP
// is read from net/http's words for it: a connection closed (EOF) or
// reset before an answer, or a status line that is not HTTP.
func TokenServiceMistake(origin string, err error) string {
	if m := authAddress.unreachable(origin, err); m != "" {
		return m
	}
	var nh *NotHTTPError
	if !errors.As(err, &nh) {
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
			// net/http's words (errServerClosedIdle, unexported) when the
			// connection closed before the request was written on it: the
			// same silence, seen a moment earlier.
			strings.Contains(err.Error(), "http: server closed idle connection"):
			nh = &NotHTTPError{Silent: true}
		case errors.Is(err, syscall.ECONNRESET):
			nh = &NotHTTPError{Silent: true, Reset: true}
		case strings.Contains(err.Error(), "malformed HTTP "):
			why := err.Error()[strings.Index(err.Error(), "malformed HTTP "):]
			if cut := redact.Cut(why, maxWhyExcerpt); len(cut) < len(why) {
				why = cut + "..."
			}
			nh = &NotHTTPError{Why: why}
		default:
			return ""
		}
	}
	return authAddress.notHTTP(origin, nh)
}

// AddressMistake says what to check when err, of a request sent while
// the API has answered none (of a run, of a command), shows a mistake in
// the address: the API could not be reached (Unreachable), or what
// answered is not HTTP (NotHTTP). "" otherwise. The data API's tasks, the
// listings tasks and the listings commands read their failures with it
// alike: a configuration mistake stops them at once, with this one line.
// An error of Config.Authorize's transport with a method AddressMistake()
// string (package auth's *ServiceError: the token service, ETL_AUTH_URL,
// could not be reached) is such a mistake too, in its own words.
func (c *Client) AddressMistake(err error) string {
	var other interface{ AddressMistake() string }
	if errors.As(err, &other) {
		// The request could not get its credential: Config.Authorize's
		// transport could not reach the service that issues it (package
		// auth's token service), and says so in its own words.
		if m := other.AddressMistake(); m != "" {
			return c.redact.String(m)
		}
	}
	if m := c.Unreachable(err); m != "" {
		return m
	}
	return c.NotHTTP(err)
}

// NotHTTP says what to check when err is a request that got nothing HTTP
// back (a *NotHTTPError): the connection closed or reset without a byte
// of an answer, or bytes that are not HTTP. While the API has answered no
// request of a run, that is another service at the address (PostgreSQL
// on 5432 closes without a byte, SSH sends its banner), a mistake in
// ETL_API_URL's host or port. It returns "" for any other error.
func (c *Client) NotHTTP(err error) string {
	var nh *NotHTTPError
	if !errors.As(err, &nh) {
		return ""
	}
	return apiAddress.notHTTP(c.Origin(), nh)
}

// notHTTP says what to check when s at base answered nh, nothing HTTP.
func (s service) notHTTP(base string, nh *NotHTTPError) string {
	v := s.variable
	switch {
	case nh.Silent && nh.Reset:
		return fmt.Sprintf("%s %s reset the connection without an HTTP answer (another service listens there?): check the host and port of %s", v, base, v)
	case nh.Silent:
		return fmt.Sprintf("%s %s closed the connection without an HTTP answer (another service listens there, such as PostgreSQL?): check the host and port of %s", v, base, v)
	}
	msg := fmt.Sprintf("%s %s does not speak HTTP (another service listens there?): check the host and port of %s", v, base, v)
	if nh.Why != "" {
		msg += "; what it sent: " + nh.Why
	}
	return msg
}

func dnsReason(e *net.DNSError) string {
	if e.IsNotFound {
		return "no such host"
	}
	if e.IsTimeout {
		return "the DNS server did not answer"
	}
	return e.Err
}

// Origin is the scheme, host and port of the base address, without
// credentials or path: what messages may name.
func (c *Client) Origin() string { return originAsWritten(c.base) }

// OriginOf is the origin a Client of baseURL names (Client.Origin); ""
// when baseURL does not parse as a URL with a host.
func OriginOf(baseURL string) string {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || u.Host == "" {
		return ""
	}
	return originAsWritten(u)
}

// originAsWritten is the origin of u as written: scheme and host (with its port
// when given).
func originAsWritten(u *url.URL) string { return u.Scheme + "://" + u.Host }

// redactCut masks s and cuts it to at most n bytes (never inside a mask).
func redactCut(c *Client, s string, n int) string {
	return redact.Cut(c.redact.String(s), n)
}
