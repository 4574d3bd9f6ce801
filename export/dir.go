package export

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// NotAFolderError is a destination that is not a folder: a file, or a
// path below one.
type NotAFolderError struct {
	// Dir is the destination as given.
	Dir string
	// File is the file in the way: Dir itself or a folder above it.
	File string
}

func (e *NotAFolderError) Error() string {
	if e.File == e.Dir {
		return fmt.Sprintf("export: %q is not a folder", e.Dir)
	}
	return fmt.Sprintf("export: %q is not a folder: %q is a file", e.Dir, e.File)
}

// ResolveDir returns the real path of the lake's folder dir: absolute,
// and with every symbolic link of the part that exists resolved, so that
// one folder has one name however it is reached (the lock that keeps two
// exports apart, and export_files, are keyed by it). The part that does
// not exist yet is kept as given (an export makes it). It writes nothing;
// a dir that is a file, or lies below one, is a *NotAFolderError.
func ResolveDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("export: the destination folder is empty")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("export: destination %q: %w", dir, err)
	}
	p, rest := abs, ""
	for {
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir():
			file := p
			if p == abs {
				file = dir
			}
			return "", &NotAFolderError{Dir: dir, File: file}
		case err == nil:
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				return "", fmt.Errorf("export: destination %q: %w", dir, quotedPathError(err))
			}
			return filepath.Join(real, rest), nil
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			if _, lerr := os.Lstat(p); lerr == nil {
				return "", fmt.Errorf("export: destination %q: %q is a symbolic link to nothing", dir, p)
			}
		default:
			return "", fmt.Errorf("export: destination %q: %w", dir, quotedPathError(err))
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs, nil
		}
		rest, p = filepath.Join(filepath.Base(p), rest), parent
	}
}

// quotedPathError is err with the path of an *fs.PathError or
// *os.LinkError (err itself, not one it wraps) quoted, so that a name from the command line never
// reaches a terminal raw.
func quotedPathError(err error) error {
	switch e := err.(type) {
	case *fs.PathError:
		return fmt.Errorf("%s %q: %w", e.Op, e.Path, e.Err)
	case *os.LinkError:
		return fmt.Errorf("%s %q %q: %w", e.Op, e.Old, e.New, e.Err)
	}
	return err
}
