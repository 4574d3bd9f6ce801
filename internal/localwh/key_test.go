package localwh

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/auth"
)

// TestLocalKeyMadeOnce: commands that start at once (two make up, etl
// local env) make the local folder's key once and all read that one.
func TestLocalKeyMadeOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".etl", KeyFile)
	keys := make([]string, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := ReadOrMakeKey(path)
			require.NoError(t, err)
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys {
		require.Equal(t, keys[0], k)
	}
	_, err := auth.ParseKey(keys[0])
	require.NoError(t, err)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	left, err := filepath.Glob(filepath.Join(filepath.Dir(path), ".secret-*"))
	require.NoError(t, err)
	require.Empty(t, left, "no temporary file left")
}
