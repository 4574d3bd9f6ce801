package pgcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// DefaultAwayRoot is where Place puts a persistent cluster whose own folder
// the server's OS user cannot reach. /var/lib because the data must last
// (/tmp is emptied at boot, and /var/tmp may be aged out by tmpfiles.d),
// and only root ever needs it: other users run the server as themselves.
const DefaultAwayRoot = "/var/lib/etl/local"

// PlaceOptions configures Place and Places.
type PlaceOptions struct {
	// OSUser is the server's OS user when this process is root, as in
	// Options. Default: "postgres".
	OSUser string

	// AwayRoot is the parent of the clusters placed away from their folder,
	// each in a folder of its own named after that folder. Default:
	// DefaultAwayRoot.
	AwayRoot string
}

func (o PlaceOptions) withDefaults() (PlaceOptions, error) {
	if o.OSUser == "" {
		o.OSUser = "postgres"
	}
	if o.AwayRoot == "" {
		o.AwayRoot = DefaultAwayRoot
	}
	root, err := filepath.Abs(o.AwayRoot)
	o.AwayRoot = root
	return o, err
}

// Place returns the folder (Options.Dir) of the persistent cluster that
// belongs with folder dir, such as a checkout's .etl:
//
//   - dir/pg when it holds the cluster already;
//   - else the folder away from dir (see Places) when that holds it;
//   - else dir/pg when the server can reach it: always when this process is
//     not root, since the server then runs as this process's user;
//   - else (root, with dir inside a folder the server's OS user cannot
//     enter, such as /root or a mktemp -d folder) the folder away from dir.
//
// A cluster stays where it was first made, whatever happens to the folders
// above dir later. Place creates nothing; Start creates the folder it
// returns, owned by the server's user, mode 0700.
func Place(dir string, opts PlaceOptions) (string, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return "", fmt.Errorf("pgcluster: %w", err)
	}
	home, away, err := places(dir, o)
	if err != nil {
		return "", err
	}
	for _, p := range []string{home, away} {
		if holdsCluster(p) {
			return p, nil
		}
	}
	acct, err := serverAccount(o.OSUser)
	if err != nil {
		return "", fmt.Errorf("pgcluster: %w", err)
	}
	if err := acct.checkReachable(home); err == nil {
		return home, nil
	} else if !errors.Is(err, errUnreachable) {
		return "", fmt.Errorf("pgcluster: %w", err)
	}
	return away, nil
}

// Places returns every folder Place may choose for dir: dir/pg, and the
// folder away from dir under AwayRoot, named after dir's parent folder and a
// hash of dir's absolute path with symbolic links resolved (so that every
// checkout has its own, and the same one on each call).
func Places(dir string, opts PlaceOptions) ([]string, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	home, away, err := places(dir, o)
	if err != nil {
		return nil, err
	}
	return []string{home, away}, nil
}

func places(dir string, o PlaceOptions) (home, away string, err error) {
	if dir == "" {
		return "", "", errors.New("pgcluster: no folder to place the cluster for")
	}
	abs, err := resolve(dir)
	if err != nil {
		return "", "", fmt.Errorf("pgcluster: %w", err)
	}
	sum := sha256.Sum256([]byte(abs))
	name := unsafeName.ReplaceAllString(filepath.Base(filepath.Dir(abs)), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	if name == "" || name == "." || name == ".." || name == "/" || name == "_" {
		name = "root"
	}
	return filepath.Join(abs, "pg"), filepath.Join(o.AwayRoot, name+"-"+hex.EncodeToString(sum[:6])), nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// resolve returns path made absolute, with the symbolic links of the part
// that exists resolved: the same folder gives the same answer before and
// after it is created.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var rest []string
	for p := abs; ; p = filepath.Dir(p) {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || p == filepath.Dir(p) {
			return "", err
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}

// holdsCluster reports whether dir is a cluster folder initdb has filled.
func holdsCluster(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, dataName, "PG_VERSION"))
	return err == nil
}

// clusterEntries are the names a cluster folder may hold.
var clusterEntries = map[string]bool{
	ownerFile: true, ownerFile + ".new": true, dataName: true, dataName + ".initdb": true,
	sockName: true, logName: true, logName + ".1": true, originFile: true, passwordName: true,
}

// Remove deletes the persistent cluster folder dir and its data, after
// stopping a server a dead owner left running in it. It fails with ErrInUse
// when a live process owns the cluster, and refuses a folder holding
// anything a cluster folder does not (so that a wrong path never deletes
// someone's files). A missing dir is not an error.
func Remove(ctx context.Context, dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgcluster: removing %s: %w", dir, err)
	}
	var foreign []string
	for _, e := range entries {
		if !clusterEntries[e.Name()] {
			foreign = append(foreign, e.Name())
		}
	}
	if len(foreign) > 0 {
		return fmt.Errorf("pgcluster: %s holds %s, which no cluster folder holds; remove it by hand if it is yours", dir, strings.Join(foreign, ", "))
	}
	owner, err := claimOwner(dir)
	if err != nil {
		return fmt.Errorf("pgcluster: removing %s: %w", dir, err)
	}
	defer owner.Close()
	if err := stopServer(ctx, filepath.Join(dir, dataName), syscall.SIGINT, slog.New(slog.DiscardHandler)); err != nil {
		return fmt.Errorf("pgcluster: removing %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}
