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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seoetl/etl/internal/pgcluster"
)

// server is the serving side: the process behind `etl local serve`.
type server struct {
	l   Paths
	log *slog.Logger

	ready    chan struct{} // closed when started, or when starting failed
	startErr error         // set before ready is closed
	stopOnce sync.Once
	stopReq  chan struct{} // closed to ask for a stop
	stopped  chan struct{} // closed when everything is stopped
	wg       sync.WaitGroup

	mu       sync.Mutex
	state    State
	stopping bool
	conns    map[net.Conn]bool
}

// Serve runs the warehouse until it is asked to stop, the last lease goes
// while nothing keeps it, or ctx ends. starter is the connection of the
// command that started it (nil: started by hand, kept until `etl local
// down` or an interrupt).
func (wh Warehouse) Serve(ctx context.Context, starter net.Conn) error {
	l := wh.Paths
	w := &server{l: l, log: wh.Log, ready: make(chan struct{}), stopReq: make(chan struct{}),
		stopped: make(chan struct{}), conns: map[net.Conn]bool{}}
	w.state = State{PID: os.Getpid(), APIKey: SandboxKey, Log: l.File(LogFile), Kept: starter == nil}
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return err
	}
	// The starter's command is read first: a second process, which
	// answers "busy", must not close the connection on unread data (the
	// starter would read a reset instead of the answer).
	var first string
	if starter != nil {
		var err error
		if first, err = readCommand(starter); err != nil {
			starter.Close()
			return fmt.Errorf("reading the first command: %w", err)
		}
	}
	lock, err := w.lock(starter)
	if lock == nil {
		return err
	}
	defer lock.Close()

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
	ln, err := w.listen()
	if err != nil {
		w.fail(err)
		w.wg.Wait()
		return err
	}
	return w.run(ctx, ln)
}

// readCommand reads the command a connection sends first, waiting 10
// seconds at most.
func readCommand(conn net.Conn) (string, error) {
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(io.LimitReader(conn, 64)).ReadString('\n')
	_ = conn.SetReadDeadline(time.Time{})
	return strings.TrimSuffix(line, "\n"), err
}

// lock takes the lock of the local folder for the life of the process; it
// returns nil when another process holds it (the starter then hears
// "busy"), with an error unless that is all.
func (w *server) lock(starter net.Conn) (*os.File, error) {
	lock, err := os.OpenFile(w.l.File(LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if starter != nil {
			_, _ = io.WriteString(starter, whBusy+"\n")
			starter.Close()
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			w.log.Info("another process serves this local warehouse already", "dir", w.l.Dir)
			return nil, nil
		}
		return nil, fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	return lock, nil
}

// listen listens on the socket of the local folder, which only its owner
// may reach.
func (w *server) listen() (net.Listener, error) {
	sock := w.l.File(SockFile)
	_ = os.Remove(sock) // left by a process that died
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", sock, err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// run accepts commands on ln, starts PostgreSQL and the sandbox, and
// stops them when asked to, or when ctx ends.
func (w *server) run(ctx context.Context, ln net.Listener) error {
	sock := w.l.File(SockFile)
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
	_ = os.Remove(w.l.File(StateFile))
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
func (w *server) start(ctx context.Context) (stopAll func() error, err error) {
	po := pgcluster.PlaceOptions{AwayRoot: w.l.DataRoot}
	dataDir, err := pgcluster.Place(w.l.Dir, po)
	if err != nil {
		return nil, err
	}
	places, err := pgcluster.Places(w.l.Dir, po)
	if err != nil {
		return nil, err
	}
	opts := pgcluster.Options{Dir: dataDir, Persistent: true, Logger: w.log}
	if dataDir != places[0] {
		opts.Origin = w.l.Dir // away from it: say whose it is
	}
	w.log.Info("starting the local PostgreSQL", "data", dataDir)
	c, err := pgcluster.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	apiURL, stopSandbox, err := StartSandbox(w.log, time.Now)
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
	if err := writePrivate(w.l.File(StateFile), append(b, '\n')); err != nil {
		_ = stopAll()
		return nil, err
	}
	w.log.Info("local warehouse ready", "database_url", withoutPassword(c.URL(pgcluster.Database)), "api_url", apiURL, "data", dataDir)
	return stopAll, nil
}

// fail ends a start that failed: every command waiting hears why.
func (w *server) fail(err error) {
	w.log.Error("starting the local warehouse", "error", err)
	w.startErr = err
	close(w.ready)
	w.requestStop()
	close(w.stopped)
}

// requestStop asks for a stop; from then on every new command is answered
// "err stopping".
func (w *server) requestStop() {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.stopOnce.Do(func() { close(w.stopReq) })
}

// idleCheck asks for a stop when no command uses the warehouse and none
// asked to keep it. The decision and the refusal of new commands are one
// step, so that no command is let in to a warehouse about to stop.
func (w *server) idleCheck(why string) {
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

// accept serves each connection to ln, until ln is closed.
func (w *server) accept(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return // closed
		}
		w.wg.Add(1)
		go func() {
			cmd, err := readCommand(conn)
			if err != nil {
				conn.Close()
				w.wg.Done()
				return
			}
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
func (w *server) admit(conn net.Conn, cmd string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return errors.New(whStopping)
	}
	switch cmd {
	case Use:
		w.state.Users++
	case Up:
		w.state.Kept = true
	case Down, Status:
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	w.conns[conn] = true
	return nil
}

// serve answers an admitted command; it owns conn.
func (w *server) serve(conn net.Conn, cmd string) {
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
	case Use:
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
	case Down:
		w.mu.Lock()
		w.state.Kept = false
		w.mu.Unlock()
		w.log.Info("stopping the local warehouse", "why", "etl local down")
		w.requestStop()
		<-w.stopped
		w.answer(conn, whStopped)
	}
}

// answer writes line to conn, waiting 10 seconds at most.
func (w *server) answer(conn net.Conn, line string) {
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
