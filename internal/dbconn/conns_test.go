package dbconn_test

import (
	"testing"

	"github.com/seoetl/etl/internal/dbconn"
	"github.com/stretchr/testify/require"
)

// TestConnsSaysWhatEachConnectionIsFor: the refusal of a --concurrency
// counts its connections in words a reader takes as written, in the
// singular too.
func TestConnsSaysWhatEachConnectionIsFor(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1 page in flight, 2 spare, 1 makes partitions, 1 holds the job's lock", dbconn.NeedConns(1, 1).String())
	require.Equal(t, "10 pages in flight, 2 spare, 1 makes partitions, 3 hold the locks of the jobs", dbconn.NeedConns(64, 3).String())
}
