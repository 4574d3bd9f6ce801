package pipeline_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/pipeline"
)

// TestAPaidPageLoadsAgainWithoutATempDir: the temporary folder is not
// there (TMPDIR names a folder that does not exist: a full or read-only
// /tmp fails alike), and a page of 5,000 links (1.4 MB, more than the
// answer kept in memory) loses its connection at its first COPY. It is
// loaded again from the answer kept, all of it in memory: not thrown
// away (and bought again by the next run). Not parallel: it sets TMPDIR.
func TestAPaidPageLoadsAgainWithoutATempDir(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "gone"))
	f := newFixture(t)
	k := &pageKiller{t: t, dbURL: f.DBURL, copyAt: 1}
	f.Pool = tracedPool(t, f.DBURL, 4, k)
	sum, err := f.runJob(t, linksSpec("n5000.example", "limit: 5000"), pipeline.Config{Concurrency: 1})
	require.NoError(t, err)
	require.Equal(t, int32(1), k.killed.Load())
	require.Equal(t, "succeeded", sum.Status())
	require.Equal(t, int64(2), f.Sandbox.Usage("test-key").Requests, "5,000 links and an empty page, none asked again")
	requirePaidIsLoaded(t, f, f.Pool, 5000)
}
