//go:build unix

package runs

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// holderDead reports whether holder (a hostID, "host:pid") names a process
// of this host that no longer exists: its lock connection's backend may
// outlive it for a moment (the server has not yet seen the socket close),
// and a run started right after a crash must not be refused for that.
func holderDead(holder string) bool {
	host, pidText, ok := strings.Cut(holder, ":")
	if !ok {
		return false
	}
	me, err := os.Hostname()
	if err != nil || host != me {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
