package localwh

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Warehouse is the local warehouse of a local folder, as the commands that
// use it (Dial) and the process that serves it (Serve) see it.
type Warehouse struct {
	Paths
	// Log receives what the warehouse does. Required.
	Log *slog.Logger
	// Spawn returns the command that serves the warehouse (etl local
	// serve: Serve, with the starter connection it is handed as file
	// descriptor 3), for Dial to start in the background. Dial only.
	Spawn func() (*exec.Cmd, error)
}

// Conn is a connection to the warehouse, holding a lease after "use".
type Conn struct {
	conn net.Conn
	r    *bufio.Reader
	// State is what the warehouse runs, as it answered.
	State State
}

// Dial sends cmd (Use, Up, Down, Status) to the warehouse and returns its
// state. With start, it starts the warehouse when none runs (and waits
// for it), else it fails with ErrNotRunning. The caller closes the
// connection (see Release).
func (wh Warehouse) Dial(ctx context.Context, cmd string, start bool) (*Conn, error) {
	l := wh.Paths
	sock := l.File(SockFile)
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("the local folder %s is too deep: its socket path would be longer than the %d bytes allowed; use a shorter --dir", l.Dir, maxSocketPath)
	}
	deadline := time.Now().Add(3 * time.Minute) // initdb and start-up, on a slow machine
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the local warehouse in %s did not answer in time; see %s", l.Dir, l.File(LogFile))
		}
		conn, err := net.Dial("unix", sock)
		spawned := false
		if err != nil {
			if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ECONNREFUSED) {
				return nil, fmt.Errorf("reaching the local warehouse: %w", err)
			}
			if !start {
				return nil, ErrNotRunning
			}
			if conn, err = wh.spawn(); err != nil {
				return nil, err
			}
			spawned = true
		}
		c, answer, err := exchange(ctx, conn, cmd)
		switch {
		case err == nil:
			return c, nil
		case answer == whBusy || answer == "err "+whStopping:
			// Another one is starting, or this one is stopping: wait for it.
		case answer != "":
			return nil, errors.New(strings.TrimPrefix(answer, "err "))
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case spawned:
			return nil, fmt.Errorf("the local warehouse exited while starting; %s ends:\n%s", l.File(LogFile), logTail(l.File(LogFile), 15))
		}
		pause := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			pause.Stop()
			return nil, ctx.Err()
		case <-pause.C:
		}
	}
}

// exchange sends cmd on conn and reads the first answer. On failure it
// closes conn and returns the answer read, if any.
func exchange(ctx context.Context, conn net.Conn, cmd string) (*Conn, string, error) {
	// A cancelled context unblocks the wait for the answer.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c := &Conn{conn: conn, r: bufio.NewReader(conn)}
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		conn.Close()
		return nil, "", err
	}
	answer, err := c.readLine()
	if err != nil {
		conn.Close()
		return nil, "", err
	}
	rest, ok := strings.CutPrefix(answer, "ok ")
	if !ok {
		conn.Close()
		return nil, answer, errors.New(answer)
	}
	if err := json.Unmarshal([]byte(rest), &c.State); err != nil {
		conn.Close()
		return nil, "", fmt.Errorf("the local warehouse answered %q: %w", answer, err)
	}
	return c, "", nil
}

func (c *Conn) readLine() (string, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// Release ends the lease of a "use" connection and, when that stops the
// warehouse, waits until it has stopped. It reports whether it stopped.
func (c *Conn) Release() (bool, error) {
	defer c.conn.Close()
	_ = c.conn.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := io.WriteString(c.conn, whDone+"\n"); err != nil {
		return false, fmt.Errorf("letting go of the local warehouse: %w", err)
	}
	answer, err := c.readLine()
	if err != nil {
		return false, fmt.Errorf("letting go of the local warehouse: %w", err)
	}
	if answer != whStopping {
		return false, nil
	}
	return true, c.WaitStopped()
}

// WaitStopped reads the "stopped" that ends a stop (after Down).
func (c *Conn) WaitStopped() error {
	answer, err := c.readLine()
	if err != nil {
		return fmt.Errorf("stopping the local warehouse: %w", err)
	}
	if answer != whStopped {
		return fmt.Errorf("stopping the local warehouse: %s", strings.TrimPrefix(answer, "err "))
	}
	return nil
}

// spawn starts the command of wh.Spawn (`etl local serve`) in the
// background, in a session of its own, and returns this end of its
// starter connection.
func (wh Warehouse) spawn() (net.Conn, error) {
	l := wh.Paths
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return nil, err
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("starting the local warehouse: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "warehouse"), os.NewFile(uintptr(fds[1]), "starter")
	defer theirs.Close()
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return nil, fmt.Errorf("starting the local warehouse: %w", err)
	}
	logFile, err := os.OpenFile(l.File(LogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		conn.Close()
		return nil, err
	}
	defer logFile.Close()
	cmd, err := wh.Spawn()
	if err != nil {
		conn.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = []*os.File{theirs} // fd 3
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("starting the local warehouse: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reaped here while this process lives
	wh.Log.Info("starting the local warehouse (PostgreSQL and the sandbox) in the background", "pid", cmd.Process.Pid, "log", l.File(LogFile))
	return conn, nil
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Close closes the connection; a lease it holds ends with it.
func (c *Conn) Close() error { return c.conn.Close() }
