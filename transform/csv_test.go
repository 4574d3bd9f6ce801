package transform_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/transform"
)

func TestArrowType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind catalog.Kind
		want arrow.DataType
	}{
		{catalog.Int, arrow.PrimitiveTypes.Int64},
		{catalog.IntString, arrow.PrimitiveTypes.Int64},
		{catalog.Float, arrow.PrimitiveTypes.Float64},
		{catalog.DecString, arrow.PrimitiveTypes.Float64},
		{catalog.Text, arrow.BinaryTypes.String},
		{catalog.Bool, arrow.FixedWidthTypes.Boolean},
		{catalog.Timestamp, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{catalog.Date, arrow.FixedWidthTypes.Date32},
		{catalog.TextList, arrow.ListOf(arrow.BinaryTypes.String)},
		{catalog.IntList, arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	}
	for _, tt := range tests {
		t.Run(tt.kind.String(), func(t *testing.T) {
			t.Parallel()
			got := transform.ArrowType(tt.kind)
			require.True(t, arrow.TypeEqual(tt.want, got), "got %v, want %v", got, tt.want)
		})
	}
	t.Run("unknown kind", func(t *testing.T) {
		t.Parallel()
		require.Panics(t, func() { transform.ArrowType(catalog.Kind(99)) })
	})
}

func TestSchema(t *testing.T) {
	t.Parallel()
	for _, ep := range catalog.All() {
		t.Run(ep.Name, func(t *testing.T) {
			t.Parallel()
			s := transform.Schema(ep)
			require.Equal(t, len(ep.Fields), s.NumFields())
			for i, f := range ep.Fields {
				got := s.Field(i)
				require.Equal(t, f.Name, got.Name)
				require.True(t, arrow.TypeEqual(transform.ArrowType(f.Kind), got.Type), "field %s", f.Name)
				require.True(t, got.Nullable, "field %s", f.Name)
			}
		})
	}
}

func TestNewCSVDecoderErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		endpoint string
		body     string
		opts     transform.Options
		is       error
		want     string
	}{
		{name: "empty body", endpoint: "anchors", body: "", is: transform.ErrEmptyBody},
		{name: "blank body", endpoint: "anchors", body: "\n\r\n\n", is: transform.ErrEmptyBody},
		{name: "byte order mark only", endpoint: "anchors", body: "\ufeff", is: transform.ErrEmptyBody},
		{name: "duplicate column", endpoint: "anchors", body: "anchor;backlinks_count;anchor\n", want: `anchors CSV header: column "anchor" appears twice`},
		{name: "duplicate unknown column", endpoint: "anchors", body: "anchor;x;x\n", want: `column "x" appears twice`},
		{name: "no known column", endpoint: "anchors", body: "<html><body>oops</body></html>\n", want: "names none of the endpoint's fields"},
		{name: "header quote not closed", endpoint: "anchors", body: "anchor;\"backlinks_count\n", want: "a quoted value is not closed"},
		{name: "header bare quote", endpoint: "anchors", body: "anc\"hor\n", want: `a '"' inside an unquoted value`},
		{name: "header too long", endpoint: "anchors", body: "anchor;" + strings.Repeat("x", 100) + "\n", opts: transform.Options{MaxRowBytes: 50}, want: "longer than 50 bytes"},
		{name: "json only endpoint", endpoint: "matrix", body: "domain\n", want: "matrix answers JSON only"},
		{name: "negative batch", endpoint: "anchors", body: "anchor\n", opts: transform.Options{BatchRows: -3}, want: "BatchRows must be at least 1, got -3"},
		{name: "negative row bytes", endpoint: "anchors", body: "anchor\n", opts: transform.Options{MaxRowBytes: -1}, want: "MaxRowBytes must be at least 1, got -1"},
		{name: "read error", endpoint: "anchors", body: "", want: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mem := newAllocator(t)
			opts := tt.opts
			opts.Allocator = mem
			var r io.Reader = strings.NewReader(tt.body)
			if tt.name == "read error" {
				r = iotest.ErrReader(errors.New("boom"))
			}
			d, err := transform.NewCSVDecoder(r, endpoint(t, tt.endpoint), opts)
			require.Error(t, err)
			require.Nil(t, d)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// scoreRows is a score-profile body of n rows: domain_score i, domains_count i*10.
func scoreRows(n int) []byte {
	var b bytes.Buffer
	b.WriteString("domain_score;domains_count\n")
	for i := range n {
		fmt.Fprintf(&b, "%d;%d\n", i, i*10)
	}
	return b.Bytes()
}

func TestBatchBoundaries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rows  int
		batch int
		want  []int
	}{
		{name: "3 over 10", rows: 10, batch: 3, want: []int{3, 3, 3, 1}},
		{name: "exact multiple", rows: 9, batch: 3, want: []int{3, 3, 3}},
		{name: "one per batch", rows: 4, batch: 1, want: []int{1, 1, 1, 1}},
		{name: "one batch", rows: 10, batch: 100, want: []int{10}},
		{name: "no rows", rows: 0, batch: 3, want: nil},
		{name: "default size", rows: transform.DefaultBatchRows + 1, batch: 0, want: []int{transform.DefaultBatchRows, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mem := newAllocator(t)
			ep := endpoint(t, "score-profile")
			opts := transform.Options{Allocator: mem, BatchRows: tt.batch}
			if tt.batch == 0 {
				opts.BatchRows = transform.DefaultBatchRows // for decodeAll's check
			}
			got := decodeAll(t, scoreRows(tt.rows), ep, opts)
			require.Equal(t, tt.want, got.batches)
			require.Len(t, got.Rows, tt.rows)
			for i, row := range got.Rows {
				require.Equal(t, map[string]any{"domain_score": int64(i), "domains_count": int64(i * 10)}, row)
			}
		})
	}
}

// TestRejectsBoundBatches checks that a body of bad rows is not collected
// whole into one call of Next.
func TestRejectsBoundBatches(t *testing.T) {
	t.Parallel()
	mem := newAllocator(t)
	body := "domain_score;domains_count\n" + strings.Repeat("x;1\n", 7) + "1;1\n"
	d, err := transform.NewCSVDecoder(strings.NewReader(body), endpoint(t, "score-profile"), transform.Options{Allocator: mem, BatchRows: 3})
	require.NoError(t, err)
	defer d.Release()

	var rows, rejects []int
	for {
		rec, rej, err := d.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		rows = append(rows, int(rec.NumRows()))
		rejects = append(rejects, len(rej))
		rec.Release()
	}
	require.Equal(t, []int{0, 0, 1}, rows)
	require.Equal(t, []int{3, 3, 1}, rejects)
	require.Equal(t, int64(1), d.Rows())
	require.Equal(t, int64(7), d.Rejected())
}

func TestLongRows(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 40)
	tests := []struct {
		name    string
		body    string
		rows    int
		rejects []transform.Reject
	}{
		{
			name:    "long plain row",
			body:    "anchor;domains_count\nshort;1\n" + long + ";2\nafter;3\n",
			rows:    2,
			rejects: []transform.Reject{{Line: 3, Raw: long[:64], Reason: "the row is longer than 64 bytes"}},
		},
		{
			name:    "unclosed quote stops at the end of the body",
			body:    "anchor;domains_count\n\"" + long + ";2\nafter;3\nmore;4\n",
			rows:    0,
			rejects: []transform.Reject{{Line: 2, Raw: `"` + long[:63], Reason: "the row is longer than 64 bytes"}},
		},
		{
			name:    "long quoted row with line breaks",
			body:    "anchor;domains_count\n\"a\n" + long + "\nb\";2\nafter;3\n",
			rows:    1,
			rejects: []transform.Reject{{Line: 2, Raw: "\"a\n" + long[:61], Reason: "the row is longer than 64 bytes"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mem := newAllocator(t)
			opts := transform.Options{Allocator: mem, BatchRows: 10, MaxRowBytes: 64}
			d, err := transform.NewCSVDecoder(strings.NewReader(tt.body), endpoint(t, "anchors"), opts)
			require.NoError(t, err)
			defer d.Release()
			rec, rejects, err := d.Next(context.Background())
			require.NoError(t, err)
			defer rec.Release()
			require.Equal(t, tt.rows, int(rec.NumRows()))
			require.Equal(t, tt.rejects, rejects)
		})
	}
}

// TestBufferBoundaries decodes values around the size of the decoder's read
// buffer, so that cells, quotes and "\r\n" line breaks fall across reads.
func TestBufferBoundaries(t *testing.T) {
	t.Parallel()
	const buf = 64 << 10
	sizes := []int{buf, buf + 1, 3*buf + 7}
	for size := buf - 48; size < buf-16; size++ {
		sizes = append(sizes, size)
	}
	for _, size := range sizes {
		for _, quoted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d quoted %v", size, quoted), func(t *testing.T) {
				t.Parallel()
				mem := newAllocator(t)
				var body bytes.Buffer
				body.WriteString("anchor;domains_count\r\n")
				var want []map[string]any
				for i := range 3 {
					v := strings.Repeat(string(rune('a'+i)), size)
					if quoted {
						v = strings.Repeat("\"", i) + v[i:]
						fmt.Fprintf(&body, "\"%s\";%d\r\n", strings.ReplaceAll(v, `"`, `""`), i)
					} else {
						fmt.Fprintf(&body, "%s;%d\r\n", v, i)
					}
					want = append(want, map[string]any{"anchor": v, "domains_count": int64(i)})
				}
				ep := endpoint(t, "anchors")
				got := decodeAll(t, body.Bytes(), ep, transform.Options{Allocator: mem, BatchRows: 2, MaxRowBytes: 1 << 20})
				require.Empty(t, got.Rejects)
				require.Len(t, got.Rows, len(want))
				for i, row := range got.Rows {
					require.Equal(t, want[i]["anchor"], row["anchor"], "row %d", i)
					require.Equal(t, want[i]["domains_count"], row["domains_count"], "row %d", i)
				}
			})
		}
	}
}

func TestNextCanceled(t *testing.T) {
	t.Parallel()
	mem := newAllocator(t)
	d, err := transform.NewCSVDecoder(bytes.NewReader(scoreRows(1000)), endpoint(t, "score-profile"), transform.Options{Allocator: mem, BatchRows: 300})
	require.NoError(t, err)
	defer d.Release()

	ctx, cancel := context.WithCancel(context.Background())
	rec, _, err := d.Next(ctx)
	require.NoError(t, err)
	rec.Release()
	cancel()
	rec, rejects, err := d.Next(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, rec)
	require.Nil(t, rejects)
	_, _, err = d.Next(context.Background())
	require.ErrorIs(t, err, context.Canceled, "the error sticks")
}

func TestNextReadError(t *testing.T) {
	t.Parallel()
	mem := newAllocator(t)
	boom := errors.New("connection reset")
	body := io.MultiReader(bytes.NewReader(scoreRows(5)), iotest.ErrReader(boom))
	d, err := transform.NewCSVDecoder(body, endpoint(t, "score-profile"), transform.Options{Allocator: mem, BatchRows: 100})
	require.NoError(t, err)
	defer d.Release()

	rec, rejects, err := d.Next(context.Background())
	require.NoError(t, err, "the complete rows before the cut come first")
	require.Equal(t, int64(5), rec.NumRows())
	require.Empty(t, rejects)
	rec.Release()
	rec, rejects, err = d.Next(context.Background())
	require.ErrorIs(t, err, transform.ErrCut)
	require.ErrorIs(t, err, boom)
	require.EqualError(t, err, "transform: the score-profile CSV body was cut after 5 complete rows: connection reset")
	require.Nil(t, rec)
	require.Nil(t, rejects)
	_, _, err = d.Next(context.Background())
	require.ErrorIs(t, err, boom, "the error sticks")
	require.Equal(t, int64(5), d.Rows())
}

func TestReleaseMidBody(t *testing.T) {
	t.Parallel()
	mem := newAllocator(t)
	d, err := transform.NewCSVDecoder(bytes.NewReader(scoreRows(10)), endpoint(t, "score-profile"), transform.Options{Allocator: mem, BatchRows: 4})
	require.NoError(t, err)
	rec, _, err := d.Next(context.Background())
	require.NoError(t, err)
	d.Release()
	require.Equal(t, int64(4), rec.NumRows(), "a record outlives its decoder")
	rec.Release()
	_, _, err = d.Next(context.Background())
	require.ErrorContains(t, err, "released")
}

func TestRejectString(t *testing.T) {
	t.Parallel()
	r := transform.Reject{Line: 7, Raw: "x;abc", Reason: `column "source_size": "abc" is not an integer`}
	require.Equal(t, `line 7: column "source_size": "abc" is not an integer`, r.String())
}

func TestRequiredFieldsRejectRowsWithoutThem(t *testing.T) {
	t.Parallel()
	mem := newAllocator(t)
	ep, _ := catalog.Lookup("summary")
	body := "score;month_date\n1;2026-11-01\n2;\n3;2026-10-01\n"
	d, err := transform.NewCSVDecoder(strings.NewReader(body), ep, transform.Options{Allocator: mem, Required: []string{"month_date"}})
	require.NoError(t, err)
	defer d.Release()
	rec, rejects, err := d.Next(t.Context())
	require.NoError(t, err)
	defer rec.Release()
	require.Equal(t, int64(2), rec.NumRows())
	require.Equal(t, []transform.Reject{{Line: 3, Raw: "2;", Reason: `column "month_date" is empty, and the row's key needs a value`}}, rejects)

	// A required column the response lacks rejects every row.
	d2, err := transform.NewCSVDecoder(strings.NewReader("score\n1\n"), ep, transform.Options{Allocator: mem, Required: []string{"month_date"}})
	require.NoError(t, err)
	defer d2.Release()
	rec2, rejects, err := d2.Next(t.Context())
	require.NoError(t, err)
	defer rec2.Release()
	require.Zero(t, rec2.NumRows())
	require.Len(t, rejects, 1)
	require.Contains(t, rejects[0].Reason, `column "month_date" is missing from the response`)

	_, err = transform.NewCSVDecoder(strings.NewReader(body), ep, transform.Options{Required: []string{"nope"}})
	require.ErrorContains(t, err, `required field "nope" is not a field of summary`)
}
