//go:build linux

package main

import (
	"os"
	"syscall"
)

// peakRSSMB is the peak resident set size of an exited child, in MB, from
// wait4's rusage (Maxrss is in KiB on Linux).
func peakRSSMB(ps *os.ProcessState) float64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return float64(ru.Maxrss) * 1024 / 1e6
}
