package main

// The local warehouse: the local PostgreSQL cluster and a sandbox, owned by
// one background process per local folder (--dir, default .etl) that every
// `etl local` command shares.
//
// The process (`etl local serve`, started by the first command that needs
// it) answers on the Unix socket local.sock in the local folder, one command
// per connection, one line each way:
//
//	use     a lease: the warehouse runs at least until this connection
//	        sends "done" or closes (etl local run, etl local psql)
//	up      keep it running until "down" (etl local up)
//	down    stop it now (etl local down)
//	status  what runs (etl local env)
//
// Every answer starts with "ok STATE-JSON" or "err MESSAGE"; "use" later
// answers "done" with "staying", or with "stopping" and then "stopped" once
// the last lease went and nothing keeps the warehouse up; "down" answers
// "stopped" once everything is stopped. So a command that found nothing
// running starts the warehouse, uses it, and stops it when it ends, unless
// another command uses it meanwhile or `etl local up` asked to keep it; a
// command that found it running never stops it. A lease is a connection, so
// a command that dies lets go of it too.
//
// The process holds an exclusive flock(2) on local.lock for its life (a
// second one started at the same moment answers "busy" and exits), writes
// what it runs to local.json, and logs to local.log. It is started in a
// session of its own, so a Ctrl-C in the terminal does not reach it, with
// the first command's connection as file descriptor 3 (--starter-fd): the
// lease of that command exists from the start.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seoetl/etl/internal/pgcluster"
)

// Files of the local folder.
const (
	localSock  = "local.sock"
	localLock  = "local.lock"
	localState = "local.json"
	localLog   = "local.log"
)

// Commands and answers of the warehouse protocol.
const (
	whUse      = "use"
	whUp       = "up"
	whDown     = "down"
	whStatus   = "status"
	whDone     = "done"
	whBusy     = "busy"
	whStaying  = "staying"
	whStopping = "stopping"
	whStopped  = "stopped"
)

// maxSocketPath is the longest Unix socket path (sun_path holds 108 bytes
// with the terminating NUL).
const maxSocketPath = 107

// whState is what the warehouse runs, as it answers and as local.json holds
// it.
type whState struct {
	PID         int       `json:"pid"`
	Started     time.Time `json:"started"`
	DatabaseURL string    `json:"database_url"`
	APIURL      string    `json:"api_url"`
	APIKey      string    `json:"api_key"`
	// DataDir is the cluster folder (pgcluster.Place): the local folder's
	// pg, or a folder under --data-root.
	DataDir string `json:"data_dir"`
	Log     string `json:"log"`
	// Kept is set by `etl local up`: it runs until `etl local down`.
	Kept bool `json:"kept"`
	// Users counts the commands using it now (etl local run, psql).
	Users int `json:"users"`
}

// localPaths are the local folder and where its cluster goes.
type localPaths struct {
	dir      string // the local folder (--dir), absolute
	dataRoot string // --data-root (pgcluster.PlaceOptions.AwayRoot)
}

func (l localPaths) file(name string) string { return filepath.Join(l.dir, name) }

// errNotRunning is returned (wrapped) by dialWarehouse when nothing runs and
// it was not asked to start anything.
var errNotRunning = errors.New("the local warehouse is not running")

// whConn is a connection to the warehouse, holding a lease after "use".
type whConn struct {
	conn  net.Conn
	r     *bufio.Reader
	state whState
}

// dialWarehouse sends cmd to the warehouse of l and returns its state. With
// start, it starts the warehouse when none runs (and waits for it), else it
// fails with errNotRunning. The caller closes the connection (see release).
func (e *env) dialWarehouse(ctx context.Context, l localPaths, cmd string, start bool) (*whConn, error) {
	sock := l.file(localSock)
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("the local folder %s is too deep: its socket path would be longer than the %d bytes allowed; use a shorter --dir", l.dir, maxSocketPath)
	}
	deadline := time.Now().Add(3 * time.Minute) // initdb and start-up, on a slow machine
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the local warehouse in %s did not answer in time; see %s", l.dir, l.file(localLog))
		}
		conn, err := net.Dial("unix", sock)
		spawned := false
		if err != nil {
			if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ECONNREFUSED) {
				return nil, fmt.Errorf("reaching the local warehouse: %w", err)
			}
			if !start {
				return nil, errNotRunning
			}
			if conn, err = e.spawnWarehouse(l); err != nil {
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
			return nil, fmt.Errorf("the local warehouse exited while starting; %s ends:\n%s", l.file(localLog), logTail(l.file(localLog), 15))
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
func exchange(ctx context.Context, conn net.Conn, cmd string) (*whConn, string, error) {
	// A cancelled context unblocks the wait for the answer.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c := &whConn{conn: conn, r: bufio.NewReader(conn)}
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
	if err := json.Unmarshal([]byte(rest), &c.state); err != nil {
		conn.Close()
		return nil, "", fmt.Errorf("the local warehouse answered %q: %w", answer, err)
	}
	return c, "", nil
}

func (c *whConn) readLine() (string, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// release ends the lease of a "use" connection and, when that stops the
// warehouse, waits until it has stopped. It reports whether it stopped.
func (c *whConn) release() (bool, error) {
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
	return true, c.waitStopped()
}

// waitStopped reads the "stopped" that ends a stop.
func (c *whConn) waitStopped() error {
	answer, err := c.readLine()
	if err != nil {
		return fmt.Errorf("stopping the local warehouse: %w", err)
	}
	if answer != whStopped {
		return fmt.Errorf("stopping the local warehouse: %s", strings.TrimPrefix(answer, "err "))
	}
	return nil
}

// selfCommand returns the command that runs this program with args (tests
// replace it: their executable is the test binary).
var selfCommand = func(args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to start the local warehouse: %w", err)
	}
	return exec.Command(exe, args...), nil
}

// spawnWarehouse starts `etl local serve` in the background, in a session
// of its own, and returns this end of its starter connection.
func (e *env) spawnWarehouse(l localPaths) (net.Conn, error) {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
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
	logFile, err := os.OpenFile(l.file(localLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		conn.Close()
		return nil, err
	}
	defer logFile.Close()
	cmd, err := selfCommand("--log-format", "text", "local", "--dir", l.dir, "--data-root", l.dataRoot, "serve", "--starter-fd", "3")
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
	e.log.Info("starting the local warehouse (PostgreSQL and the sandbox) in the background", "pid", cmd.Process.Pid, "log", l.file(localLog))
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

// warehouse is the serving side: the process behind `etl local serve`.
type warehouse struct {
	e   *env
	l   localPaths
	log *slog.Logger

	ready    chan struct{} // closed when started, or when starting failed
	startErr error         // set before ready is closed
	stopOnce sync.Once
	stopReq  chan struct{} // closed to ask for a stop
	stopped  chan struct{} // closed when everything is stopped
	wg       sync.WaitGroup

	mu       sync.Mutex
	state    whState
	stopping bool
	conns    map[net.Conn]bool
}

// serveWarehouse runs the warehouse of l until it is asked to stop, the
// last lease goes while nothing keeps it, or ctx ends. starter is the
// connection of the command that started it (nil: started by hand, kept
// until `etl local down` or an interrupt).
func (e *env) serveWarehouse(ctx context.Context, l localPaths, starter net.Conn) error {
	w := &warehouse{e: e, l: l, log: e.log, ready: make(chan struct{}), stopReq: make(chan struct{}),
		stopped: make(chan struct{}), conns: map[net.Conn]bool{}}
	w.state = whState{PID: os.Getpid(), APIKey: sandboxKey, Log: l.file(localLog), Kept: starter == nil}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return err
	}
	// The starter's command is read first: a second process, which
	// answers "busy", must not close the connection on unread data (the
	// starter would read a reset instead of the answer).
	var first string
	if starter != nil {
		_ = starter.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(io.LimitReader(starter, 64)).ReadString('\n')
		_ = starter.SetReadDeadline(time.Time{})
		if err != nil {
			starter.Close()
			return fmt.Errorf("reading the first command: %w", err)
		}
		first = strings.TrimSuffix(line, "\n")
	}
	lock, err := os.OpenFile(l.file(localLock), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if starter != nil {
			_, _ = io.WriteString(starter, whBusy+"\n")
			starter.Close()
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			w.log.Info("another process serves this local warehouse already", "dir", l.dir)
			return nil
		}
		return fmt.Errorf("locking %s: %w", lock.Name(), err)
	}

	// The starter's command counts before anything else can happen.
	if starter != nil {
		if err := w.admit(starter, first); err != nil {
			w.answer(starter, "err "+err.Error())
			starter.Close()
			return err
		}
		w.wg.Add(1)
		go w.serve(starter, first)
	}

	sock := l.file(localSock)
	_ = os.Remove(sock) // left by a process that died
	ln, err := net.Listen("unix", sock)
	if err != nil {
		err = fmt.Errorf("listening on %s: %w", sock, err)
		w.fail(err)
		w.wg.Wait()
		return err
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		w.fail(err)
		w.wg.Wait()
		return err
	}
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		w.accept(ln)
	}()

	stopAll, err := w.start(ctx)
	if err != nil {
		ln.Close()
		_ = os.Remove(sock)
		<-acceptDone
		w.fail(err)
		w.wg.Wait()
		return err
	}
	close(w.ready)
	w.idleCheck("no command uses it")

	select {
	case <-w.stopReq:
	case <-ctx.Done():
		w.log.Info("interrupted", "signal", context.Cause(ctx))
	}
	w.requestStop() // after an interrupt
	ln.Close()
	_ = os.Remove(sock)
	<-acceptDone
	err = stopAll()
	_ = os.Remove(l.file(localState))
	close(w.stopped)
	w.log.Info("local warehouse stopped", "data", w.state.DataDir)
	// Leases still held end with the warehouse.
	w.mu.Lock()
	for c := range w.conns {
		_ = c.SetReadDeadline(time.Now())
	}
	w.mu.Unlock()
	w.wg.Wait()
	return err
}

// start starts PostgreSQL and the sandbox and writes local.json; stopAll
// stops both.
func (w *warehouse) start(ctx context.Context) (stopAll func() error, err error) {
	po := pgcluster.PlaceOptions{AwayRoot: w.l.dataRoot}
	dataDir, err := pgcluster.Place(w.l.dir, po)
	if err != nil {
		return nil, err
	}
	places, err := pgcluster.Places(w.l.dir, po)
	if err != nil {
		return nil, err
	}
	opts := pgcluster.Options{Dir: dataDir, Persistent: true, Logger: w.log}
	if dataDir != places[0] {
		opts.Origin = w.l.dir // away from it: say whose it is
	}
	w.log.Info("starting the local PostgreSQL", "data", dataDir)
	c, err := pgcluster.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	apiURL, stopSandbox, err := w.e.startSandbox(time.Now)
	if err != nil {
		_ = c.Stop()
		return nil, err
	}
	stopAll = func() error {
		stopSandbox()
		return c.Stop()
	}
	w.mu.Lock()
	w.state.Started = time.Now().UTC()
	w.state.DatabaseURL = c.URL(pgcluster.Database)
	w.state.APIURL = apiURL
	w.state.DataDir = dataDir
	b, _ := json.MarshalIndent(w.state, "", "  ")
	w.mu.Unlock()
	// 0600: it holds the database's password (pgcluster's secure).
	if err := writePrivate(w.l.file(localState), append(b, '\n')); err != nil {
		_ = stopAll()
		return nil, err
	}
	w.log.Info("local warehouse ready", "database_url", withoutPassword(c.URL(pgcluster.Database)), "api_url", apiURL, "data", dataDir)
	return stopAll, nil
}

// fail ends a start that failed: every command waiting hears why.
func (w *warehouse) fail(err error) {
	w.log.Error("starting the local warehouse", "error", err)
	w.startErr = err
	close(w.ready)
	w.requestStop()
	close(w.stopped)
}

// requestStop asks for a stop; from then on every new command is answered
// "err stopping".
func (w *warehouse) requestStop() {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.stopOnce.Do(func() { close(w.stopReq) })
}

// idleCheck asks for a stop when no command uses the warehouse and none
// asked to keep it. The decision and the refusal of new commands are one
// step, so that no command is let in to a warehouse about to stop.
func (w *warehouse) idleCheck(why string) {
	w.mu.Lock()
	idle := w.state.Users == 0 && !w.state.Kept && !w.stopping
	if idle {
		w.stopping = true
	}
	w.mu.Unlock()
	if idle {
		w.log.Info("stopping the local warehouse", "why", why)
		w.stopOnce.Do(func() { close(w.stopReq) })
	}
}

func (w *warehouse) accept(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return // closed
		}
		w.wg.Add(1)
		go func() {
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			line, err := bufio.NewReader(io.LimitReader(conn, 64)).ReadString('\n')
			_ = conn.SetReadDeadline(time.Time{})
			if err != nil {
				conn.Close()
				w.wg.Done()
				return
			}
			cmd := strings.TrimSuffix(line, "\n")
			if err := w.admit(conn, cmd); err != nil {
				w.answer(conn, "err "+err.Error())
				conn.Close()
				w.wg.Done()
				return
			}
			w.serve(conn, cmd)
		}()
	}
}

// admit takes cmd's effect at once: a lease counts, and "up" keeps the
// warehouse, before any idle check can stop it.
func (w *warehouse) admit(conn net.Conn, cmd string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return errors.New(whStopping)
	}
	switch cmd {
	case whUse:
		w.state.Users++
	case whUp:
		w.state.Kept = true
	case whDown, whStatus:
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	w.conns[conn] = true
	return nil
}

// serve answers an admitted command; it owns conn.
func (w *warehouse) serve(conn net.Conn, cmd string) {
	defer w.wg.Done()
	defer func() {
		w.mu.Lock()
		delete(w.conns, conn)
		w.mu.Unlock()
		conn.Close()
	}()
	<-w.ready
	if w.startErr != nil {
		w.answer(conn, "err "+w.startErr.Error())
		return
	}
	w.mu.Lock()
	b, _ := json.Marshal(w.state)
	w.mu.Unlock()
	w.answer(conn, "ok "+string(b))
	switch cmd {
	case whUse:
		line, err := bufio.NewReader(io.LimitReader(conn, 64)).ReadString('\n')
		w.mu.Lock()
		w.state.Users--
		w.mu.Unlock()
		w.idleCheck("the last command using it ended")
		if err != nil || strings.TrimSuffix(line, "\n") != whDone {
			return // gone without a word: nobody to answer
		}
		select {
		case <-w.stopReq:
			w.answer(conn, whStopping)
			<-w.stopped
			w.answer(conn, whStopped)
		default:
			w.answer(conn, whStaying)
		}
	case whDown:
		w.mu.Lock()
		w.state.Kept = false
		w.mu.Unlock()
		w.log.Info("stopping the local warehouse", "why", "etl local down")
		w.requestStop()
		<-w.stopped
		w.answer(conn, whStopped)
	}
}

func (w *warehouse) answer(conn net.Conn, line string) {
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(conn, line+"\n")
}

// writePrivate writes a file only its owner may read, also when it exists
// already with a wider mode.
func writePrivate(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

// withoutPassword is a connection URL as logs may show it.
func withoutPassword(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "(a database URL)"
	}
	return u.Redacted()
}

// splitPassword returns dbURL without its password, and the password.
func splitPassword(dbURL string) (string, string) {
	u, err := url.Parse(dbURL)
	if err != nil || u.User == nil {
		return dbURL, ""
	}
	pw, ok := u.User.Password()
	if !ok {
		return dbURL, ""
	}
	u.User = url.User(u.User.Username())
	return u.String(), pw
}
