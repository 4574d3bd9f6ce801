package localwh

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seoetl/etl/auth"
)

// ReadOrMakeKey reads the key kept at path, or makes one there (0600).
// Commands that start at once (two make up, etl local env) all get the
// same key: the new key is written aside and linked into place, which
// never replaces a key another made first, and no one reads a key half
// written.
func ReadOrMakeKey(path string) (string, error) {
	read := func() (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	}
	raw, err := read()
	if err == nil {
		return raw, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("reading the local accounts' key: %w", err)
	}
	if _, raw, err = auth.NewKey(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("keeping the local accounts' key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secret-*.key")
	if err != nil {
		return "", fmt.Errorf("keeping the local accounts' key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(raw + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil { // CreateTemp makes it 0600
		err = os.Link(tmp.Name(), path)
	}
	switch {
	case errors.Is(err, os.ErrExist):
		if raw, err = read(); err != nil {
			return "", fmt.Errorf("reading the local accounts' key: %w", err)
		}
		return raw, nil
	case err != nil:
		return "", fmt.Errorf("keeping the local accounts' key: %w", err)
	}
	return raw, nil
}
