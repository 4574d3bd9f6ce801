// Package atomicfile makes the temporary files that a command writes
// whole and then renames into place (the Parquet lake's files and
// manifests, the HTML report), with the mode a file written by cp or a
// shell's > would get.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// CreateTemp makes a new file in dir named prefix and random digits, as
// os.CreateTemp does, but with mode 0666 less the process's umask rather
// than 0600: the file it becomes once renamed is for other users too
// (DuckDB, Spark or Trino reading a lake as another user, a web server
// serving a report), and the umask is how a user says otherwise.
func CreateTemp(dir, prefix string) (*os.File, error) {
	for range 10000 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 10))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("creating a temporary file in %q: too many names taken", dir)
}
