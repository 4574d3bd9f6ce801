package transform

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// scanAll returns the cells of every row of body, and the problems and
// first lines of the rows.
func scanAll(t testing.TB, body []byte, maxRow int) (rows [][]string, problems []string, lines []int) {
	t.Helper()
	s := newScanner(bytes.NewReader(body), maxRow)
	for {
		ok, err := s.next()
		require.NoError(t, err)
		if !ok {
			return rows, problems, lines
		}
		row := make([]string, s.cells())
		for i := range row {
			row[i] = string(s.cell(i))
		}
		rows = append(rows, row)
		problems = append(problems, s.problem)
		lines = append(lines, s.line)
	}
}

func TestScanner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		rows     [][]string
		problems []string
		lines    []int
	}{
		{name: "plain", body: "a;b\n1;2\n", rows: [][]string{{"a", "b"}, {"1", "2"}}, problems: []string{"", ""}, lines: []int{1, 2}},
		{name: "empty cells", body: ";\n;;\n", rows: [][]string{{"", ""}, {"", "", ""}}, problems: []string{"", ""}, lines: []int{1, 2}},
		{name: "quoted", body: "\"a;b\";\"c\"\"d\";\"\"\n", rows: [][]string{{"a;b", `c"d`, ""}}, problems: []string{""}, lines: []int{1}},
		{name: "line break in quotes", body: "\"a\nb\";c\nd\n", rows: [][]string{{"a\nb", "c"}, {"d"}}, problems: []string{"", ""}, lines: []int{1, 3}},
		{name: "crlf", body: "a;b\r\n\"c\r\nd\";e\r\n", rows: [][]string{{"a", "b"}, {"c\r\nd", "e"}}, problems: []string{"", ""}, lines: []int{1, 2}},
		{name: "lone cr is data", body: "a\rb;c\n", rows: [][]string{{"a\rb", "c"}}, problems: []string{""}, lines: []int{1}},
		{name: "blank lines", body: "\n\na\n\r\n\nb", rows: [][]string{{"a"}, {"b"}}, problems: []string{"", ""}, lines: []int{3, 6}},
		{name: "byte order mark", body: "\ufeffa;b\n", rows: [][]string{{"a", "b"}}, problems: []string{""}, lines: []int{1}},
		{name: "bare quote", body: "a\"b;c\nd\n", rows: [][]string{{`a"b`, "c"}, {"d"}}, problems: []string{`a '"' inside an unquoted value`, ""}, lines: []int{1, 2}},
		{name: "text after quote", body: "\"a\"b;c\n", rows: [][]string{{"ab", "c"}}, problems: []string{`text after the closing '"' of a quoted value`}, lines: []int{1}},
		{name: "unclosed", body: "a\n\"b;c\nd\n", rows: [][]string{{"a"}, {"b;c\nd\n"}}, problems: []string{"", "a quoted value is not closed before the end of the body"}, lines: []int{1, 2}},
		{name: "trailing delimiter at end", body: "a;", rows: [][]string{{"a", ""}}, problems: []string{""}, lines: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rows, problems, lines := scanAll(t, []byte(tt.body), 1<<20)
			require.Equal(t, tt.rows, rows)
			require.Equal(t, tt.problems, problems)
			require.Equal(t, tt.lines, lines)
		})
	}
}

// FuzzScanner compares the scanner's cells with encoding/csv's wherever
// encoding/csv reads a body without error. They differ by design on '\r'
// (encoding/csv turns "\r\n" inside quotes into "\n") and on a byte order
// mark (encoding/csv keeps it), so those bodies are left out.
func FuzzScanner(f *testing.F) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*", "input.csv"))
	require.NoError(f, err)
	for _, in := range inputs {
		body, err := os.ReadFile(in)
		require.NoError(f, err)
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rows, problems, lines := scanAll(t, body, 1<<20)
		for i := 1; i < len(lines); i++ {
			require.Greater(t, lines[i], lines[i-1])
		}
		if bytes.ContainsRune(body, '\r') || bytes.HasPrefix(body, []byte("\ufeff")) {
			return
		}
		r := csv.NewReader(bytes.NewReader(body))
		r.Comma = ';'
		r.FieldsPerRecord = -1
		want, err := r.ReadAll()
		if err != nil {
			return
		}
		require.Len(t, rows, len(want), "row count")
		for _, p := range problems {
			require.Empty(t, p)
		}
		if len(want) == 0 {
			want = nil
		}
		require.Equal(t, want, rows)
	})
}
