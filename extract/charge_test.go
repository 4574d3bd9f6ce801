package extract_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/extract"
)

// The tests of this file check what a failed request tells the caller
// about its cost: ErrNotSent when no attempt reached the network,
// ErrMaybeCharged (and exactly one request seen by the server) when one
// was written and then not answered.

func overviewRequest(t *testing.T) extract.Request {
	return extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{"url": {"a.com"}, "scope": {"PAGE"}}}
}

// counting serves h and counts the requests that reached it.
func counting(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var seen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

// hangUp reads the request (the server has parsed it when the handler
// runs) and closes the connection without a byte of answer; with reset,
// the close is an RST.
func hangUp(reset bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		if reset {
			_ = conn.(*net.TCPConn).SetLinger(0)
		}
		_ = conn.Close()
	}
}

func quiet() *log.Logger { return log.New(io.Discard, "", 0) }

func TestRequestsThatNeverReachedTheAPIAreNotSent(t *testing.T) {
	t.Parallel()

	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close() // nothing listens there now

	var tlsSeen atomic.Int32
	badCert := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { tlsSeen.Add(1) }))
	badCert.Config.ErrorLog = quiet() // the handshake error the client causes
	badCert.StartTLS()
	t.Cleanup(badCert.Close)

	// A proxy that refuses to CONNECT to the API.
	var connects, others atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			connects.Add(1)
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		others.Add(1)
	}))
	t.Cleanup(proxy.Close)
	proxyURL, err := url.Parse(proxy.URL)
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		base   string
		client *http.Client
		want   string
		seen   func() int32 // requests the API saw
		check  func(t *testing.T)
	}{
		{name: "connection refused", base: closedURL, want: "connection refused"},
		{name: "unknown host", base: "http://api.example.invalid", want: "api.example.invalid"},
		{name: "untrusted certificate", base: badCert.URL, want: "certificate", seen: tlsSeen.Load},
		{name: "proxy refuses CONNECT", base: "https://api.example.invalid",
			client: &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}},
			want:   "Forbidden", seen: others.Load,
			check: func(t *testing.T) { require.Equal(t, int32(2), connects.Load()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := extract.New(extract.Config{BaseURL: tc.base, APIKey: key, HTTPClient: tc.client,
				MaxAttempts: 2, Backoff: time.Millisecond})
			require.NoError(t, err)
			_, err = c.Do(t.Context(), overviewRequest(t))
			require.ErrorIs(t, err, extract.ErrNotSent)
			require.NotErrorIs(t, err, extract.ErrMaybeCharged)
			require.ErrorContains(t, err, "giving up after 2 attempts", "an unsent request costs nothing to try again")
			require.ErrorContains(t, err, tc.want)
			if tc.seen != nil {
				require.Zero(t, tc.seen())
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
}

func TestACallerThatGaveUpBeforeSendingSentNothing(t *testing.T) {
	t.Parallel()
	srv, seen := counting(t, func(http.ResponseWriter, *http.Request) {})
	c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, RatePerSecond: -1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Do(ctx, overviewRequest(t))
	require.ErrorIs(t, err, extract.ErrNotSent)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, seen.Load())
}

// A request that was written and then got no answer may have been
// charged: the client returns it at once instead of paying again.
func TestASentRequestWithoutAnAnswerIsNotSentAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		client  *http.Client
		want    string
		// silent says a *NotHTTPError tells that no byte came (reset:
		// an RST); nil: not a NotHTTPError.
		silent, reset *bool
	}{
		{name: "closed before the headers", handler: hangUp(false), want: "EOF", silent: ptr(true), reset: ptr(false)},
		{name: "reset before the headers", handler: hangUp(true), want: "reset", silent: ptr(true), reset: ptr(true)},
		{name: "no headers in time",
			handler: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			client:  &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}},
			want:    "timeout awaiting response headers"},
		{name: "closed inside the headers", handler: func(w http.ResponseWriter, r *http.Request) {
			// The API began answering: whatever ends it then, it is
			// HTTP, and maybe charged.
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\n")
			_ = buf.Flush()
			_ = conn.Close()
		}, want: "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, seen := counting(t, tc.handler)
			c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, HTTPClient: tc.client,
				MaxAttempts: 3, Backoff: time.Millisecond})
			require.NoError(t, err)
			_, err = c.Do(t.Context(), overviewRequest(t))
			require.ErrorIs(t, err, extract.ErrMaybeCharged)
			require.NotErrorIs(t, err, extract.ErrNotSent)
			require.ErrorContains(t, err, tc.want)
			require.Equal(t, int32(1), seen.Load(), "the API was asked more than once")
			var notHTTP *extract.NotHTTPError
			if tc.silent == nil {
				require.False(t, errors.As(err, &notHTTP), "an HTTP answer began, or the wait timed out: %v", err)
				require.Empty(t, c.NotHTTP(err))
			} else {
				require.ErrorAs(t, err, &notHTTP)
				require.Equal(t, *tc.silent, notHTTP.Silent)
				require.Equal(t, *tc.reset, notHTTP.Reset)
				require.NotEmpty(t, c.NotHTTP(err))
			}
			if tc.client != nil {
				tc.client.CloseIdleConnections()
			}
		})
	}
}

// net/http's Transport sends a GET again by itself when a reused
// keep-alive connection fails before the answer: on a new connection, or
// on another idle one, which it may hand over in the instant the client
// stops it. The client stops both, as the API may have charged the first.
func TestTheTransportDoesNotSendAWrittenRequestAgain(t *testing.T) {
	t.Parallel()
	for _, idle := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d idle connections", idle), func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			all := make(chan struct{}) // closed once the first idle requests all arrived
			srv, seen := counting(t, func(w http.ResponseWriter, r *http.Request) {
				switch i := int(n.Add(1)); {
				case i > idle:
					hangUp(false)(w, r)
					return
				case i == idle:
					close(all)
				}
				<-all // the requests are in flight together, so each has a connection of its own
				_, _ = io.WriteString(w, "backlinks_count\n1\n")
			})
			c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, RatePerSecond: -1, MaxAttempts: 3, Backoff: time.Millisecond})
			require.NoError(t, err)

			errs := make(chan error, idle)
			for range idle {
				go func() {
					resp, err := c.Do(t.Context(), overviewRequest(t))
					if err == nil {
						_, err = io.ReadAll(resp.Body) // to the end: the connection goes back to the pool
						err = errors.Join(err, resp.Body.Close())
					}
					errs <- err
				}()
			}
			for range idle {
				require.NoError(t, <-errs)
			}

			var first sync.Once
			var reused bool
			ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
				first.Do(func() { reused = info.Reused })
			}})
			_, err = c.Do(ctx, overviewRequest(t))
			require.True(t, reused, "the request did not reuse a connection")
			require.ErrorIs(t, err, extract.ErrMaybeCharged)
			var notHTTP *extract.NotHTTPError
			require.False(t, errors.As(err, &notHTTP), "the connection carried an HTTP answer before")
			require.Equal(t, int32(idle+1), seen.Load(), "the last request reached the API twice")
		})
	}
}

// A request whose first attempt was not sent and whose second was sent and
// not answered may have been charged.
func TestNotSentThenUnansweredMayBeCharged(t *testing.T) {
	t.Parallel()
	srv, seen := counting(t, hangUp(false))
	var dials atomic.Int32
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) == 1 {
			return nil, errors.New("refused by the test")
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, HTTPClient: client, MaxAttempts: 3, Backoff: time.Millisecond})
	require.NoError(t, err)
	_, err = c.Do(t.Context(), overviewRequest(t))
	require.ErrorIs(t, err, extract.ErrMaybeCharged)
	require.NotErrorIs(t, err, extract.ErrNotSent)
	require.Equal(t, int32(2), dials.Load())
	require.Equal(t, int32(1), seen.Load())
}

// A request answered with a retryable error and then not sent was charged
// nothing: it is not ErrNotSent (an attempt was sent), and the error
// still carries the API's answer.
func TestAnsweredThenNotSentCarriesTheAnswer(t *testing.T) {
	t.Parallel()
	mw, seen := fail(1, http.StatusServiceUnavailable, true, "busy")
	srv := httptest.NewServer(mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	t.Cleanup(srv.Close)
	var dials atomic.Int32
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) > 1 {
				return nil, errors.New("refused by the test")
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}}
	c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, HTTPClient: client, MaxAttempts: 3, Backoff: time.Millisecond})
	require.NoError(t, err)
	_, err = c.Do(t.Context(), overviewRequest(t))
	var apiErr *extract.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusServiceUnavailable, apiErr.Status)
	require.NotErrorIs(t, err, extract.ErrNotSent)
	require.NotErrorIs(t, err, extract.ErrMaybeCharged)
	require.ErrorContains(t, err, "giving up after 3 attempts")
	require.ErrorContains(t, err, "refused by the test")
	require.Equal(t, int32(1), seen.Load())
	require.Equal(t, int32(3), dials.Load())
}

// A caller that gives up while the answer is awaited may have been charged.
func TestACallerThatGaveUpAfterSendingMayHaveBeenCharged(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	srv, seen := counting(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, MaxAttempts: 3, Backoff: time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, overviewRequest(t))
		errc <- err
	}()
	<-arrived
	cancel()
	err = <-errc
	require.ErrorIs(t, err, extract.ErrMaybeCharged)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, int32(1), seen.Load())
}

// TestAGatewayErrorMayHaveBeenCharged: a 502 or 504 that is not the API's
// error envelope is a gateway's (a proxy, a load balancer) whose upstream
// failed after the request reached it: maybe charged, not sent again. The
// API's own envelope with those statuses is an error answer as any other:
// nothing charged, tried again when retryable.
func TestAGatewayErrorMayHaveBeenCharged(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusBadGateway, http.StatusGatewayTimeout} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			srv, seen := counting(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(status)
				_, _ = io.WriteString(w, "<html><body>upstream timed out</body></html>")
			})
			c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, MaxAttempts: 3, Backoff: time.Millisecond})
			require.NoError(t, err)
			_, err = c.Do(t.Context(), overviewRequest(t))
			require.ErrorIs(t, err, extract.ErrMaybeCharged)
			require.NotErrorIs(t, err, extract.ErrNotSent)
			var apiErr *extract.APIError
			require.False(t, errors.As(err, &apiErr), "not an error answer of the API, which costs nothing")
			require.Equal(t, int32(1), seen.Load())

			srv, seen = counting(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = fmt.Fprintf(w, `{"meta":{"success":false,"status_code":%d,"request_id":"r"},"error":{"type":"upstream","code":%d,"message":"try again","retryable":true,"details":[]}}`, status, status)
			})
			c, err = extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, MaxAttempts: 3, Backoff: time.Millisecond})
			require.NoError(t, err)
			_, err = c.Do(t.Context(), overviewRequest(t))
			require.True(t, errors.As(err, &apiErr))
			require.NotErrorIs(t, err, extract.ErrMaybeCharged)
			require.Equal(t, int32(3), seen.Load())
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestWhatIsNotHTTPIsToldApart: a server that is not HTTP (PostgreSQL
// closes the connection without a byte, SSH sends its banner, TLS a
// record) fails the request as maybe charged, with a *NotHTTPError that
// says what came back, and Client.NotHTTP one line naming the origin
// and never the key; nothing is tried again.
func TestWhatIsNotHTTPIsToldApart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		serve func(c net.Conn)
		want  string // what NotHTTP says after "ETL_API_URL <origin> "
	}{
		{"closed without a byte", func(c net.Conn) {
			_, _ = c.Read(make([]byte, 8192))
			_ = c.Close()
		}, "closed the connection without an HTTP answer"},
		{"bytes that are not HTTP", func(c net.Conn) {
			_, _ = c.Read(make([]byte, 8192))
			_, _ = c.Write([]byte("E\x00\x00\x00\x10SFATAL\x00\x00"))
			_ = c.Close()
		}, `does not speak HTTP (another service listens there?): check the host and port of ETL_API_URL; what it sent: malformed HTTP response "E\x00\x00\x00\x10SFATAL\x00\x00"`},
		{"a TLS alert", func(c net.Conn) {
			_, _ = c.Read(make([]byte, 8192))
			_, _ = c.Write([]byte{0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46, '\n'})
			_ = c.Close()
		}, `does not speak HTTP (another service listens there?): check the host and port of ETL_API_URL; what it sent: malformed HTTP response "\x15\x03\x01\x00\x02\x02F"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			var conns atomic.Int32
			served := make(chan struct{})
			go func() {
				defer close(served)
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					conns.Add(1)
					tc.serve(c)
				}
			}()
			t.Cleanup(func() { _ = ln.Close(); <-served })
			base := "http://" + ln.Addr().String()
			c, err := extract.New(extract.Config{BaseURL: base, APIKey: key, MaxAttempts: 3, Backoff: time.Millisecond})
			require.NoError(t, err)
			_, err = c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{"url": {"a.com"}, "scope": {"PAGE"}}, FailFast: true})
			require.ErrorIs(t, err, extract.ErrMaybeCharged)
			var notHTTP *extract.NotHTTPError
			require.ErrorAs(t, err, &notHTTP)
			msg := c.NotHTTP(err)
			require.True(t, strings.HasPrefix(msg, "ETL_API_URL "+base+" "+tc.want), msg)
			require.NotContains(t, msg+err.Error(), key)
			require.Equal(t, int32(1), conns.Load(), "one connection")
		})
	}
}
