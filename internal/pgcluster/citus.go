package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ErrNoCitus is returned (wrapped) by StartCitus when the server binaries
// have no Citus extension installed beside them. No package registry
// serves Citus here; it is installed by hand (see docs/warehouse.md "On
// Citus"), and nothing in this repository builds it.
var ErrNoCitus = errors.New("the Citus extension is not installed for this PostgreSQL (no citus.control in its extension folder)")

// Citus is a throwaway Citus cluster on loopback: a coordinator and its
// workers, each a throwaway Cluster with citus preloaded.
type Citus struct {
	Coordinator *Cluster
	Workers     []*Cluster
}

// StartCitus starts a coordinator and workers throwaway clusters with the
// citus library preloaded, from the Citus extension installed for the
// server binaries of opts (ErrNoCitus when there is none). opts applies to
// each node (Settings over the defaults, shared_preload_libraries set
// here). The caller must call Stop; Database makes a database on every
// node with the extension, its workers registered.
func StartCitus(ctx context.Context, opts Options, workers int) (*Citus, error) {
	if opts.Persistent {
		return nil, errors.New("pgcluster: a Citus cluster here is throwaway")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if err := citusInstalled(o.BinDir); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	settings := map[string]string{}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	settings["shared_preload_libraries"] = "citus"
	// Citus's own defaults suit a production cluster; the nodes here are
	// three servers on one small machine.
	settings["max_worker_processes"] = "32"
	settings["citus.max_adaptive_executor_pool_size"] = "4"
	// The nodes trust loopback connections and have no certificates;
	// Citus's default (sslmode=require) would look for a client
	// certificate in the home folder of whoever started the server.
	settings["citus.node_conninfo"] = "sslmode=disable"
	opts.Settings = settings
	c := &Citus{}
	for i := 0; i <= workers; i++ {
		n, err := Start(ctx, opts)
		if err != nil {
			return nil, errors.Join(err, c.Stop())
		}
		if i == 0 {
			c.Coordinator = n
		} else {
			c.Workers = append(c.Workers, n)
		}
	}
	return c, nil
}

// citusInstalled checks that the extension folder of the server in binDir
// holds citus.control.
func citusInstalled(binDir string) error {
	out, err := exec.Command(filepath.Join(binDir, "pg_config"), "--sharedir").Output()
	if err != nil {
		return fmt.Errorf("%w (pg_config --sharedir of %s: %v)", ErrNoCitus, binDir, err)
	}
	control := filepath.Join(strings.TrimSpace(string(out)), "extension", "citus.control")
	if _, err := os.Stat(control); err != nil {
		return fmt.Errorf("%w: %s is missing", ErrNoCitus, control)
	}
	return nil
}

// Database creates database name on every node, with the citus extension
// in each, and registers the coordinator and the workers in the
// coordinator's: a database ready for distributed tables. It returns the
// URL of the database on the coordinator.
func (c *Citus) Database(ctx context.Context, name string) (string, error) {
	nodes := append([]*Cluster{c.Coordinator}, c.Workers...)
	for _, n := range nodes {
		if err := n.ensureDatabase(ctx, name); err != nil {
			return "", err
		}
		if err := execOn(ctx, n.URL(name), "CREATE EXTENSION IF NOT EXISTS citus"); err != nil {
			return "", err
		}
	}
	stmts := []string{fmt.Sprintf("SELECT citus_set_coordinator_host('127.0.0.1', %d)", c.Coordinator.Port())}
	for _, w := range c.Workers {
		stmts = append(stmts, fmt.Sprintf("SELECT citus_add_node('127.0.0.1', %d)", w.Port()))
	}
	if err := execOn(ctx, c.Coordinator.URL(name), stmts...); err != nil {
		return "", err
	}
	return c.Coordinator.URL(name), nil
}

// DatabaseLike creates database name on every node of the Citus cluster
// whose coordinator database dbURL names (its workers as pg_dist_node
// lists them), as Database does, connecting to each node with dbURL's
// user and settings: the way a test binary given TEST_CITUS_URL makes a
// database of its own.
func DatabaseLike(ctx context.Context, dbURL, name string) (string, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return "", fmt.Errorf("connecting to the Citus coordinator: %w", err)
	}
	rows, err := conn.Query(ctx, `SELECT nodename, nodeport, groupid = 0 FROM pg_dist_node WHERE isactive ORDER BY groupid`)
	if err != nil {
		conn.Close(ctx)
		return "", fmt.Errorf("the nodes of the Citus cluster (is citus created in that database?): %w", err)
	}
	type node struct {
		host  string
		port  int
		coord bool
	}
	var nodes []node
	var n node
	_, err = pgx.ForEachRow(rows, []any{&n.host, &n.port, &n.coord}, func() error { nodes = append(nodes, n); return nil })
	conn.Close(ctx)
	if err != nil {
		return "", fmt.Errorf("the nodes of the Citus cluster: %w", err)
	}
	if len(nodes) == 0 || !nodes[0].coord {
		return "", errors.New("the Citus coordinator lists no coordinator in pg_dist_node (citus_set_coordinator_host)")
	}
	at := func(nd node, db string) string {
		u, _ := url.Parse(dbURL)
		u.Host = nd.host + ":" + strconv.Itoa(nd.port)
		u.Path = "/" + db
		return u.String()
	}
	for _, nd := range nodes {
		if err := execOn(ctx, at(nd, "postgres"), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", err
		}
		if err := execOn(ctx, at(nd, name), "CREATE EXTENSION IF NOT EXISTS citus"); err != nil {
			return "", err
		}
	}
	stmts := []string{fmt.Sprintf("SELECT citus_set_coordinator_host('%s', %d)", nodes[0].host, nodes[0].port)}
	for _, nd := range nodes[1:] {
		stmts = append(stmts, fmt.Sprintf("SELECT citus_add_node('%s', %d)", nd.host, nd.port))
	}
	if err := execOn(ctx, at(nodes[0], name), stmts...); err != nil {
		return "", err
	}
	return at(nodes[0], name), nil
}

// DropDatabaseLike drops database name on every node of the Citus cluster
// of dbURL (see DatabaseLike), ending the sessions connected to it.
func DropDatabaseLike(ctx context.Context, dbURL, name string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connecting to the Citus coordinator: %w", err)
	}
	rows, err := conn.Query(ctx, `SELECT nodename || ':' || nodeport FROM pg_dist_node WHERE isactive`)
	if err != nil {
		conn.Close(ctx)
		return err
	}
	hosts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	conn.Close(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hosts {
		u, _ := url.Parse(dbURL)
		u.Host, u.Path = h, "/postgres"
		errs = append(errs, execOn(ctx, u.String(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"))
	}
	return errors.Join(errs...)
}

// execOn runs stmts, one by one, on a connection of their own to dbURL.
func execOn(ctx context.Context, dbURL string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// Stop stops every node (the workers first).
func (c *Citus) Stop() error {
	var errs []error
	for _, w := range c.Workers {
		errs = append(errs, w.Stop())
	}
	if c.Coordinator != nil {
		errs = append(errs, c.Coordinator.Stop())
	}
	return errors.Join(errs...)
}
