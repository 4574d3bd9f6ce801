package pgcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNoBinaries is returned (wrapped) when no PostgreSQL server binaries are
// found.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries (initdb and postgres) found")

// debianRoot is where Debian and Ubuntu install one folder per major version.
const debianRoot = "/usr/lib/postgresql"

// Binaries returns the folder holding the PostgreSQL server binaries (initdb,
// postgres, pg_ctl, psql): the highest version under /usr/lib/postgresql/*/bin
// (Debian, Ubuntu), else the folder of initdb found in PATH. It reads no
// environment variable of its own; callers that offer one (PG_BIN) pass it as
// Options.BinDir.
func Binaries() (string, error) {
	return findBinaries(debianRoot)
}

func findBinaries(root string) (string, error) {
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "bin"))
	// Highest version first: "16" before "15" before "9.6".
	slices.SortFunc(dirs, func(a, b string) int {
		return compareVersions(filepath.Base(filepath.Dir(b)), filepath.Base(filepath.Dir(a)))
	})
	for _, d := range dirs {
		if hasServer(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if d := filepath.Dir(p); hasServer(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("pgcluster: %w in %s/*/bin or PATH; install the PostgreSQL server package", ErrNoBinaries, root)
}

// hasServer reports whether dir holds the executables Start runs.
func hasServer(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// compareVersions compares dotted version numbers numerically ("9.6" < "15");
// a part that is not a number sorts before any number.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		na, nb := -1, -1
		if i < len(pa) {
			if n, err := strconv.Atoi(pa[i]); err == nil {
				na = n
			}
		}
		if i < len(pb) {
			if n, err := strconv.Atoi(pb[i]); err == nil {
				nb = n
			}
		}
		if na != nb {
			return na - nb
		}
	}
	return 0
}
