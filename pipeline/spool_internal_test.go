package pipeline

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/seoetl/etl/internal/dbconn"
	"github.com/stretchr/testify/require"
)

// A spool replays the whole body, however much of it was read before, in
// memory and past it in a file, and ends as the body ended: at its end, or
// with the error that cut it (which the decoder takes for a cut).
func TestSpoolReplaysTheBodyAsItCame(t *testing.T) {
	t.Parallel()
	cut := errors.New("connection reset by peer")
	for _, tc := range []struct {
		name string
		size int   // bytes of the body
		read int   // bytes read before the replay
		end  error // how the body ends
	}{
		{"small, half read", 1000, 500, io.EOF},
		{"small, unread", 1000, 0, io.EOF},
		{"past memory, read to its end", spoolMemory + 300_000, spoolMemory + 300_000, io.EOF},
		{"past memory, read into the file", 3*spoolMemory + 17, spoolMemory + 100, io.EOF},
		{"cut in memory", 5000, 100, cut},
		{"cut in the file", 2*spoolMemory + 5, 10, cut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := make([]byte, tc.size)
			for i := range body {
				body[i] = byte(i * 7)
			}
			var src io.Reader = bytes.NewReader(body)
			if tc.end != io.EOF {
				src = io.MultiReader(src, iotest.ErrReader(tc.end))
			}
			s := newSpool(iotest.HalfReader(src))
			defer s.Close()
			head := make([]byte, tc.read)
			_, err := io.ReadFull(s, head)
			require.NoError(t, err)
			require.Equal(t, body[:tc.read], head)
			replays := func() {
				for range 2 { // replayed as often as the page is loaded again
					got, err := io.ReadAll(s.replay())
					if tc.end == io.EOF {
						require.NoError(t, err)
					} else {
						require.ErrorIs(t, err, tc.end)
					}
					require.True(t, bytes.Equal(body, got), "replayed %d bytes of %d", len(got), len(body))
				}
			}
			replays()
			// Kept once its page committed (journal.page): the memory
			// buffer goes back to the pool, its bytes to a file of their
			// own, and the spool replays the same.
			s.compact(false)
			require.Zero(t, s.inMemory(), "nothing is kept in memory")
			require.Equal(t, int64(tc.size), s.size())
			replays()
		})
	}
}

// A spool kept in memory holds a copy of the size of its answer, not the
// pool's megabyte, and replays the same.
func TestSpoolCompactsInMemory(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte("a;b\n"), 1000)
	s := newSpool(bytes.NewReader(body))
	defer s.Close()
	s.compact(true)
	require.Equal(t, int64(len(body)), s.inMemory())
	require.Less(t, cap(*s.mem), 2*len(body), "not the pool's megabyte")
	got, err := io.ReadAll(s.replay())
	require.NoError(t, err)
	require.Equal(t, body, got)
}

// unavailable tells the failures of a database that may serve again
// from those that will fail the same way however often tried.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code string
		want bool
	}{
		{"53300", true},  // too many clients
		{"53200", true},  // out of shared memory (the lock table)
		{"57P01", true},  // terminated by an administrator
		{"57P03", true},  // the server is starting
		{"08006", true},  // connection failure
		{"40P01", true},  // deadlock
		{"40001", true},  // serialization failure
		{"55P03", true},  // lock timeout
		{"28P01", false}, // password refused
		{"3D000", false}, // no such database
		{"23505", false}, // unique violation
		{"22P02", false}, // bad input
		{"42P01", false}, // no such table
	} {
		require.Equal(t, tc.want, dbconn.Unavailable(&pgconn.PgError{Code: tc.code}, nil), tc.code)
	}
	// A connection that could not be made, the server not answering.
	require.True(t, dbconn.Unavailable(&pgconn.ConnectError{Config: &pgconn.Config{}}, nil))
	require.False(t, dbconn.Unavailable(errors.New("decoding links: a bad row"), nil))
	require.False(t, dbconn.Unavailable(nil, nil))
}
