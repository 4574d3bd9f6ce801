//go:build linux

package main

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/internal/vt"
	"github.com/seoetl/etl/sandbox"
)

// openPTY opens a pseudo-terminal of cols x rows: the master, which the
// test reads the screen from and types into, and the slave, which the
// process under test gets as its terminal.
func openPTY(t *testing.T, cols, rows int) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	ioctl := func(f *os.File, req uintptr, arg unsafe.Pointer) {
		t.Helper()
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); errno != 0 {
			t.Fatalf("ioctl %#x: %v", req, errno)
		}
	}
	var unlock int32
	ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock))
	var n uint32
	ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n))
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	size := struct{ rows, cols, x, y uint16 }{uint16(rows), uint16(cols), 0, 0}
	ioctl(slave, syscall.TIOCSWINSZ, unsafe.Pointer(&size))
	t.Cleanup(func() { master.Close(); slave.Close() })
	return master, slave
}

// terminalRun is `etl ARGS` run by a person at a terminal of cols x rows:
// the terminal is its stdin, stdout and stderr and its controlling
// terminal, so that typing Ctrl-C (ctrlC) interrupts it as it would a
// person's.
type terminalRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	screen *vt.Terminal
	read   chan struct{} // closed when the terminal has nothing more to read
}

func startAtTerminal(t *testing.T, bin string, cols, rows int, env map[string]string, args ...string) *terminalRun {
	t.Helper()
	master, slave := openPTY(t, cols, rows)
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TERM=xterm"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Start())
	require.NoError(t, slave.Close()) // the process holds it now: the master reads EIO once it exits
	r := &terminalRun{t: t, cmd: cmd, master: master, screen: vt.New(t, cols, rows), read: make(chan struct{})}
	go func() {
		defer close(r.read)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			_, _ = r.screen.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return r
}

// waitFor waits up to within until the screen shows a line matching re.
func (r *terminalRun) waitFor(re string, within time.Duration) {
	r.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, l := range r.screen.Screen() {
			if rx.MatchString(l) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatalf("the screen never showed %q; it shows:\n%s", re, strings.Join(r.screen.Screen(), "\n"))
}

// ctrlC types Ctrl-C: the terminal sends SIGINT to the process and echoes
// ^C.
func (r *terminalRun) ctrlC() {
	r.t.Helper()
	_, err := r.master.Write([]byte{3})
	require.NoError(r.t, err)
}

// wait waits for the process to end and for its last output, and returns
// its exit status and everything the terminal shows and scrolled off.
func (r *terminalRun) wait() (int, []string) {
	r.t.Helper()
	err := r.cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(r.t, err)
	}
	select {
	case <-r.read:
	case <-time.After(10 * time.Second):
		r.t.Fatal("the terminal was not closed after the process ended")
	}
	return r.cmd.ProcessState.ExitCode(), r.screen.All()
}

// interruptSpec is a job whose pages come slowly (the sandbox delays every
// answer), so that it is in flight when interrupted.
const interruptSpec = `jobs:
  - name: slow
    targets: [{url: n700.example, scope: ROOT_DOMAIN}]
    endpoints: {links: {limit: 50}, ref-domains: {limit: 50}}
    keywords: {keywords: [seo, backlinks], countries: [US]}
`

// taskLine matches a task line of the live display.
var taskLine = regexp.MustCompile(`^  (links|ref-domains|keywords) .*\d+(/\d+)? rows`)

// TestCtrlCAtATerminal: a person runs etl run at a terminal and presses
// Ctrl-C once, or twice. The screen keeps what each interrupt said, no line
// of the live display is left behind (no task line, no stale overall
// line), and the line the display leaves says how the run ended.
func TestCtrlCAtATerminal(t *testing.T) {
	t.Parallel()
	bin := etlBinary(t)
	for _, tc := range []struct {
		name  string
		twice bool
	}{{"once", false}, {"twice", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return cliNow }, APIKeys: []string{"k"},
				Faults: sandbox.Faults{Slow: 1}, SlowDelay: 700 * time.Millisecond})
			require.NoError(t, err)
			srv := httptest.NewServer(sb.Handler())
			t.Cleanup(srv.Close)
			env := map[string]string{"DATABASE_URL": pgtest.NewDB(t), "ETL_API_URL": srv.URL, "ETL_API_KEY": "k"}

			r := startAtTerminal(t, bin, 120, 30, env, "run", "--jobs", writeSpec(t, interruptSpec), "--concurrency", "2",
				"--now", cliNow.Format(time.RFC3339))
			r.waitFor(`^  links n700\.example \(ROOT_DOMAIN\) .* [1-9]\d* pages? `, time.Minute)
			r.ctrlC()
			r.waitFor(`^etl: interrupt: finishing the work in flight`, 10*time.Second)
			if tc.twice {
				r.ctrlC()
			}
			code, lines := r.wait()
			text := strings.Join(lines, "\n")
			t.Logf("the terminal shows:\n%s", text)

			require.Equal(t, 1, strings.Count(text, "etl: interrupt: finishing the work in flight (again to stop at once)"))
			for _, l := range lines {
				require.False(t, taskLine.MatchString(l), "a task line was left on the screen: %q", l)
				require.NotRegexp(t, `^run \d+: `, l, "a live overall line was left on the screen")
				require.NotRegexp(t, `^run \d+ stopping: `, l, "a live overall line was left on the screen")
			}
			var ends []string
			for _, l := range lines {
				if strings.HasPrefix(l, "run ") {
					ends = append(ends, l)
				}
			}
			if tc.twice {
				require.Equal(t, exitInterrupted, code)
				require.Contains(t, text, "etl: interrupt: stopping at once (pages in flight did not commit; the next run fetches them again)")
				require.Len(t, ends, 1, "one last line")
				require.Regexp(t, `^run 1 stopped at once: [0-4]/4 tasks done, [1-4] not finished, \d+ rows, \d+ units committed, elapsed \d+s$`, ends[0])
				return
			}
			require.Equal(t, exitPartial, code)
			require.Len(t, ends, 2, "the display's last line, and the summary's")
			require.Regexp(t, `^run 1 interrupted: [0-3]/4 tasks done, [1-4] not finished, \d+ rows, \d+ units, `, ends[0])
			require.Regexp(t, "^run 1 interrupted, [1-4] tasks not finished; the next `etl run` of job slow resumes it$", ends[1])
			require.Regexp(t, `(?m)^job slow: 4 tasks, [1-9]\d* rows`, text, "the summary follows")
		})
	}
}
