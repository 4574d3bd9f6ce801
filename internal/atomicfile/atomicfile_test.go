package atomicfile_test

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/atomicfile"
)

// TestCreateTempFollowsTheUmask: a temporary file is 0666 less the umask
// (here 027: 0640), where os.CreateTemp makes 0600; two never share a
// name. Not parallel: the umask is the process's.
func TestCreateTempFollowsTheUmask(t *testing.T) {
	dir := t.TempDir()
	old := syscall.Umask(0o027)
	a, errA := atomicfile.CreateTemp(dir, ".tmp-")
	b, errB := atomicfile.CreateTemp(dir, ".tmp-")
	syscall.Umask(old)
	require.NoError(t, errA)
	require.NoError(t, errB)
	defer a.Close()
	defer b.Close()
	require.NotEqual(t, a.Name(), b.Name())
	for _, f := range []*os.File{a, b} {
		st, err := f.Stat()
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o640), st.Mode())
		require.True(t, strings.HasPrefix(st.Name(), ".tmp-"), st.Name())
	}
}
