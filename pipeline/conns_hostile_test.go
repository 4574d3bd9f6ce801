package pipeline_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/pipeline"
)

// TestConnsSaysWhatEachConnectionIsFor: the refusal of a --concurrency
// counts its connections in words a reader takes as written, in the
// singular too.
func TestConnsSaysWhatEachConnectionIsFor(t *testing.T) {
	t.Parallel()
	require.Equal(t, "1 page in flight, 2 spare, 1 makes partitions, 1 holds the job's lock", pipeline.NeedConns(1, 1).String())
	require.Equal(t, "10 pages in flight, 2 spare, 1 makes partitions, 3 hold the locks of the jobs", pipeline.NeedConns(64, 3).String())
}
