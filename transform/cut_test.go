package transform_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/transform"
)

// cutReader reads the first n bytes of body, then fails with
// io.ErrUnexpectedEOF, as a body whose connection broke.
type cutReader struct {
	body []byte
}

func cutAt(body []byte, n int) *cutReader { return &cutReader{body: body[:n:n]} }

func (c *cutReader) Read(p []byte) (int, error) {
	if len(c.body) == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, c.body)
	c.body = c.body[n:]
	return n, nil
}

// piece is a piece of a test body, in which the every-byte cut test knows
// what is complete.
type piece struct {
	text string
	row  string // "good", "bad" (rejected) or "" (no row)
	head bool   // a decoder is made once this piece was read (CSV header, JSON data opened)
	end  bool   // the piece ends the JSON envelope: a cut after it loses nothing
}

// cutCase is a body, made of pieces, cut at every byte.
type cutCase struct {
	name     string
	format   string
	endpoint string
	pieces   []piece
}

const anchorsHeader = "anchor;backlinks_count;domains_count;first_seen_at;last_seen_at"

var cutCases = []cutCase{
	{name: "csv", format: "csv", endpoint: "anchors", pieces: []piece{
		{text: "\ufeff" + anchorsHeader + "\r\n", head: true},
		{text: "plain;1;1;2024-01-01T00:00:00;2024-02-01T00:00:00\n", row: "good"},
		// Cut after "abc;12" this row would parse, with a wrong count.
		{text: "abc;123;1;2024-01-01T00:00:00;2024-02-01T00:00:00\r\n", row: "good"},
		{text: "\n"}, // blank: no row
		{text: "\"buy; now\";10;2;2024-01-01T00:00:00;2024-06-01T00:00:00\n", row: "good"},
		{text: "\"first line\nsecond \"\"quoted\"\"\n\";3;1;2024-01-01T00:00:00;2024-06-01T00:00:00\n", row: "good"},
		{text: "bad;x;1;2024-01-01T00:00:00;2024-02-01T00:00:00\n", row: "bad"},
		{text: "too;few\n", row: "bad"},
		{text: "last;5;1;2024-01-01T00:00:00;\"2024-02-01T00:00:00\"\n", row: "good"},
	}},
	{name: "csv without a line break at the end", format: "csv", endpoint: "score-profile", pieces: []piece{
		{text: "domain_score;domains_count\n", head: true},
		{text: "1;10\n", row: "good"},
		{text: "2;x\n", row: "bad"},
		{text: "3;300", row: "good"}, // complete only at the end of the body
	}},
	{name: "csv header only", format: "csv", endpoint: "score-profile", pieces: []piece{
		{text: "domain_score;domains_count\n", head: true},
	}},
	{name: "json", format: "json", endpoint: "matrix", pieces: []piece{
		{text: `{"meta":{"success":true,"status_code":200,"request_id":"r"},"data":[`, head: true},
		{text: matrixRow(1), row: "good"},
		{text: ",\n  "},
		{text: `{"domain":"x}]\"y\\\\","domain_score":1,"backlinks_counts":[1,2,3]}`, row: "good"},
		{text: ","},
		{text: `{"domain":"r.example","domain_score":"abc"}`, row: "bad"},
		{text: " , "},
		{text: `{ "domain" : "sp.example" ,` + "\n" + ` "domain_score" : 12 }`, row: "good"},
		{text: `]}`, end: true},
		{text: "\n"},
	}},
	{name: "json meta after data", format: "json", endpoint: "score-profile", pieces: []piece{
		{text: `{"data":[`, head: true},
		{text: `{"domain_score":1,"domains_count":10}`, row: "good"},
		{text: `,`},
		{text: `{"domain_score":2,"domains_count":20}`, row: "good"},
		{text: `],"meta":{"success":true,"total":2}}`, end: true},
	}},
	{name: "json object", format: "json", endpoint: "overview", pieces: []piece{
		{text: `{"meta":{"success":true},"data":`},
		{text: `{"backlinks_count":2500000,"domains_count":31000,"score":88}`, row: "good", head: true},
		{text: `}`, end: true},
	}},
	{name: "json empty data", format: "json", endpoint: "matrix", pieces: []piece{
		{text: `{"meta":{"success":true},"data":[`, head: true},
		{text: `]}`, end: true},
	}},
}

func (c cutCase) body() []byte {
	var b strings.Builder
	for _, p := range c.pieces {
		b.WriteString(p.text)
	}
	return []byte(b.String())
}

// at says what a decoder must make of the body cut after n bytes: whether
// the decoder can be made, how many good and rejected rows are complete,
// and whether the body is whole (JSON: its envelope was closed).
func (c cutCase) at(n int) (ready bool, good, bad int, whole bool) {
	end := 0
	for _, p := range c.pieces {
		end += len(p.text)
		if end > n {
			break
		}
		ready = ready || p.head
		whole = whole || p.end
		if c.format == "csv" && !strings.HasSuffix(p.text, "\n") {
			continue // a row without its line break is complete at the end of the body, never at a cut
		}
		switch p.row {
		case "good":
			good++
		case "bad":
			bad++
		}
	}
	return ready, good, bad, whole
}

// TestCutAtEveryByte cuts bodies after every byte and checks that the
// decoder delivers exactly the complete rows before the cut, good and
// rejected as in the whole body, then ErrCut, and leaks no memory.
func TestCutAtEveryByte(t *testing.T) {
	t.Parallel()
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"chunks", func(r io.Reader) io.Reader { return r }},
		{"one byte at a time", iotest.OneByteReader},
		{"error with the last data", iotest.DataErrReader},
	}
	for _, tc := range cutCases {
		for _, batch := range []int{2, transform.DefaultBatchRows} {
			t.Run(fmt.Sprintf("%s/batch %d", tc.name, batch), func(t *testing.T) {
				t.Parallel()
				ep := endpoint(t, tc.endpoint)
				body := tc.body()
				opts := transform.Options{BatchRows: batch}
				full := decodeFormat(t, tc.format, body, ep, transform.Options{Allocator: newAllocator(t), BatchRows: batch})
				_, good, bad, _ := tc.at(len(body))
				if tc.format == "csv" && !strings.HasSuffix(string(body), "\n") {
					good++ // the last row is complete at the end of the body
				}
				require.Len(t, full.Rows, good, "the test's pieces and the whole body disagree")
				require.Len(t, full.Rejects, bad, "the test's pieces and the whole body disagree")

				for _, rd := range readers {
					for n := range len(body) + 1 {
						ready, good, bad, whole := tc.at(n)
						mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
						opts.Allocator = mem
						got, err := decodeCut(t, tc.format, rd.wrap(cutAt(body, n)), ep, opts)
						where := fmt.Sprintf("%s, cut after %d bytes, before %q", rd.name, n, body[n:min(n+16, len(body))])
						if !ready {
							require.ErrorIs(t, err, transform.ErrCut, where)
							require.ErrorIs(t, err, io.ErrUnexpectedEOF, where)
							require.ErrorContains(t, err, "cut after 0 complete rows", where)
							mem.AssertSize(t, 0)
							continue
						}
						if whole {
							require.ErrorIs(t, err, io.EOF, where)
						} else {
							require.ErrorIs(t, err, transform.ErrCut, where)
							require.ErrorIs(t, err, io.ErrUnexpectedEOF, where)
							require.ErrorContains(t, err, fmt.Sprintf("cut after %d complete row", good+bad), where)
						}
						require.Equal(t, full.Rows[:good], got.Rows, where)
						require.Equal(t, full.Rejects[:bad], got.Rejects, where)
						mem.AssertSize(t, 0)
					}
				}
			})
		}
	}
}

// decodeCut decodes a body that may be cut, checking what the decoder
// promises on the way; the error is the one that ended the body (io.EOF
// at its end).
func decodeCut(t *testing.T, format string, r io.Reader, ep *catalog.Endpoint, opts transform.Options) (decoded, error) {
	t.Helper()
	out := decoded{Rows: []map[string]any{}, Rejects: []reject{}}
	d, err := transform.NewDecoder(r, ep, format, opts)
	if err != nil {
		return out, err
	}
	defer d.Release()
	for {
		rec, rejects, err := d.Next(context.Background())
		if err != nil {
			require.Nil(t, rec)
			require.Nil(t, rejects)
			_, _, again := d.Next(context.Background())
			require.Equal(t, err, again, "the error sticks")
			require.Equal(t, int64(len(out.Rows)), d.Rows(), "Rows counts the rows delivered")
			require.Equal(t, int64(len(out.Rejects)), d.Rejected(), "Rejected counts the rejects delivered")
			return out, err
		}
		out.Rows = append(out.Rows, renderRecord(t, rec)...)
		rec.Release()
		for _, r := range rejects {
			out.Rejects = append(out.Rejects, reject{Line: r.Line, Raw: r.Raw, Reason: r.Reason})
		}
	}
}

// TestCutBySandbox decodes answers the sandbox cuts off (its cut fault),
// over HTTP through the client: the rows delivered are the start of the
// whole answer's rows, and the error is ErrCut with the client's read
// error.
func TestCutBySandbox(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	const key = "sk-transform-cut-0123456789"
	client := func(faults sandbox.Faults) *extract.Client {
		sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return now }, APIKeys: []string{key},
			Faults: faults, RatePerSecond: -1, MaxConcurrent: -1})
		require.NoError(t, err)
		srv := httptest.NewServer(sb.Handler())
		t.Cleanup(srv.Close)
		c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, RatePerSecond: -1})
		require.NoError(t, err)
		return c
	}
	clean, cutting := client(sandbox.Faults{}), client(sandbox.Faults{Cut: 1})

	fetch := func(c *extract.Client, req extract.Request, format string) (decoded, error) {
		resp, err := c.Do(t.Context(), req)
		require.NoError(t, err)
		defer resp.Body.Close()
		return decodeCut(t, format, resp.Body, req.Endpoint, transform.Options{Allocator: newAllocator(t), BatchRows: 7})
	}
	rows := 0 // rows delivered before the cuts, over all answers
	for _, format := range []string{"csv", "json"} {
		req := extract.Request{Endpoint: endpoint(t, "summary"),
			Params: url.Values{"url": {"n3.example"}, "scope": {"ROOT_DOMAIN"}, "limit": {"60"}, "format": {format}}}
		want, err := fetch(clean, req, format)
		require.ErrorIs(t, err, io.EOF)
		require.Len(t, want.Rows, 60)
		for range 4 { // each time the sandbox cuts elsewhere
			got, err := fetch(cutting, req, format)
			require.ErrorIs(t, err, transform.ErrCut)
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
			require.Less(t, len(got.Rows), len(want.Rows))
			require.Equal(t, want.Rows[:len(got.Rows)], got.Rows)
			require.Empty(t, got.Rejects)
			t.Logf("%s: %v", format, err)
			rows += len(got.Rows)
		}
	}
	require.Positive(t, rows, "some cut fell after a complete row")
}

// A body that stalls past the client's idle timeout is cut there
// (extract.ErrIdle), after the rows that came before it.
func TestStalledBodyIsCut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "domain_score;domains_count\n1;10\n2;20\n3;3")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // stall until the client gives up
	}))
	t.Cleanup(srv.Close)
	c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: "sk-transform-stall-0123456789", IdleTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	ep := endpoint(t, "score-profile")
	resp, err := c.Do(t.Context(), extract.Request{Endpoint: ep, Params: url.Values{}})
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := decodeCut(t, "csv", resp.Body, ep, transform.Options{Allocator: newAllocator(t)})
	require.ErrorIs(t, err, transform.ErrCut)
	require.ErrorIs(t, err, extract.ErrIdle)
	require.Equal(t, []map[string]any{{"domain_score": int64(1), "domains_count": int64(10)}, {"domain_score": int64(2), "domains_count": int64(20)}}, got.Rows)
}
