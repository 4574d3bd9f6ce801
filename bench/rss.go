package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// The peak RSS of a process the bench starts must be the process's own.
// wait4's rusage cannot say it on Linux: exec records the peak RSS of the
// memory the process had before it (for a child of Go's os/exec, which
// starts it by vfork, the bench's own memory) as the process's, so a
// child measured after the bench itself peaked (arm HB's in-process
// backfill) reported that peak: P1 at 4N "grew" from 61 to 88 MB, and
// every child after HB, whatever its rows, said 89 MB.
//
// So each measured process is started through the bench binary in rss
// mode, a small process started for it alone: that one runs the command
// and writes what wait4 says of it (its peak RSS, which then starts from
// the small wrapper's, its CPU and wall time) to a file. The wrapper's
// own RSS (about 10 MB) is the least any measured process can show.
const rssMode = "rss"

// usage is what the rss wrapper says of the process it ran.
type usage struct {
	Seconds    float64 `json:"seconds"`     // from its start to its exit
	CPUSeconds float64 `json:"cpu_seconds"` // user and system
	PeakRSSMB  float64 `json:"peak_rss_mb"` // 0 where not known (see peakRSSMB)
}

// rssMain is the rss mode: bench rss FILE CMD [ARG...] runs CMD with this
// process's environment, standard input and outputs, writes its usage to
// FILE as JSON, and exits as CMD exited.
func rssMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(args) < 2 {
		return 2, fmt.Errorf("usage: bench %s FILE CMD [ARG...], got %q", rssMode, args)
	}
	cmd := exec.CommandContext(ctx, args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = wrappedAttr()
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return 1, err // it did not start
	}
	u := usage{Seconds: took.Seconds(), CPUSeconds: cpuSeconds(cmd.ProcessState), PeakRSSMB: peakRSSMB(cmd.ProcessState)}
	b, jerr := json.Marshal(u)
	if jerr != nil {
		return 1, jerr
	}
	if werr := os.WriteFile(args[0], b, 0o600); werr != nil {
		return 1, werr
	}
	return cmd.ProcessState.ExitCode(), nil
}

// runMeasured runs cmd (as exec.Command made it, with its Env and
// outputs) through the rss wrapper, which writes its usage into a file of
// dir, and returns that usage and cmd's error.
func runMeasured(cmd *exec.Cmd, dir string) (usage, error) {
	self, err := os.Executable()
	if err != nil {
		return usage{}, err
	}
	f, err := os.CreateTemp(dir, "usage-*.json")
	if err != nil {
		return usage{}, err
	}
	path := f.Name()
	f.Close()
	defer os.Remove(path)
	cmd.Args = append([]string{self, rssMode, path, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = self
	began := time.Now()
	runErr := cmd.Run()
	var u usage
	b, err := os.ReadFile(path)
	if err == nil && len(b) > 0 {
		err = json.Unmarshal(b, &u)
	}
	if len(b) == 0 || err != nil {
		// It did not get to write it (it failed to start the command, or
		// was stopped): the wrapper's own time.
		u = usage{Seconds: time.Since(began).Seconds(), CPUSeconds: cpuSeconds(cmd.ProcessState)}
		if runErr == nil {
			runErr = fmt.Errorf("reading the usage of %s: %w", cmd.Args[3], errors.Join(err, errors.New("no usage written")))
		}
	}
	return u, runErr
}
