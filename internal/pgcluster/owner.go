package pgcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrInUse is returned (wrapped) by Start when another live process owns the
// cluster in Options.Dir.
var ErrInUse = errors.New("cluster is in use by another process")

const (
	ownerFile = "owner" // in the cluster folder; flock'd by the owner
	dataName  = "data"  // PGDATA inside the cluster folder
	sockName  = "sock"  // unix_socket_directories inside the cluster folder
	logName   = "server.log"
	// originFile names what a cluster placed away from its folder belongs
	// with (Options.Origin).
	originFile = "origin"

	// unownedGrace is how old a folder under TempRoot without an owner file
	// must be before a sweep removes it. Such a folder is either being set up
	// right now (Start creates the owner file right after the folder) or left
	// by a process killed in between.
	unownedGrace = 10 * time.Minute
)

// Kinds of cluster, as the owner file records them. Sweeps remove only
// throwaway clusters.
const (
	kindThrowaway  = "throwaway"
	kindPersistent = "persistent"
)

// throwawayName matches the folder names os.MkdirTemp gives throwaway
// clusters: the owner's pid, a dash, random digits.
var throwawayName = regexp.MustCompile(`^[0-9]+-[0-9]+$`)

// createOwner writes and locks the owner file of a new throwaway cluster
// folder. The file is locked before it takes its name, so a concurrent sweep
// never sees an unlocked owner file of a live cluster.
func createOwner(dir string) (*os.File, error) {
	tmp := filepath.Join(dir, ownerFile+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating owner file: %w", err)
	}
	if err := lockOwner(f); err != nil {
		f.Close()
		return nil, err
	}
	if err := writeOwner(f, kindThrowaway); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, ownerFile)); err != nil {
		f.Close()
		return nil, fmt.Errorf("naming owner file: %w", err)
	}
	return f, nil
}

// claimOwner takes the owner file of an existing (persistent) cluster folder,
// failing with ErrInUse when a live process holds it.
func claimOwner(dir string) (*os.File, error) {
	path := filepath.Join(dir, ownerFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening owner file: %w", err)
	}
	if err := lockOwner(f); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid, _ := readOwner(path, "pid")
			return nil, fmt.Errorf("%w: %s is owned by process %s; stop it, or use another folder", ErrInUse, dir, pid)
		}
		return nil, err
	}
	if err := writeOwner(f, kindPersistent); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// lockOwner takes an exclusive flock(2) on f without waiting. The lock belongs
// to the open file (not to the process, unlike fcntl locks), so it conflicts
// within one process too, and the kernel releases it when the owner dies.
func lockOwner(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("locking owner file: %w", err)
		}
		return nil
	}
}

// writeOwner records the kind of cluster and its owner, this process, in f:
// its pid and its start time in clock ticks after boot (which tell a reused
// pid apart). The flock, not the pid, decides liveness; the pid is for
// people and error messages.
func writeOwner(f *os.File, kind string) error {
	pid := os.Getpid()
	start, err := processStart(pid)
	if err != nil {
		return fmt.Errorf("reading this process's start time: %w", err)
	}
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("writing owner file: %w", err)
	}
	content := fmt.Sprintf("kind %s\npid %d\nstart %d\n", kind, pid, start)
	if _, err := f.WriteAt([]byte(content), 0); err != nil {
		return fmt.Errorf("writing owner file: %w", err)
	}
	return nil
}

// readOwner returns the value of a line ("kind", "pid", "start") of an
// owner file, or "".
func readOwner(path, key string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			return v, nil
		}
	}
	return "", nil
}

// sweep removes the throwaway clusters under root whose owner died: it stops
// any server process still running in each and removes its folder. Clusters
// of live owners, in this process or another, and anything that is not a
// throwaway cluster are left alone.
func sweep(ctx context.Context, root string, log *slog.Logger) error {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sweeping %s: %w", root, err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if err := sweepOne(ctx, filepath.Join(root, e.Name()), log); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func sweepOne(ctx context.Context, dir string, log *slog.Logger) error {
	f, err := os.OpenFile(filepath.Join(dir, ownerFile), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if !throwawayName.MatchString(filepath.Base(dir)) {
			return nil
		}
		fi, err := os.Stat(dir)
		if err != nil || time.Since(fi.ModTime()) < unownedGrace {
			return nil
		}
		if err := stopServer(ctx, filepath.Join(dir, dataName), syscall.SIGQUIT, log); err != nil {
			return err
		}
		log.LogAttrs(ctx, slog.LevelInfo, "removing unowned cluster folder", slog.String("dir", dir))
		return removeAll(dir)
	}
	if err != nil {
		return fmt.Errorf("sweeping %s: %w", dir, err)
	}
	defer f.Close()
	if err := lockOwner(f); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil // its owner is alive
		}
		return fmt.Errorf("sweeping %s: %w", dir, err)
	}
	if kind, err := readOwner(f.Name(), "kind"); err != nil || kind != kindThrowaway {
		return err // a persistent cluster, which only its next Start recovers
	}
	pid, _ := readOwner(f.Name(), "pid")
	log.LogAttrs(ctx, slog.LevelInfo, "removing the cluster of a dead process", slog.String("dir", dir), slog.String("owner_pid", pid))
	// Immediate shutdown: the data is being thrown away.
	if err := stopServer(ctx, filepath.Join(dir, dataName), syscall.SIGQUIT, log); err != nil {
		return err
	}
	return removeAll(dir)
}

func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// postmasterPID returns the pid on the first line of dataDir/postmaster.pid,
// or 0.
func postmasterPID(dataDir string) int {
	f, err := os.Open(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s.Text()))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// stopServer stops every server process still running in dataDir, whoever
// started it: the postmaster gets sig (SIGINT: fast shutdown, SIGQUIT:
// immediate shutdown) and stops its children; backends that outlived a killed
// postmaster get SIGQUIT. What is still running after a while gets SIGKILL.
// It returns once no server process runs in dataDir.
func stopServer(ctx context.Context, dataDir string, sig syscall.Signal, log *slog.Logger) error {
	resolved, err := filepath.EvalSymlinks(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stopping the server in %s: %w", dataDir, err)
	}
	pids, err := serverProcesses(resolved)
	if err != nil || len(pids) == 0 {
		return err
	}
	log.LogAttrs(ctx, slog.LevelInfo, "stopping server processes left running",
		slog.String("data", dataDir), slog.Any("pids", pids))
	pm := postmasterPID(dataDir)
	for _, pid := range pids {
		s := syscall.SIGQUIT
		if pid == pm {
			s = sig
		}
		_ = syscall.Kill(pid, s) // it may have exited meanwhile
	}
	if gone, err := waitNoServer(ctx, resolved, 15*time.Second); gone || err != nil {
		return err
	}
	pids, _ = serverProcesses(resolved)
	log.LogAttrs(ctx, slog.LevelWarn, "server processes ignored shutdown; killing them",
		slog.String("data", dataDir), slog.Any("pids", pids))
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if gone, err := waitNoServer(ctx, resolved, 5*time.Second); gone || err != nil {
		return err
	}
	pids, _ = serverProcesses(resolved)
	return fmt.Errorf("server processes %v in %s survived SIGKILL", pids, dataDir)
}

// waitNoServer polls, with a growing pause, until no server process runs in
// dataDir (true) or timeout passes (false).
func waitNoServer(ctx context.Context, dataDir string, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	pause := 2 * time.Millisecond
	for {
		pids, err := serverProcesses(dataDir)
		if err != nil {
			return false, err
		}
		if len(pids) == 0 {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, fmt.Errorf("waiting for server processes %v to exit: %w", pids, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}
