package transform_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/transform"
)

// csvEndpoints are the endpoints that answer CSV, in catalog order.
func csvEndpoints() []*catalog.Endpoint {
	var eps []*catalog.Endpoint
	for _, ep := range catalog.All() {
		if ep.AllowsCSV() {
			eps = append(eps, ep)
		}
	}
	return eps
}

// FuzzCSVDecoder checks that no body makes the decoder panic or leak Arrow
// memory, and that every data row comes out either as a record row or as a
// reject: when encoding/csv reads the body without error, it finds as many
// records as the decoder's header, rows and rejects together.
func FuzzCSVDecoder(f *testing.F) {
	eps := csvEndpoints()
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "input.csv"))
	require.NoError(f, err)
	for _, in := range dirs {
		body, err := os.ReadFile(in)
		require.NoError(f, err)
		name, err := os.ReadFile(filepath.Join(filepath.Dir(in), "endpoint"))
		require.NoError(f, err)
		for i, ep := range eps {
			if ep.Name == strings.TrimSpace(string(name)) {
				f.Add(uint8(i), body)
			}
		}
	}

	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		ep := eps[int(which)%len(eps)]
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)

		d, err := transform.NewCSVDecoder(bytes.NewReader(body), ep, transform.Options{Allocator: mem, BatchRows: 3, MaxRowBytes: 512})
		if err != nil {
			return
		}
		defer d.Release()
		schema := transform.Schema(ep)
		var rows, rejects int
		lastLine := 1
		for {
			rec, rej, err := d.Next(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			require.True(t, schema.Equal(rec.Schema()))
			require.LessOrEqual(t, rec.NumRows(), int64(3))
			for _, col := range rec.Columns() {
				require.Equal(t, rec.NumRows(), int64(col.Len()))
			}
			rows += int(rec.NumRows())
			rec.Release()
			for _, r := range rej {
				require.Greater(t, r.Line, lastLine, "reject lines grow")
				require.NotEmpty(t, r.Reason)
				require.LessOrEqual(t, len(r.Raw), 512)
				require.True(t, bytes.Contains(body, []byte(r.Raw)), "raw %q is not in the body", r.Raw)
				lastLine = r.Line
			}
			rejects += len(rej)
		}
		require.Equal(t, int64(rows), d.Rows())
		require.Equal(t, int64(rejects), d.Rejected())

		// encoding/csv as an independent count of rows. It differs from the
		// decoder on '\r' (which it drops in quoted values) and on a byte
		// order mark (which it keeps), so those bodies are left out.
		if bytes.ContainsRune(body, '\r') || bytes.HasPrefix(body, []byte("\ufeff")) {
			return
		}
		r := csv.NewReader(bytes.NewReader(body))
		r.Comma = ';'
		r.FieldsPerRecord = -1
		records, err := r.ReadAll()
		if err != nil {
			return
		}
		require.Equal(t, len(records)-1, rows+rejects, "encoding/csv counts %d data rows", len(records)-1)
	})
}

// FuzzJSONDecoder checks that no body makes the JSON decoder panic or leak
// Arrow memory, that a body it reads to the end is valid JSON and gives
// every item of data as a record row or as a reject, and that it never
// reads an invalid body to the end.
func FuzzJSONDecoder(f *testing.F) {
	eps := catalog.All()
	index := map[string]uint8{}
	for i, ep := range eps {
		index[ep.Name] = uint8(i)
	}
	for _, tc := range kindCases {
		ep, _ := catalog.Lookup(tc.endpoint)
		f.Add(index[tc.endpoint], tc.body(ep))
	}
	f.Add(index["matrix"], jsonBody(matrixRow(1), matrixRow(2), `12`, `{"domain":"x","extra":[1,{"a":"]"}]}`))
	f.Add(index["matrix"], []byte(`{"data":[`+matrixRow(1)+`],"meta":{"success":true},"error":null}`))
	f.Add(index["matrix"], []byte(`{"meta":{"success":false,"status_code":400},"error":{"message":"no"}}`))
	f.Add(index["score-profile"], scoreJSON(7))
	f.Add(index["keyword-metrics"], []byte(`{"data":{"intents":["a,b"],"trends":[1,2],"cpc":0.5}}`))

	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		ep := eps[int(which)%len(eps)]
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)

		const maxRow = 256
		valid := json.Valid(body)
		d, err := transform.NewJSONDecoder(bytes.NewReader(body), ep, transform.Options{Allocator: mem, BatchRows: 3, MaxRowBytes: maxRow})
		if err != nil {
			return
		}
		defer d.Release()
		schema := transform.Schema(ep)
		var rows, rejects int
		lastLine := 0
		for {
			rec, rej, err := d.Next(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				require.Nil(t, rec)
				require.Nil(t, rej)
				return
			}
			require.True(t, schema.Equal(rec.Schema()))
			require.LessOrEqual(t, rec.NumRows(), int64(3))
			require.LessOrEqual(t, len(rej), 3)
			for _, col := range rec.Columns() {
				require.Equal(t, rec.NumRows(), int64(col.Len()))
			}
			rows += int(rec.NumRows())
			rec.Release()
			for _, r := range rej {
				require.Greater(t, r.Line, lastLine, "reject lines grow")
				require.NotEmpty(t, r.Reason)
				require.LessOrEqual(t, len(r.Raw), maxRow)
				require.True(t, bytes.Contains(body, []byte(r.Raw)), "raw %q is not in the body", r.Raw)
				lastLine = r.Line
			}
			rejects += len(rej)
		}
		require.Equal(t, int64(rows), d.Rows())
		require.Equal(t, int64(rejects), d.Rejected())

		// encoding/json as an independent reading of the body.
		require.True(t, valid, "an invalid body decoded to its end")
		var env map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(body, &env))
		items := 0
		switch data := env["data"]; data[0] {
		case '[':
			var list []json.RawMessage
			require.NoError(t, json.Unmarshal(data, &list))
			items = len(list)
		case '{':
			items = 1
		}
		require.Equal(t, items, rows+rejects, "data has %d items", items)
		require.LessOrEqual(t, lastLine, items)
	})
}

// FuzzCut checks a decoder on a body cut after n bytes against the same
// decoder on the whole body, one row per batch: the rows and rejects it
// delivers are the whole body's first ones, it ends with ErrCut (wrapping
// the read error) unless it met an error of the body before the cut or a
// JSON envelope was closed, and it leaks no Arrow memory.
func FuzzCut(f *testing.F) {
	eps := catalog.All()
	index := map[string]uint8{}
	for i, ep := range eps {
		index[ep.Name] = uint8(i)
	}
	for _, tc := range cutCases {
		body := tc.body()
		end := 0
		for _, p := range tc.pieces { // cut inside and right after every piece
			f.Add(index[tc.endpoint], tc.format == "json", body, uint16(end+len(p.text)/2))
			end += len(p.text)
			f.Add(index[tc.endpoint], tc.format == "json", body, uint16(end))
		}
	}
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "input.csv"))
	require.NoError(f, err)
	for _, in := range dirs {
		body, err := os.ReadFile(in)
		require.NoError(f, err)
		name, err := os.ReadFile(filepath.Join(filepath.Dir(in), "endpoint"))
		require.NoError(f, err)
		f.Add(index[strings.TrimSpace(string(name))], false, body, uint16(len(body)*2/3))
	}
	f.Add(index["matrix"], true, jsonBody(matrixRow(1), matrixRow(2), `12`, `{"domain":"x","extra":[1,{"a":"]"}]}`), uint16(200))

	f.Fuzz(func(t *testing.T, which uint8, isJSON bool, body []byte, cut uint16) {
		ep := eps[int(which)%len(eps)]
		format := "csv"
		if isJSON || !ep.AllowsCSV() {
			format = "json"
		}
		n := int(cut) % (len(body) + 1)
		opts := func() transform.Options {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			t.Cleanup(func() { mem.AssertSize(t, 0) })
			return transform.Options{Allocator: mem, BatchRows: 1, MaxRowBytes: 256}
		}
		full, fullErr := decodeCut(t, format, bytes.NewReader(body), ep, opts())
		got, err := decodeCut(t, format, cutAt(body, n), ep, opts())
		require.Error(t, err)
		require.LessOrEqual(t, len(got.Rows), len(full.Rows))
		require.Equal(t, full.Rows[:len(got.Rows)], got.Rows, "the rows before the cut are the whole body's first")
		require.LessOrEqual(t, len(got.Rejects), len(full.Rejects))
		require.Equal(t, full.Rejects[:len(got.Rejects)], got.Rejects, "the rejects before the cut are the whole body's first")
		switch {
		case errors.Is(err, transform.ErrCut):
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		case errors.Is(err, io.EOF):
			require.Equal(t, "json", format, "a cut CSV body never ends cleanly")
			require.Equal(t, len(full.Rows), len(got.Rows), "a JSON body whose envelope closed is whole")
			require.Equal(t, len(full.Rejects), len(got.Rejects), "a JSON body whose envelope closed is whole")
		default: // an error of the body before the cut, which the whole body has too
			require.NotErrorIs(t, fullErr, io.EOF, "the cut body failed with %v, the whole body did not", err)
		}
	})
}
