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
	nodes := []node{{"127.0.0.1", c.Coordinator.Port()}}
	for _, n := range append([]*Cluster{c.Coordinator}, c.Workers...) {
		if err := n.ensureDatabase(ctx, name); err != nil {
			return "", err
		}
		if err := execOn(ctx, n.URL(name), "CREATE EXTENSION IF NOT EXISTS citus"); err != nil {
			return "", err
		}
		if n != c.Coordinator {
			nodes = append(nodes, node{"127.0.0.1", n.Port()})
		}
	}
	if err := register(ctx, c.Coordinator.URL(name), nodes); err != nil {
		return "", err
	}
	return c.Coordinator.URL(name), nil
}

// node is a node of a Citus cluster, as pg_dist_node names it.
type node struct {
	host string
	port int
}

// at is dbURL changed to connect to database db on nd.
func (nd node) at(dbURL, db string) string {
	u, _ := url.Parse(dbURL)
	u.Host = nd.host + ":" + strconv.Itoa(nd.port)
	u.Path = "/" + db
	return u.String()
}

// register names nodes[0] the coordinator and the others its workers in
// the database of coordURL.
func register(ctx context.Context, coordURL string, nodes []node) error {
	stmts := []string{fmt.Sprintf("SELECT citus_set_coordinator_host('%s', %d)", nodes[0].host, nodes[0].port)}
	for _, nd := range nodes[1:] {
		stmts = append(stmts, fmt.Sprintf("SELECT citus_add_node('%s', %d)", nd.host, nd.port))
	}
	return execOn(ctx, coordURL, stmts...)
}

// clusterNodes returns the active nodes of the Citus cluster whose
// coordinator database dbURL names, the coordinator first.
func clusterNodes(ctx context.Context, dbURL string) ([]node, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("connecting to the Citus coordinator: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT nodename, nodeport, groupid = 0 FROM pg_dist_node WHERE isactive ORDER BY groupid`)
	if err != nil {
		return nil, fmt.Errorf("the nodes of the Citus cluster (is citus created in that database?): %w", err)
	}
	var nodes []node
	var nd node
	var coord bool
	_, err = pgx.ForEachRow(rows, []any{&nd.host, &nd.port, &coord}, func() error {
		if len(nodes) == 0 && !coord {
			return errors.New("the Citus coordinator lists no coordinator in pg_dist_node (citus_set_coordinator_host)")
		}
		nodes = append(nodes, nd)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the nodes of the Citus cluster: %w", err)
	}
	if len(nodes) == 0 {
		return nil, errors.New("the Citus coordinator lists no coordinator in pg_dist_node (citus_set_coordinator_host)")
	}
	return nodes, nil
}

// DatabaseLike creates database name on every node of the Citus cluster
// whose coordinator database dbURL names (its workers as pg_dist_node
// lists them), as Database does, connecting to each node with dbURL's
// user and settings: the way a test binary given TEST_CITUS_URL makes a
// database of its own.
func DatabaseLike(ctx context.Context, dbURL, name string) (string, error) {
	nodes, err := clusterNodes(ctx, dbURL)
	if err != nil {
		return "", err
	}
	for _, nd := range nodes {
		if err := execOn(ctx, nd.at(dbURL, "postgres"), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", err
		}
		if err := execOn(ctx, nd.at(dbURL, name), "CREATE EXTENSION IF NOT EXISTS citus"); err != nil {
			return "", err
		}
	}
	if err := register(ctx, nodes[0].at(dbURL, name), nodes); err != nil {
		return "", err
	}
	return nodes[0].at(dbURL, name), nil
}

// DropDatabaseLike drops database name on every node of the Citus cluster
// of dbURL (see DatabaseLike), ending the sessions connected to it.
func DropDatabaseLike(ctx context.Context, dbURL, name string) error {
	nodes, err := clusterNodes(ctx, dbURL)
	if err != nil {
		return err
	}
	var errs []error
	for _, nd := range nodes {
		errs = append(errs, execOn(ctx, nd.at(dbURL, "postgres"), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"))
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
