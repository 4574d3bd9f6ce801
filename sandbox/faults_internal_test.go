package sandbox

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// awkwardCSV has quoted cells holding ';', '"' and line ends, as the
// sandbox writes them; columns 0 and 2 are integers.
const awkwardCSV = "n;text;m\n" +
	"1;\"x;\"\"y\ny\";3\n" +
	"4;plain;6\n" +
	"7;\"\n\";9\n" +
	"10;\"\"\"\";12\n" +
	"13;\"a;b;c\";15\n"

// malform writes body through a malformer at rate in writes of n bytes.
func malform(t *testing.T, body string, rate float64, n int) string {
	t.Helper()
	var out bytes.Buffer
	m := &malformer{w: &out, rows: newKey(1, "rows"), kinds: newKey(1, "kinds"), rate: rate, intCols: []int{0, 2}}
	for p := []byte(body); len(p) > 0; {
		k := min(n, len(p))
		w, err := m.Write(p[:k])
		require.NoError(t, err)
		require.Equal(t, k, w)
		p = p[k:]
	}
	return out.String()
}

func TestMalformerFollowsQuotedLines(t *testing.T) {
	t.Parallel()
	require.Equal(t, awkwardCSV, malform(t, awkwardCSV, 0, len(awkwardCSV)), "rate 0 passes the body on untouched")

	for _, rate := range []float64{0.5, 1} {
		whole := malform(t, awkwardCSV, rate, len(awkwardCSV))
		for n := 1; n < len(awkwardCSV); n++ {
			require.Equal(t, whole, malform(t, awkwardCSV, rate, n), "the same rows whatever the writes (%d bytes)", n)
		}
		r := csv.NewReader(strings.NewReader(whole))
		r.Comma, r.FieldsPerRecord = ';', -1
		recs, err := r.ReadAll()
		require.NoError(t, err, "%q", whole)
		require.Equal(t, []string{"n", "text", "m"}, recs[0])
		wr := csv.NewReader(strings.NewReader(awkwardCSV))
		wr.Comma = ';'
		want, err := wr.ReadAll()
		require.NoError(t, err)
		require.Len(t, recs, len(want), "whole lines are replaced, never split or merged")
		bad := 0
		for i, rec := range recs[1:] {
			intText := func(col int) bool { _, err := strconv.Atoi(rec[col]); return err != nil }
			if len(rec) != 3 || intText(0) || intText(2) {
				bad++
				if len(rec) == 3 {
					require.Equal(t, want[i+1][1], rec[1], "text in an integer column keeps the other cells")
				}
			}
		}
		if rate == 1 {
			require.Equal(t, len(recs)-1, bad)
		} else {
			require.Positive(t, bad)
			require.Less(t, bad, len(recs)-1)
		}
	}
}

func TestMalformerWithoutIntegerColumns(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	m := &malformer{w: &out, rows: newKey(2, "rows"), kinds: newKey(2, "kinds"), rate: 1}
	_, err := m.Write([]byte("only\n\"a\nb\"\nc\n"))
	require.NoError(t, err)
	r := csv.NewReader(&out)
	r.Comma, r.FieldsPerRecord = ';', -1
	recs, err := r.ReadAll()
	require.NoError(t, err)
	require.Equal(t, [][]string{{"only"}, {"a\nb", "extra"}, {"c", "extra"}}, recs,
		"a single column gains a cell: losing its only one would make an empty line, which readers skip")
}

// cutBody writes body through a cutter the way writeAnswer does (a bufio
// writer of bodyBuffer bytes) and returns what passed and the error.
func cutBody(body []byte, at uint64, rows int64) (string, error) {
	var out bytes.Buffer
	c := &cutter{w: &out, at: at, rows: rows, csv: true, left: -1}
	bw := bufio.NewWriterSize(c, bodyBuffer)
	_, err := bw.Write(body)
	if err == nil {
		err = bw.Flush()
	}
	return out.String(), err
}

func TestCutterCutsAnywhereInABody(t *testing.T) {
	t.Parallel()
	for _, rows := range []int64{3, 20_000} { // one write; many writes, size estimated
		body := []byte("n;text\n" + strings.Repeat("12345;abcdef\n", int(rows)))
		for _, frac := range []float64{0, 0.25, 0.5, 0.75} {
			got, err := cutBody(body, uint64(frac*0x1p64), rows)
			require.ErrorIs(t, err, errCut)
			require.True(t, bytes.HasPrefix(body, []byte(got)))
			require.InDelta(t, frac*float64(len(body)), float64(len(got)), 200, "rows %d at %v", rows, frac)
		}
		// At the very end the last byte is held back: still a cut.
		got, err := cutBody(body, math.MaxUint64, rows)
		require.True(t, err == nil || errors.Is(err, errCut))
		require.Less(t, len(got), len(body))
		require.True(t, bytes.HasPrefix(body, []byte(got)))
	}
}

func TestHit(t *testing.T) {
	t.Parallel()
	for _, d := range []uint64{0, 1, 1 << 63, math.MaxUint64} {
		require.False(t, hit(d, 0))
		require.True(t, hit(d, 1))
	}
	require.True(t, hit(1<<62-1, 0.25))
	require.False(t, hit(1<<62, 0.25))
	n := 0
	k := newKey(1, "hit")
	for i := range int64(10_000) {
		if hit(k.at(i), 0.1) {
			n++
		}
	}
	require.InDelta(t, 1000, n, 100)
}
