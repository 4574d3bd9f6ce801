package dbconn

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

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
		require.Equal(t, tc.want, Unavailable(&pgconn.PgError{Code: tc.code}, nil), tc.code)
	}
	// A connection that could not be made, the server not answering.
	require.True(t, Unavailable(&pgconn.ConnectError{Config: &pgconn.Config{}}, nil))
	require.False(t, Unavailable(errors.New("decoding links: a bad row"), nil))
	require.False(t, Unavailable(nil, nil))
}
