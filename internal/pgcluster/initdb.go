package pgcluster

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// initdbArgs are initdb's arguments besides --pgdata.
var initdbArgs = []string{
	"--username", Superuser,
	"--auth", "trust",
	"--encoding", "UTF8",
	"--locale", "C.UTF-8",
	"--no-sync",
	"--no-instructions",
}

// initdb creates the data folder in a scratch folder renamed into place at
// the end, so that an interrupted initdb never leaves a half-made data
// folder. (Copying a cached initdb result instead was measured here: it
// costs about as much system time as initdb --no-sync, which is mostly
// writing the same 40 MB of files, so there is no cache.)
func (c *Cluster) initdb(ctx context.Context) error {
	scratch := c.dataDir + ".initdb"
	if err := os.RemoveAll(scratch); err != nil {
		return err
	}
	began := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(c.opts.BinDir, "initdb"), append([]string{"--pgdata", scratch}, initdbArgs...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = c.dir
	cmd.Env = serverEnv()
	cmd.SysProcAttr = c.sysProcAttr(syscall.SIGKILL)
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	// The parent-death signal follows the starting thread: keep it ours
	// until initdb is done.
	runtime.LockOSThread()
	err := cmd.Run()
	runtime.UnlockOSThread()
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("initdb: %w\n%s", err, tail(out.Bytes(), 20))
	}
	if err := os.Rename(scratch, c.dataDir); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	c.log.LogAttrs(ctx, slog.LevelInfo, "initdb done", slog.String("data", c.dataDir), slog.Duration("took", time.Since(began)))
	return nil
}
