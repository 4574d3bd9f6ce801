//go:build !linux

package pgcluster

import (
	"errors"
	"syscall"
)

// Outside Linux there is no parent-death signal and no /proc: a server whose
// owner was killed keeps running until the next Start sweeps it, and server
// processes are known only through postmaster.pid.

func setDeathSignal(*syscall.SysProcAttr, syscall.Signal) {}

// serverProcesses returns the postmaster named by dataDir/postmaster.pid if
// it runs. Orphaned backends of a killed postmaster are not found.
func serverProcesses(dataDir string) ([]int, error) {
	pid := postmasterPID(dataDir)
	if pid > 0 && processAlive(pid) {
		return []int{pid}, nil
	}
	return nil, nil
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func processStart(int) (uint64, error) { return 0, nil }
