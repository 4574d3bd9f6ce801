//go:build linux

package main

import (
	"os"
	"syscall"
)

// peakRSSMB is the peak resident set size of an exited child, in MB, from
// wait4's rusage (Maxrss is in KiB on Linux). On Linux that peak includes
// the memory of the process that started the child, up to its exec: see
// rssMode.
func peakRSSMB(ps *os.ProcessState) float64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return float64(ru.Maxrss) * 1024 / 1e6
}

// wrappedAttr makes the command the rss wrapper runs die with it (the
// bench kills the wrapper when it stops).
func wrappedAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
