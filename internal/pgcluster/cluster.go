package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Superuser is the role initdb creates; every URL connects as it.
const Superuser = "etl"

// Database is the database Start creates in a persistent cluster, so that
// `etl local` has somewhere to put the warehouse.
const Database = "etl"

// maxSocketPath is the longest Unix socket path (sun_path holds 108 bytes
// with the terminating NUL).
const maxSocketPath = 107

// Options configures Start.
type Options struct {
	// Dir is the folder of a persistent cluster, created on first use and
	// kept by Stop. Required when Persistent; must be empty otherwise, since
	// a throwaway cluster always gets a fresh folder under TempRoot (so that
	// a later Start can sweep it, and Stop never removes a folder it did not
	// make).
	Dir string

	// Origin, for a persistent cluster, is what the cluster belongs with
	// when that is not plain from Dir (a cluster Place put away from its
	// folder): Start writes it to the file "origin" in Dir, for a person who
	// finds the folder and wonders whose it is. Default: none.
	Origin string

	// Persistent keeps the cluster folder, with its data, after Stop, and
	// keeps the server's durability settings (fsync and friends) on. The
	// default is a throwaway cluster: durability off, folder removed by
	// Stop.
	Persistent bool

	// TempRoot is the parent folder of throwaway clusters, swept by every
	// Start. Default: $TMPDIR/etl-pgcluster-<uid>.
	TempRoot string

	// BinDir is the folder of initdb and postgres. Default: Binaries().
	BinDir string

	// OSUser is the operating-system user the server runs as when this
	// process is root (PostgreSQL refuses to run as root). Ignored when not
	// root, where the server runs as this process's user. Default: "postgres".
	OSUser string

	// Settings are extra server settings (postgres -c name=value), applied
	// over the defaults. Start always sets port, listen_addresses and
	// unix_socket_directories itself. Default: none.
	Settings map[string]string

	// StartTimeout bounds initdb, start-up and the wait for the first
	// accepted connection, on top of the context. Default: 60s.
	StartTimeout time.Duration

	// StopTimeout is how long Stop waits for a fast shutdown before an
	// immediate one. Default: 30s.
	StopTimeout time.Duration

	// Logger receives the cluster's life events (not the server log, which
	// is in the cluster folder as server.log). Default: discard.
	Logger *slog.Logger

	// noDeathSignal starts the server without a parent-death signal, so that
	// tests can leave a running orphan behind for a sweep.
	noDeathSignal bool

	// primary, when set (StartStandby), makes the data folder a base
	// backup of it rather than a new cluster.
	primary *Cluster
}

// withDefaults fills the defaults in one place and validates.
func (o Options) withDefaults() (Options, error) {
	if o.Persistent && o.Dir == "" {
		return o, errors.New("Dir is required for a persistent cluster")
	}
	if !o.Persistent && o.Origin != "" {
		return o, fmt.Errorf("a throwaway cluster takes no Origin (got %q); it is for a persistent one", o.Origin)
	}
	if !o.Persistent && o.Dir != "" {
		return o, fmt.Errorf("Dir is only for a persistent cluster (got %q); a throwaway cluster gets a fresh folder under TempRoot", o.Dir)
	}
	if o.TempRoot == "" {
		o.TempRoot = filepath.Join(os.TempDir(), fmt.Sprintf("etl-pgcluster-%d", os.Geteuid()))
	}
	if o.BinDir == "" {
		dir, err := Binaries()
		if err != nil {
			return o, err
		}
		o.BinDir = dir
	} else if !hasServer(o.BinDir) {
		return o, fmt.Errorf("BinDir %s: %w there", o.BinDir, ErrNoBinaries)
	}
	if o.OSUser == "" {
		o.OSUser = "postgres"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 30 * time.Second
	}
	if o.StartTimeout < 0 || o.StopTimeout < 0 {
		return o, fmt.Errorf("timeouts must not be negative, got StartTimeout %v and StopTimeout %v", o.StartTimeout, o.StopTimeout)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var err error
	for _, p := range []*string{&o.Dir, &o.TempRoot, &o.BinDir} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return o, err
			}
		}
	}
	return o, nil
}

// Cluster is a running PostgreSQL cluster. Its methods are safe for
// concurrent use.
type Cluster struct {
	opts Options
	log  *slog.Logger
	acct *account // nil when the server runs as this process's user

	dir     string // cluster folder
	dataDir string
	port    int
	// password is a persistent cluster's (see secure); "" for a
	// throwaway one, which trusts every local connection.
	password string
	owner    *os.File // flock'd owner file, held until Stop
	proc     *process

	stopOnce sync.Once
	stopErr  error
}

// Start starts a cluster: it sweeps the clusters of dead owners under
// TempRoot, takes the cluster folder (a fresh one under TempRoot, or Dir),
// runs initdb if the folder holds no cluster yet, starts postgres on a free
// 127.0.0.1 port and returns once the server accepts connections. In a
// persistent cluster it recovers from a previous owner that died (see the
// package documentation) and creates the database Database if missing.
//
// The caller must call Stop. If the caller dies instead, the server stops by
// itself (Linux) and the next Start removes what is left.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	began := time.Now()

	c := &Cluster{opts: o, log: o.Logger}
	if c.acct, err = serverAccount(o.OSUser); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if err := sweep(ctx, o.TempRoot, c.log); err != nil {
		// Leftovers of someone else must not stop this run.
		c.log.LogAttrs(ctx, slog.LevelWarn, "sweeping dead clusters", slog.String("error", err.Error()))
	}
	if err := c.start(ctx); err != nil {
		c.abort()
		return nil, fmt.Errorf("pgcluster: starting PostgreSQL in %s: %w", c.dirOrRoot(), err)
	}
	c.log.LogAttrs(ctx, slog.LevelInfo, "PostgreSQL started",
		slog.String("dir", c.dir), slog.Int("port", c.port), slog.Int("pid", c.proc.cmd.Process.Pid),
		slog.Bool("persistent", o.Persistent), slog.Duration("took", time.Since(began)))
	return c, nil
}

func (c *Cluster) dirOrRoot() string {
	if c.dir != "" {
		return c.dir
	}
	return c.opts.TempRoot
}

func (c *Cluster) start(ctx context.Context) error {
	if err := c.takeFolder(); err != nil {
		return err
	}
	c.dataDir = filepath.Join(c.dir, dataName)
	if c.opts.Persistent {
		if err := c.recoverStale(ctx); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(c.dataDir, "PG_VERSION")); errors.Is(err, fs.ErrNotExist) && c.opts.primary != nil {
		if err := c.basebackup(ctx); err != nil {
			return err
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		if err := c.initdb(ctx); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	sockDir := filepath.Join(c.dir, sockName)
	if sock := filepath.Join(sockDir, ".s.PGSQL.65535"); len(sock) > maxSocketPath {
		return fmt.Errorf("the Unix socket path %s would be longer than the %d bytes allowed; use a folder with a shorter path", sock, maxSocketPath)
	}
	if err := c.mkdir(sockDir); err != nil {
		return err
	}
	if c.opts.Persistent {
		if err := c.secureHBA(); err != nil {
			return fmt.Errorf("securing pg_hba.conf: %w", err)
		}
		// Keep the previous run's server log for a look after a crash.
		_ = os.Rename(filepath.Join(c.dir, logName), filepath.Join(c.dir, logName+".1"))
	}
	if err := c.launchRetrying(ctx); err != nil {
		return err
	}
	if c.opts.Persistent {
		if err := c.secure(ctx); err != nil {
			return err
		}
		if err := c.ensureDatabase(ctx, Database); err != nil {
			return err
		}
	}
	return nil
}

// launchRetrying launches the server, again while PostgreSQL refuses to
// start because a shared memory block of the data folder is still in use:
// backends of a killed postmaster detach from it only as they exit, a
// moment after they notice its death.
func (c *Cluster) launchRetrying(ctx context.Context) error {
	pause := 50 * time.Millisecond
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.launch(ctx)
		if err == nil || !strings.Contains(err.Error(), "pre-existing shared memory block") || time.Now().After(deadline) {
			return err
		}
		c.log.LogAttrs(ctx, slog.LevelInfo, "shared memory of the data folder still in use; starting again",
			slog.String("data", c.dataDir), slog.Duration("in", pause))
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// takeFolder creates (throwaway) or opens (persistent) the cluster folder,
// hands it to the server's OS user and takes its owner file.
func (c *Cluster) takeFolder() error {
	if c.opts.Persistent {
		c.dir = c.opts.Dir
		// Folders made above Dir must let the server's user through.
		if err := os.MkdirAll(filepath.Dir(c.dir), 0o755); err != nil {
			return err
		}
		if err := os.Mkdir(c.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := c.chown(c.dir); err != nil {
			return err
		}
		if err := c.acct.checkReachable(c.dir); err != nil {
			return err
		}
		owner, err := claimOwner(c.dir)
		if err != nil {
			return err
		}
		c.owner = owner
		if c.opts.Origin != "" {
			note := fmt.Sprintf("This PostgreSQL cluster belongs with %s.\n", c.opts.Origin)
			if err := os.WriteFile(filepath.Join(c.dir, originFile), []byte(note), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	if err := ensureTempRoot(c.opts.TempRoot); err != nil {
		return err
	}
	if err := c.acct.checkReachable(filepath.Join(c.opts.TempRoot, "x")); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(c.opts.TempRoot, strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return err
	}
	c.dir = dir
	if err := c.chown(dir); err != nil {
		return err
	}
	owner, err := createOwner(dir)
	if err != nil {
		return err
	}
	c.owner = owner
	return nil
}

// ensureTempRoot creates root, or checks that an existing one is a folder of
// this user (in a shared /tmp another user could have planted it), and lets
// the server's user pass through it.
func ensureTempRoot(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	fi, err := os.Lstat(root)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder; remove it", root)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d); remove it", root, st.Uid, os.Geteuid())
	}
	return os.Chmod(root, 0o755)
}

// recoverStale cleans up after a previous owner of a persistent cluster that
// died without Stop: it stops a server left running in the data folder, and
// removes postmaster.pid when the pid in it now belongs to another process
// (PostgreSQL itself replaces a postmaster.pid whose pid is dead, but refuses
// to start when that pid was reused by a process of the same user).
func (c *Cluster) recoverStale(ctx context.Context) error {
	if err := stopServer(ctx, c.dataDir, syscall.SIGINT, c.log); err != nil {
		return err
	}
	if pid := postmasterPID(c.dataDir); pid > 0 && processAlive(pid) {
		c.log.LogAttrs(ctx, slog.LevelInfo, "removing stale postmaster.pid naming an unrelated process",
			slog.String("data", c.dataDir), slog.Int("pid", pid))
		if err := os.Remove(filepath.Join(c.dataDir, "postmaster.pid")); err != nil {
			return fmt.Errorf("removing stale postmaster.pid: %w", err)
		}
	}
	return nil
}

// settings returns the server settings, as postgres -c arguments.
func (c *Cluster) settings(port int) []string {
	s := map[string]string{
		"max_connections":         "200", // parallel tests, each with a pool
		"unix_socket_permissions": "0700",
		"logging_collector":       "off", // the log is our stderr capture
	}
	if !c.opts.Persistent {
		// A throwaway cluster trades crash safety for speed.
		s["fsync"] = "off"
		s["synchronous_commit"] = "off"
		s["full_page_writes"] = "off"
	}
	maps.Copy(s, c.opts.Settings)
	s["port"] = strconv.Itoa(port)
	s["listen_addresses"] = "127.0.0.1"
	s["unix_socket_directories"] = filepath.Join(c.dir, sockName)
	args := []string{"-D", c.dataDir}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		args = append(args, "-c", k+"="+s[k])
	}
	return args
}

// launch starts postmaster on a free port and waits until it accepts
// connections, trying another port when the one picked was taken meanwhile.
func (c *Cluster) launch(ctx context.Context) error {
	const attempts = 5
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		err = c.launchOn(ctx, port)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errPortTaken) || attempt == attempts {
			return err
		}
		c.log.LogAttrs(ctx, slog.LevelInfo, "port taken, trying another", slog.Int("port", port))
	}
}

var errPortTaken = errors.New("port taken")

func (c *Cluster) launchOn(ctx context.Context, port int) error {
	logPath := filepath.Join(c.dir, logName)
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(c.opts.BinDir, "postgres"), c.settings(port)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = c.dir
	cmd.Env = serverEnv()
	cmd.SysProcAttr = c.sysProcAttr(syscall.SIGQUIT) // SIGQUIT: immediate shutdown
	proc, err := startProcess(cmd)
	logFile.Close() // the server has its own copy
	if err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	c.port = port
	c.proc = proc
	err = c.waitReady(ctx)
	if err == nil {
		return nil
	}
	if !proc.exited() {
		_ = proc.stop(syscall.SIGQUIT, 5*time.Second)
	}
	c.proc = nil
	log, _ := os.ReadFile(logPath)
	if bytes.Contains(log, []byte("could not bind")) || bytes.Contains(log, []byte("could not create any TCP/IP sockets")) {
		return fmt.Errorf("%w: %d", errPortTaken, port)
	}
	return fmt.Errorf("%w; server log %s ends:\n%s", err, logPath, tail(log, 20))
}

// waitReady polls a connection, with a growing pause, until one succeeds,
// the server exits or ctx ends.
func (c *Cluster) waitReady(ctx context.Context) error {
	pause := 5 * time.Millisecond
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgconn.Connect(attemptCtx, c.URL("postgres"))
		cancel()
		if err == nil {
			return conn.Close(ctx)
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "28") {
			// It asked for a password it does not have yet (a persistent
			// cluster before secure sets it): it accepts connections.
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-c.proc.done:
			t.Stop()
			return fmt.Errorf("postgres exited during start-up: %v", c.proc.err)
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for PostgreSQL to accept connections: %w (last attempt: %v)", ctx.Err(), err)
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// ensureDatabase creates database name if it does not exist.
func (c *Cluster) ensureDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("creating database %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("looking up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("creating database %s: %w", name, err)
	}
	c.log.LogAttrs(ctx, slog.LevelInfo, "database created", slog.String("database", name))
	return nil
}

// abort undoes a failed Start.
func (c *Cluster) abort() {
	if c.proc != nil && !c.proc.exited() {
		_ = c.proc.stop(syscall.SIGQUIT, 5*time.Second)
	}
	if !c.opts.Persistent && c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil {
			c.log.LogAttrs(context.Background(), slog.LevelWarn, "removing the folder of a failed start", slog.String("error", err.Error()))
		}
	}
	if c.owner != nil {
		c.owner.Close()
	}
}

// URL returns the connection URL of database dbname, over TCP as the
// superuser, without TLS.
func (c *Cluster) URL(dbname string) string {
	user := url.User(Superuser)
	if c.password != "" {
		user = url.UserPassword(Superuser, c.password)
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     user,
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + dbname,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Port returns the TCP port the server listens on at 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// Dir returns the cluster folder: the data folder, the socket folder and
// server.log are inside it.
func (c *Cluster) Dir() string { return c.dir }

// Stop shuts the server down (fast shutdown: sessions are ended, then a
// checkpoint; immediate shutdown if that takes longer than StopTimeout),
// waits for it to exit, removes the cluster folder unless the cluster is
// persistent, and releases the folder. It is idempotent: later calls return
// the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	began := time.Now()
	var errs []error
	if err := c.proc.stop(syscall.SIGINT, c.opts.StopTimeout); err != nil {
		errs = append(errs, err)
	}
	if !c.opts.Persistent && len(errs) == 0 {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.owner.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pgcluster: stopping PostgreSQL in %s: %w", c.dir, err)
	}
	c.log.LogAttrs(context.Background(), slog.LevelInfo, "PostgreSQL stopped",
		slog.String("dir", c.dir), slog.Bool("kept", c.opts.Persistent), slog.Duration("took", time.Since(began)))
	return nil
}

// process is a started server and the goroutine that waits for it.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and been reaped
	err  error         // cmd.Wait's result, set before done is closed
}

// startProcess starts cmd from a goroutine that keeps its OS thread locked
// until cmd exits. The parent-death signal fires when the thread that forked
// the child exits, not the process; an unlocked thread could be retired by
// the Go runtime while the server runs, killing it.
func startProcess(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig and waits for the exit, escalating to SIGQUIT (immediate
// shutdown) after timeout and to SIGKILL after five more seconds.
func (p *process) stop(sig syscall.Signal, timeout time.Duration) error {
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{sig, timeout}, {syscall.SIGQUIT, 5 * time.Second}, {syscall.SIGKILL, 5 * time.Second}}
	for _, s := range steps {
		if err := p.cmd.Process.Signal(s.sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("signalling postgres (pid %d): %w", p.cmd.Process.Pid, err)
		}
		t := time.NewTimer(s.wait)
		select {
		case <-p.done:
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	return fmt.Errorf("postgres (pid %d) did not exit after SIGKILL", p.cmd.Process.Pid)
}

// account is the OS user the server runs as when this process is root.
type account struct {
	name     string
	uid, gid uint32
}

// serverAccount returns the account to run the server as, or nil when this
// process is not root and the server simply runs as this process's user.
func serverAccount(name string) (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("running as root, so PostgreSQL must run as OS user %q, which cannot be found: %w", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s: gid %q: %w", name, u.Gid, err)
	}
	if uid == 0 {
		return nil, fmt.Errorf("OSUser %s is root; PostgreSQL refuses to run as root", name)
	}
	return &account{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
}

// errUnreachable is returned (wrapped) by checkReachable.
var errUnreachable = errors.New("folder out of the server's reach")

// checkReachable checks that a's user may pass through every folder above
// path that exists (the server opens its data folder by path; Start makes
// the missing ones, mode 0755). Nil a is this process's own user, who
// created or chose the path.
func (a *account) checkReachable(path string) error {
	if a == nil {
		return nil
	}
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) && p != filepath.Dir(p) {
			continue // Start makes it, mode 0755
		}
		if err != nil {
			return err
		}
		perm := fi.Mode().Perm()
		ok := perm&0o001 != 0
		if st, isStat := fi.Sys().(*syscall.Stat_t); isStat {
			ok = ok || st.Uid == a.uid && perm&0o100 != 0 || st.Gid == a.gid && perm&0o010 != 0
		}
		if !ok {
			return fmt.Errorf("%w: the server runs as OS user %s (this process is root), who cannot enter %s (mode %v); choose a folder under one that others may enter", errUnreachable, a.name, p, fi.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// chown hands path to the server's user.
func (c *Cluster) chown(path string) error {
	if c.acct == nil {
		return nil
	}
	return os.Chown(path, int(c.acct.uid), int(c.acct.gid))
}

// mkdir creates a private folder of the server's user.
func (c *Cluster) mkdir(path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return err
	}
	return c.chown(path)
}

// sysProcAttr runs a server binary in its own process group (a Ctrl-C in
// the terminal is for us to handle, not for the server), as the server's
// user, with deathSig sent by the kernel when this process dies.
func (c *Cluster) sysProcAttr(deathSig syscall.Signal) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if c.acct != nil {
		attr.Credential = &syscall.Credential{Uid: c.acct.uid, Gid: c.acct.gid}
	}
	if !c.opts.noDeathSignal {
		setDeathSignal(attr, deathSig)
	}
	return attr
}

// killGroup kills the process group p leads (initdb and the postgres it
// runs).
func killGroup(p *os.Process) error {
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// serverEnv is this process's environment without the PG* variables (which
// would point initdb and postgres elsewhere) and in the C locale, so that
// the server's start-up messages are in English.
func serverEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG")
	})
	return append(env, "LC_ALL=C")
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	return port, nil
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
