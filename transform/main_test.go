package transform_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/transform"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newAllocator returns an allocator that fails t when memory is still
// allocated at the end of the test.
func newAllocator(t testing.TB) *memory.CheckedAllocator {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func endpoint(t testing.TB, name string) *catalog.Endpoint {
	t.Helper()
	ep, ok := catalog.Lookup(name)
	require.True(t, ok, "no endpoint %q", name)
	return ep
}

// decoded is everything a decoder produced for one body, rendered for
// comparison and for the golden files.
type decoded struct {
	Rows    []map[string]any `json:"rows"`
	Rejects []reject         `json:"rejects"`
	Drift   drift            `json:"drift"`
	batches []int
}

type reject struct {
	Line   int    `json:"line"`
	Raw    string `json:"raw"`
	Reason string `json:"reason"`
}

type drift struct {
	Unknown []string `json:"unknown"`
	Missing []string `json:"missing"`
}

// decodeAll decodes the CSV body to the end, checking every record against
// the endpoint's schema and the batch size, and releasing it.
func decodeAll(t testing.TB, body []byte, ep *catalog.Endpoint, opts transform.Options) decoded {
	t.Helper()
	return decodeFormat(t, "csv", body, ep, opts)
}

// decodeJSON is decodeAll for a JSON body.
func decodeJSON(t testing.TB, body []byte, ep *catalog.Endpoint, opts transform.Options) decoded {
	t.Helper()
	return decodeFormat(t, "json", body, ep, opts)
}

func decodeFormat(t testing.TB, format string, body []byte, ep *catalog.Endpoint, opts transform.Options) decoded {
	t.Helper()
	d, err := transform.NewDecoder(bytes.NewReader(body), ep, format, opts)
	require.NoError(t, err)
	defer d.Release()

	out := decoded{Rows: []map[string]any{}, Rejects: []reject{}}
	want := transform.Schema(ep)
	for {
		rec, rejects, err := d.Next(context.Background())
		if errors.Is(err, io.EOF) {
			require.Nil(t, rec)
			require.Empty(t, rejects)
			break
		}
		require.NoError(t, err)
		require.True(t, want.Equal(rec.Schema()), "schema %v, want %v", rec.Schema(), want)
		require.LessOrEqual(t, int(rec.NumRows()), opts.BatchRows)
		require.LessOrEqual(t, len(rejects), opts.BatchRows)
		out.batches = append(out.batches, int(rec.NumRows()))
		out.Rows = append(out.Rows, renderRecord(t, rec)...)
		rec.Release()
		for _, r := range rejects {
			out.Rejects = append(out.Rejects, reject{Line: r.Line, Raw: r.Raw, Reason: r.Reason})
		}
	}
	require.Equal(t, int64(len(out.Rows)), d.Rows())
	require.Equal(t, int64(len(out.Rejects)), d.Rejected())
	dr := d.Drift()
	out.Drift = drift{Unknown: nonNil(dr.Unknown), Missing: nonNil(dr.Missing)}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func renderRecord(t testing.TB, rec arrow.Record) []map[string]any {
	t.Helper()
	rows := make([]map[string]any, rec.NumRows())
	for i := range rows {
		rows[i] = make(map[string]any, rec.NumCols())
	}
	for c, col := range rec.Columns() {
		name := rec.ColumnName(c)
		for i := range rows {
			rows[i][name] = renderValue(t, col, i)
		}
	}
	return rows
}

func renderValue(t testing.TB, a arrow.Array, i int) any {
	t.Helper()
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Binary:
		return hex.EncodeToString(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Timestamp:
		return time.UnixMicro(int64(a.Value(i))).UTC().Format("2006-01-02T15:04:05Z")
	case *array.Date32:
		return a.Value(i).ToTime().Format("2006-01-02")
	case *array.List:
		start, end := a.ValueOffsets(i)
		items := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			items = append(items, renderValue(t, a.ListValues(), int(j)))
		}
		return items
	}
	require.FailNow(t, fmt.Sprintf("no rendering for %T", a))
	return nil
}
