package sandbox_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
)

const faultHeader = "X-Sandbox-Faults"

// noSleep is a slow fault that returns at once, recording the delays asked.
type noSleep struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (n *noSleep) sleep(_ context.Context, d time.Duration) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.delays = append(n.delays, d)
	return nil
}

// faultServer is a sandbox with faults and without limits; its slow fault
// does not sleep.
func faultServer(t *testing.T, seed int64, f sandbox.Faults) (*sandbox.Server, *httptest.Server, *noSleep) {
	t.Helper()
	ns := &noSleep{}
	s, srv := hookedServer(t, sandbox.Config{Seed: seed, Faults: f, RatePerSecond: -1, MaxConcurrent: -1}, ns.sleep, nil)
	return s, srv, ns
}

func TestParseFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, spec string
		want       sandbox.Faults
		err        string
	}{
		{name: "empty", spec: ""},
		{name: "blank", spec: "  "},
		{name: "all", spec: "429=0.05,500=0.02,503=0.02,slow=0.01,cut=0.01,malformed=0.001",
			want: sandbox.Faults{TooManyRequests: 0.05, Internal: 0.02, Unavailable: 0.02, Slow: 0.01, Cut: 0.01, Malformed: 0.001}},
		{name: "spaces and order", spec: " cut = 1 , 503=0.5", want: sandbox.Faults{Cut: 1, Unavailable: 0.5}},
		{name: "zero", spec: "slow=0", want: sandbox.Faults{}},
		{name: "status rates add up to 1", spec: "429=0.5,500=0.25,503=0.25", want: sandbox.Faults{TooManyRequests: 0.5, Internal: 0.25, Unavailable: 0.25}},
		{name: "unknown", spec: "foo=1", err: `unknown fault "foo"; the faults are 429, 500, 503, slow, cut, malformed`},
		{name: "no rate", spec: "429", err: `fault "429": write NAME=RATE`},
		{name: "empty item", spec: "429=0.1,,cut=0.1", err: `fault "": write NAME=RATE`},
		{name: "empty rate", spec: "cut=", err: `fault "cut=": write NAME=RATE`},
		{name: "not a number", spec: "cut=often", err: `fault cut: rate "often" is not a number`},
		{name: "above 1", spec: "slow=1.5", err: "fault slow: the rate must be between 0 and 1, got 1.5"},
		{name: "negative", spec: "malformed=-0.1", err: "fault malformed: the rate must be between 0 and 1, got -0.1"},
		{name: "NaN", spec: "cut=NaN", err: "fault cut: the rate must be between 0 and 1, got NaN"},
		{name: "twice", spec: "cut=0.1,cut=0.2", err: "fault cut is given twice"},
		{name: "status rates past 1", spec: "429=0.5,503=0.6", err: "must add up to at most 1, got 1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := sandbox.ParseFaults(tc.spec)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			again, err := sandbox.ParseFaults(got.String())
			require.NoError(t, err)
			require.Equal(t, got, again, "String is a spec of the same faults")
		})
	}
}

func FuzzParseFaults(f *testing.F) {
	for _, seed := range []string{"", "429=0.05,500=0.02,503=0.02,slow=0.01,cut=0.01,malformed=0.001",
		"foo=1", "cut=", "=1", "429=1e-300", "slow=0x1p-3", "503=+Inf", ",", "cut=1,cut=1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		got, err := sandbox.ParseFaults(spec)
		if err != nil {
			return
		}
		again, err := sandbox.ParseFaults(got.String())
		require.NoError(t, err, "%q", got.String())
		require.Equal(t, got, again)
		_, err = sandbox.New(sandbox.Config{Faults: got})
		require.NoError(t, err, "what parses is a valid Config")
	})
}

func TestFaultConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  sandbox.Config
		want string
	}{
		{sandbox.Config{Faults: sandbox.Faults{Cut: 2}}, "fault cut: the rate must be between 0 and 1, got 2"},
		{sandbox.Config{Faults: sandbox.Faults{TooManyRequests: 0.7, Internal: 0.7}}, "must add up to at most 1"},
		{sandbox.Config{SlowDelay: -time.Second}, "SlowDelay must be positive, got -1s"},
		{sandbox.Config{Units: -1}, "Units must be 0 (no balance) or positive, got -1"},
	} {
		_, err := sandbox.New(tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestStatusFaultsAtRateOneAlwaysHappen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		faults sandbox.Faults
		status int
		typ    string
	}{
		{sandbox.Faults{TooManyRequests: 1}, http.StatusTooManyRequests, "too_many_requests"},
		{sandbox.Faults{Internal: 1}, http.StatusInternalServerError, "internal"},
		{sandbox.Faults{Unavailable: 1}, http.StatusServiceUnavailable, "service_unavailable"},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			t.Parallel()
			s, srv, _ := faultServer(t, 1, tc.faults)
			for range 3 { // retries meet the fault again at rate 1
				for _, r := range []reply{
					call(t, srv, testKey, "overview", overviewParams),
					call(t, srv, testKey, "summary", summaryParams),
					call(t, srv, testKey, "keyword-metrics", keywordParams),
				} {
					e := failed(t, r, tc.status)
					require.Equal(t, tc.typ, e.Error.Type)
					require.True(t, *e.Error.Retryable)
					require.Contains(t, e.Error.Message, "a fault injected by the sandbox")
					require.Equal(t, strconv.Itoa(tc.status), r.header.Get(faultHeader))
					require.Empty(t, r.header.Values("Retry-After"))
				}
			}
			require.Equal(t, sandbox.Usage{Key: testKey, FailedRequests: 9}, s.Usage(testKey), "status faults cost nothing")
			// Invalid requests are answered 400 before any fault is drawn.
			failed(t, call(t, srv, testKey, "overview", params("url", "example.com")), http.StatusBadRequest)
		})
	}
}

func TestFaultsAtRateZeroNeverHappen(t *testing.T) {
	t.Parallel()
	// slow=1 turns fault injection on (and does not sleep here); every
	// other rate is 0.
	f, err := sandbox.ParseFaults("429=0,500=0,503=0,cut=0,malformed=0,slow=1")
	require.NoError(t, err)
	s, srv, slept := faultServer(t, 1, f)
	_, clean := newServer(t, sandbox.Config{})
	csvSummary := params("url", "n3.example", "scope", "ROOT_DOMAIN", "limit", "66", "format", "csv")
	for range 10 {
		for _, c := range []call1{{"overview", overviewParams}, {"summary", csvSummary}, {"keyword-metrics", keywordParams}} {
			r := call(t, srv, testKey, c.endpoint, c.p)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.Equal(t, "slow", r.header.Get(faultHeader))
			require.Equal(t, string(get(t, clean, c.endpoint, c.p).body), string(r.body))
		}
	}
	require.Equal(t, int64(30), s.Usage(testKey).Requests)
	require.Len(t, slept.delays, 30)
	require.Equal(t, sandbox.DefaultSlowDelay, slept.delays[0], "the default delay")
}

func TestNoFaultsByDefault(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, sandbox.Config{})
	for range 20 {
		r := call(t, srv, testKey, "summary", summaryParams)
		require.Equal(t, http.StatusOK, r.status)
		require.Empty(t, r.header.Values(faultHeader))
	}
}

func TestSlowFaultDelaysByTheConfiguredDelay(t *testing.T) {
	t.Parallel()
	ns := &noSleep{}
	_, srv := hookedServer(t, sandbox.Config{Faults: sandbox.Faults{Slow: 1, Unavailable: 1}, SlowDelay: 7 * time.Second}, ns.sleep, nil)
	r := call(t, srv, testKey, "overview", overviewParams)
	failed(t, r, http.StatusServiceUnavailable)
	require.Equal(t, "503, slow", r.header.Get(faultHeader), "a slow fault delays an error as well")
	require.Equal(t, []time.Duration{7 * time.Second}, ns.delays)
}

// outcome is what a client sees of a reply: status, faults, and a hash of
// the body with how it ended.
func outcomeOf(f fetched) string {
	return fmt.Sprintf("%d [%s] %d bytes %x err=%v", f.status, f.header.Get(faultHeader), len(f.body), fnv(f.body), f.bodyErr != nil)
}

func fnv(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// call1 is one request of a sequence.
type call1 struct {
	endpoint string
	p        url.Values
}

// faultyRequests is a job's worth of requests, identical ones repeated as
// a pipeline's retries and pages are.
func faultyRequests() []call1 {
	var out []call1
	for i := range 40 {
		target := fmt.Sprintf("n%d.example", 3+i%4)
		switch i % 3 {
		case 0:
			out = append(out, call1{"summary", params("url", target, "scope", "ROOT_DOMAIN", "limit", "40", "format", "csv")})
		case 1:
			out = append(out, call1{"overview", params("url", target, "scope", "ROOT_DOMAIN")})
		default:
			out = append(out, call1{"summary", params("url", target, "scope", "ROOT_DOMAIN", "limit", "40")})
		}
	}
	return out
}

const mixedFaults = "429=0.15,500=0.1,503=0.1,slow=0.2,cut=0.2,malformed=0.05"

// runSequence sends faultyRequests one after another to a sandbox with
// mixedFaults and seed and returns what the client saw.
func runSequence(t *testing.T, seed int64) []string {
	t.Helper()
	f, err := sandbox.ParseFaults(mixedFaults)
	require.NoError(t, err)
	_, srv, _ := faultServer(t, seed, f)
	var out []string
	for _, r := range faultyRequests() {
		got, err := fetch(t.Context(), srv, testKey, r.endpoint, r.p)
		require.NoError(t, err)
		out = append(out, outcomeOf(got))
	}
	return out
}

func TestTheSameSeedReproducesTheSameFaults(t *testing.T) {
	t.Parallel()
	a, b := runSequence(t, 42), runSequence(t, 42)
	require.Equal(t, a, b, "same seed, same requests: same faults, same bytes")
	require.NotEqual(t, a, runSequence(t, 43), "another seed draws other faults")
	joined := strings.Join(a, "\n")
	for _, f := range []string{"[429]", "[500]", "[503]", "slow", "cut", "malformed=", "200 []"} {
		require.Contains(t, joined, f, "the sequence meets every fault (and clean answers)")
	}
}

func TestARetryGetsAFreshDraw(t *testing.T) {
	t.Parallel()
	_, srv, _ := faultServer(t, 1, sandbox.Faults{Unavailable: 0.5})
	statuses := map[int]int{}
	for range 16 {
		statuses[call(t, srv, testKey, "overview", overviewParams).status]++
	}
	require.Positive(t, statuses[http.StatusOK])
	require.Positive(t, statuses[http.StatusServiceUnavailable])
	require.Len(t, statuses, 2)
}

func TestFaultsDoNotDependOnArrivalOrder(t *testing.T) {
	t.Parallel()
	f, err := sandbox.ParseFaults(mixedFaults)
	require.NoError(t, err)
	p := params("url", "n5.example", "scope", "ROOT_DOMAIN", "limit", "40", "format", "csv")
	const n = 24

	_, sequential, _ := faultServer(t, 9, f)
	var want []string
	for range n {
		got, err := fetch(t.Context(), sequential, testKey, "summary", p)
		require.NoError(t, err)
		want = append(want, outcomeOf(got))
	}

	_, concurrent, _ := faultServer(t, 9, f)
	start := make(chan struct{})
	outcomes := make(chan string, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			<-start
			got, err := fetch(t.Context(), concurrent, testKey, "summary", p)
			errs <- err
			outcomes <- outcomeOf(got)
		}()
	}
	close(start)
	var got []string
	for range n {
		require.NoError(t, <-errs)
		got = append(got, <-outcomes)
	}
	slices.Sort(want)
	slices.Sort(got)
	require.Equal(t, want, got, "the n-th identical request meets the same faults, whichever arrives n-th")
}

// summaryFields are summary's fields with url, whose value below holds
// ';' and '"' so that its cells are quoted.
const summaryFields = "score,backlinks_count,domains_count,follows_count,month_date,url"

var summaryInts = []string{"score", "backlinks_count", "domains_count", "follows_count"}

// malformedRows parses a CSV body with encoding/csv and reports, per data
// row, whether it is malformed: the wrong number of cells, or a cell of an
// integer column that is not an integer. The header must be intact.
func malformedRows(t *testing.T, body []byte, header []string, ints []string) []bool {
	t.Helper()
	r := csv.NewReader(bytes.NewReader(body))
	r.Comma, r.FieldsPerRecord = ';', -1
	recs, err := r.ReadAll()
	require.NoError(t, err, "malformed rows are still CSV")
	require.NotEmpty(t, recs)
	require.Equal(t, header, recs[0], "the header is never malformed")
	var bad []bool
	for _, rec := range recs[1:] {
		wrong := len(rec) != len(header)
		for i, name := range header {
			if slices.Contains(ints, name) && i < len(rec) {
				if _, err := strconv.ParseInt(rec[i], 10, 64); err != nil {
					wrong = true
				}
			}
		}
		bad = append(bad, wrong)
	}
	return bad
}

func TestMalformedRows(t *testing.T) {
	t.Parallel()
	p := params("url", `https://n3.example/a;b?q="x"`, "scope", "ROOT_DOMAIN", "limit", "120",
		"format", "csv", "fields", summaryFields)
	header := strings.Split(summaryFields, ",")
	_, clean := newServer(t, sandbox.Config{})
	want := get(t, clean, "summary", p)
	require.Equal(t, http.StatusOK, want.status, "%s", want.body)
	require.Contains(t, string(want.body), `"https://n3.example/a;b?q=""x"""`, "the url cells are quoted")
	wantRows := strings.SplitAfter(string(want.body), "\n")
	rows := len(malformedRows(t, want.body, header, summaryInts))
	require.Equal(t, 66, rows)

	t.Run("rate 1", func(t *testing.T) {
		t.Parallel()
		s, srv, _ := faultServer(t, 1, sandbox.Faults{Malformed: 1})
		r := call(t, srv, testKey, "summary", p)
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, "malformed=66", r.header.Get(faultHeader))
		bad := malformedRows(t, r.body, header, summaryInts)
		require.Len(t, bad, rows)
		require.NotContains(t, bad, false, "every data row is malformed")
		require.Equal(t, int64(66*40), s.Usage(testKey).UnitsSpent, "malformed rows are charged as lines")
		// Both kinds appear: the wrong number of cells, and text in an
		// integer column.
		kinds := map[string]int{}
		lines := strings.Split(strings.TrimSuffix(string(r.body), "\n"), "\n")
		for _, line := range lines[1:] {
			cr := csv.NewReader(strings.NewReader(line))
			cr.Comma = ';'
			rec, err := cr.Read()
			require.NoError(t, err)
			if len(rec) != len(header) {
				kinds["cells"]++
			} else {
				kinds["text"]++
			}
		}
		require.Positive(t, kinds["cells"])
		require.Positive(t, kinds["text"])
	})
	t.Run("some rows", func(t *testing.T) {
		t.Parallel()
		_, srv, _ := faultServer(t, 1, sandbox.Faults{Malformed: 0.25})
		r := call(t, srv, testKey, "summary", p)
		require.Equal(t, http.StatusOK, r.status)
		bad := malformedRows(t, r.body, header, summaryInts)
		require.Len(t, bad, rows)
		n := 0
		gotRows := strings.SplitAfter(string(r.body), "\n")
		require.Len(t, gotRows, len(wantRows))
		for i, b := range bad {
			if b {
				n++
				continue
			}
			require.Equal(t, wantRows[i+1], gotRows[i+1], "a row that is not malformed is untouched")
		}
		require.Positive(t, n)
		require.Less(t, n, rows)
		require.Equal(t, fmt.Sprintf("malformed=%d", n), r.header.Get(faultHeader), "the header counts them")
	})
	t.Run("JSON is never malformed", func(t *testing.T) {
		t.Parallel()
		_, srv, _ := faultServer(t, 1, sandbox.Faults{Malformed: 1})
		jp := params("url", "n3.example", "scope", "ROOT_DOMAIN", "limit", "120")
		r := call(t, srv, testKey, "summary", jp)
		require.Equal(t, string(get(t, clean, "summary", jp).body), string(r.body))
		require.Empty(t, r.header.Get(faultHeader))
	})
}

func TestCutBodiesEndEarly(t *testing.T) {
	t.Parallel()
	s, srv, _ := faultServer(t, 1, sandbox.Faults{Cut: 1})
	_, clean := newServer(t, sandbox.Config{})
	var price int64
	early := 0 // cuts in the first three quarters of a body
	for _, c := range []struct {
		endpoint string
		p        url.Values
		price    int64
	}{
		{"summary", params("url", "n3.example", "scope", "ROOT_DOMAIN", "limit", "60", "format", "csv"), 60 * 40},
		{"summary", params("url", "n3.example", "scope", "ROOT_DOMAIN", "limit", "60"), 60 * 40},
		{"summary", params("url", "n4.example", "scope", "ROOT_DOMAIN", "limit", "3", "format", "csv"), 3 * 40},
		{"overview", overviewParams, 45},
		{"keyword-metrics", params("keyword", "k", "country", "US", "format", "csv"), 20},
	} {
		want := get(t, clean, c.endpoint, c.p).body
		for range 3 {
			got, err := fetch(t.Context(), srv, testKey, c.endpoint, c.p)
			require.NoError(t, err, "the header arrives")
			require.Equal(t, http.StatusOK, got.status)
			require.Equal(t, "cut", got.header.Get(faultHeader))
			require.ErrorIs(t, got.bodyErr, io.ErrUnexpectedEOF, "the client sees the connection break")
			require.Less(t, len(got.body), len(want))
			require.True(t, bytes.HasPrefix(want, got.body), "what arrives is the start of the answer")
			t.Logf("cut %s after %d of %d bytes", c.endpoint, len(got.body), len(want))
			if len(got.body) < len(want)*3/4 {
				early++
			}
			price += c.price
		}
	}
	require.GreaterOrEqual(t, early, 5, "cuts fall anywhere in a body, not only near its end")
	u := s.Usage(testKey)
	require.Equal(t, price, u.UnitsSpent, "a cut answer is charged in full")
	require.Equal(t, int64(15), u.Requests)
}

func TestCutAndMalformedTogether(t *testing.T) {
	t.Parallel()
	_, srv, _ := faultServer(t, 3, sandbox.Faults{Cut: 1, Malformed: 0.5})
	p := params("url", "n3.example", "scope", "ROOT_DOMAIN", "limit", "66", "format", "csv", "fields", summaryFields)
	got, err := fetch(t.Context(), srv, testKey, "summary", p)
	require.NoError(t, err)
	require.ErrorIs(t, got.bodyErr, io.ErrUnexpectedEOF)
	require.Regexp(t, `^cut, malformed=[0-9]+$`, got.header.Get(faultHeader))
	header := strings.ReplaceAll(summaryFields, ",", ";") + "\n"
	if len(got.body) >= len(header) {
		require.Equal(t, header, string(got.body[:len(header)]), "the header is intact")
	}
}

func TestInjectedErrorsKeepTheEnvelope(t *testing.T) {
	t.Parallel()
	_, srv, _ := faultServer(t, 1, sandbox.Faults{Internal: 1})
	r := call(t, srv, testKey, "overview", overviewParams)
	var raw map[string]map[string]any
	require.NoError(t, json.Unmarshal(r.body, &raw))
	require.ElementsMatch(t, []string{"meta", "error"}, keysOf(raw))
	require.ElementsMatch(t, []string{"success", "status_code", "request_id"}, keysOf(raw["meta"]))
	require.ElementsMatch(t, []string{"type", "code", "message", "retryable", "details"}, keysOf(raw["error"]))
	require.Equal(t, []any{}, raw["error"]["details"])
	require.Equal(t, r.header.Get("X-Request-Id"), raw["meta"]["request_id"])
}

func keysOf[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// intFields are the names of the integer fields of an endpoint.
func intFields(t *testing.T, endpoint string) []string {
	t.Helper()
	ep, ok := catalog.Lookup(endpoint)
	require.True(t, ok)
	var names []string
	for _, f := range ep.Fields {
		if f.Kind == catalog.Int || f.Kind == catalog.IntString {
			names = append(names, f.Name)
		}
	}
	return names
}

// A long links body (about 900 KB, so written in many pieces) with quoted
// anchors and titles holding ';', quotes and line breaks.
func TestBodyFaultsOnALongAwkwardBody(t *testing.T) {
	t.Parallel()
	p := params("url", "n3000.example", "scope", "ROOT_DOMAIN", "limit", "3000", "format", "csv")
	_, clean := newServer(t, sandbox.Config{Seed: 11})
	want := get(t, clean, "links", p)
	require.Equal(t, http.StatusOK, want.status, "%s", want.body)
	r := csv.NewReader(bytes.NewReader(want.body))
	r.Comma = ';'
	wantRecs, err := r.ReadAll()
	require.NoError(t, err)
	require.Len(t, wantRecs, 3001)
	require.True(t, slices.ContainsFunc(wantRecs, func(rec []string) bool {
		return slices.ContainsFunc(rec, func(cell string) bool { return strings.Contains(cell, "\n") })
	}), "some cells hold line breaks, so line ends inside quotes must not count")

	t.Run("malformed", func(t *testing.T) {
		t.Parallel()
		_, srv, _ := faultServer(t, 11, sandbox.Faults{Malformed: 0.2})
		got := call(t, srv, testKey, "links", p)
		bad := malformedRows(t, got.body, wantRecs[0], intFields(t, "links"))
		require.Len(t, bad, 3000, "rows are replaced whole: none split, none merged")
		r := csv.NewReader(bytes.NewReader(got.body))
		r.Comma, r.FieldsPerRecord = ';', -1
		gotRecs, err := r.ReadAll()
		require.NoError(t, err)
		n := 0
		for i, b := range bad {
			if b {
				n++
			} else {
				require.Equal(t, wantRecs[i+1], gotRecs[i+1], "row %d is untouched", i)
			}
		}
		require.InDelta(t, 600, n, 100)
		require.Equal(t, fmt.Sprintf("malformed=%d", n), got.header.Get(faultHeader))
	})
	t.Run("cut", func(t *testing.T) {
		t.Parallel()
		s, srv, _ := faultServer(t, 11, sandbox.Faults{Cut: 1})
		early := 0
		for range 4 {
			got, err := fetch(t.Context(), srv, testKey, "links", p)
			require.NoError(t, err)
			require.ErrorIs(t, got.bodyErr, io.ErrUnexpectedEOF)
			require.True(t, bytes.HasPrefix(want.body, got.body))
			require.Less(t, len(got.body), len(want.body))
			t.Logf("cut after %d of %d bytes", len(got.body), len(want.body))
			if len(got.body) < len(want.body)*3/4 {
				early++
			}
		}
		require.Positive(t, early, "a long body is cut anywhere, not only near its end")
		require.Equal(t, int64(4*3000*45), s.Usage(testKey).UnitsSpent, "charged in full")
	})
}
