package pgcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// helperEnv, when set, turns the test binary into a cluster owner for the
// tests that kill one: it starts a throwaway cluster as the JSON value of
// the variable says, prints the cluster folder and postmaster pid, and
// blocks until its stdin closes (or it is killed).
const helperEnv = "ETL_PGCLUSTER_TEST_OWNER"

type helperConfig struct {
	TempRoot      string
	NoDeathSignal bool
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(helperEnv); cfg != "" {
		os.Exit(ownerHelper(cfg))
	}
	goleak.VerifyTestMain(m)
}

func ownerHelper(cfg string) int {
	var hc helperConfig
	if err := json.Unmarshal([]byte(cfg), &hc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := Start(context.Background(), Options{TempRoot: hc.TempRoot, noDeathSignal: hc.NoDeathSignal})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "%s %d\n", c.Dir(), c.proc.cmd.Process.Pid)
	if err := w.Flush(); err != nil {
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
