package localwh

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/seoetl/etl/internal/pgcluster"
)

// Files of the local folder.
const (
	SockFile  = "local.sock"
	LockFile  = "local.lock"
	StateFile = "local.json"
	LogFile   = "local.log"
	// KeyFile holds the key of the local accounts' tokens when
	// ETL_SECRET_KEY is not set: made once, 0600 (ReadOrMakeKey).
	KeyFile = "secret.key"
)

// Paths are the local folder and where its cluster goes.
type Paths struct {
	Dir      string // the local folder (--dir), absolute
	DataRoot string // --data-root (pgcluster.PlaceOptions.AwayRoot)
}

// File is the file name of the local folder.
func (l Paths) File(name string) string { return filepath.Join(l.Dir, name) }

// Away reports whether dataDir, the cluster folder of a running warehouse
// (State.DataDir), is away from the local folder: under DataRoot, because
// the server's OS user cannot reach the local folder.
func (l Paths) Away(dataDir string) bool {
	places, err := pgcluster.Places(l.Dir, pgcluster.PlaceOptions{AwayRoot: l.DataRoot})
	return err == nil && dataDir != places[0]
}

// Delete deletes the warehouse of l, stopped: its PostgreSQL clusters,
// wherever they live, the files of the local folder (its key stays) and
// the folder when nothing else is in it. It returns the clusters deleted.
func (l Paths) Delete(ctx context.Context) (deleted []string, err error) {
	places, err := pgcluster.Places(l.Dir, pgcluster.PlaceOptions{AwayRoot: l.DataRoot})
	if err != nil {
		return nil, err
	}
	for _, p := range places {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := pgcluster.Remove(ctx, p); err != nil {
			return deleted, err
		}
		deleted = append(deleted, p)
	}
	for _, name := range []string{StateFile, LogFile, SockFile, LockFile} {
		if err := os.Remove(l.File(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return deleted, err
		}
	}
	_ = os.Remove(l.Dir) // when nothing else is in it
	return deleted, nil
}
