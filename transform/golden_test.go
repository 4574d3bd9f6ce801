package transform_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/transform"
)

var update = flag.Bool("update", false, "rewrite the golden want.json files of testdata/")

// goldenCase is one directory of testdata: input.csv, the endpoint's name in
// endpoint, and want.json, the decoded rows, rejects and drift.
type goldenCase struct {
	name     string
	dir      string
	endpoint string
	input    []byte
}

func goldenCases(t testing.TB) []goldenCase {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "input.csv"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	var cases []goldenCase
	for _, in := range dirs {
		dir := filepath.Dir(in)
		input, err := os.ReadFile(in)
		require.NoError(t, err)
		ep, err := os.ReadFile(filepath.Join(dir, "endpoint"))
		require.NoError(t, err)
		cases = append(cases, goldenCase{
			name: filepath.Base(dir), dir: dir, endpoint: strings.TrimSpace(string(ep)), input: input,
		})
	}
	return cases
}

// normalize renders v as the JSON of a golden file and reads it back, so
// that got and want compare as the same generic values (numbers stay exact).
func normalize(t testing.TB, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ep := endpoint(t, tc.endpoint)
			mem := newAllocator(t)
			got := decodeAll(t, tc.input, ep, transform.Options{Allocator: mem, BatchRows: transform.DefaultBatchRows, Logger: testLogger(t)})
			gotJSON, err := json.MarshalIndent(got, "", "  ")
			require.NoError(t, err)
			gotJSON = append(gotJSON, '\n')

			path := filepath.Join(tc.dir, "want.json")
			if *update {
				require.NoError(t, os.WriteFile(path, gotJSON, 0o644))
			}
			wantJSON, err := os.ReadFile(path)
			require.NoError(t, err, "run go test -update to create it")
			if diff := cmp.Diff(normalize(t, wantJSON), normalize(t, gotJSON)); diff != "" {
				t.Fatalf("%s: decoded rows differ (-want +got):\n%s", tc.name, diff)
			}

			// Batch boundaries must not change what is decoded.
			for _, batch := range []int{1, 2, 3} {
				small := decodeAll(t, tc.input, ep, transform.Options{Allocator: mem, BatchRows: batch})
				if diff := cmp.Diff(got, small, cmp.AllowUnexported(decoded{}), cmp.FilterPath(func(p cmp.Path) bool {
					return p.String() == "batches"
				}, cmp.Ignore())); diff != "" {
					t.Fatalf("%s: BatchRows %d decodes differently (-default +small):\n%s", tc.name, batch, diff)
				}
			}
		})
	}
}
