//go:build !linux

package main

import (
	"os"
	"syscall"
)

// peakRSSMB is 0 where rusage's Maxrss is not known to be in KiB: the bench
// reports memory on Linux only.
func peakRSSMB(*os.ProcessState) float64 { return 0 }

func wrappedAttr() *syscall.SysProcAttr { return nil }
