package pgcluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// setDeathSignal makes the kernel send sig to the child when the thread that
// started it dies. Callers lock the OS thread for the child's lifetime (see
// startProcess), since Go may otherwise retire that thread while the child
// runs.
func setDeathSignal(attr *syscall.SysProcAttr, sig syscall.Signal) {
	attr.Pdeathsig = sig
}

// serverProcesses returns the live (not zombie) postgres processes whose
// working folder is dataDir, a path with symlinks resolved. The postmaster
// changes into its data folder at start and every server process it forks
// inherits that, so this finds the postmaster and any backend that outlived
// it, and nothing else: processes of other programs are skipped by their
// executable's name. Processes this user may not inspect are skipped.
func serverProcesses(dataDir string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		if cwd, err := os.Readlink(filepath.Join(dir, "cwd")); err != nil || cwd != dataDir {
			continue
		}
		if exe, err := os.Readlink(filepath.Join(dir, "exe")); err != nil || !isServerExecutable(exe) {
			continue
		}
		if processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// isServerExecutable reports whether exe, as /proc/PID/exe shows it, is a
// postgres binary. The kernel appends " (deleted)" when the binary was
// replaced, as a package upgrade does under a running server.
func isServerExecutable(exe string) bool {
	base := filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	return base == "postgres" || base == "postmaster"
}

// processAlive reports whether pid is a running process. A zombie (exited,
// not yet reaped by its parent) counts as gone: it holds no resources but a
// pid, and here PID 1 may never reap orphans.
func processAlive(pid int) bool {
	state, _, err := procStat(pid)
	return err == nil && state != "Z" && state != "X" && state != "x"
}

// processStart returns pid's start time in clock ticks after boot, which
// together with the pid names a process for good (pids are reused).
func processStart(pid int) (uint64, error) {
	_, start, err := procStat(pid)
	return start, err
}

// procStat reads the state (field 3) and start time (field 22) of
// /proc/PID/stat. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from the last ')'.
func procStat(pid int) (state string, start uint64, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return "", 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want at least 20", pid, len(fields))
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return fields[0], start, nil
}
