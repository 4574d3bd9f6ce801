package pgcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
)

// passwordName is the file of a persistent cluster's password, in its
// folder, readable by its owner only.
const passwordName = "password"

// secure makes a persistent cluster ask TCP clients for a password: the
// cluster lives on between commands (etl local up), and 127.0.0.1 is
// reachable by every user of the machine, so trusting it would hand any
// of them the superuser. The password is made once and kept in the
// cluster folder (mode 0600; URL carries it); pg_hba.conf's host lines
// move from trust to scram-sha-256. The Unix socket, in a folder only the
// server's OS user (and root) may enter, stays trusted: that is how the
// password is set, also on a cluster made before this.
func (c *Cluster) secure(ctx context.Context) error {
	file := filepath.Join(c.dir, passwordName)
	b, err := os.ReadFile(file)
	switch {
	case err == nil && len(strings.TrimSpace(string(b))) > 0:
		c.password = strings.TrimSpace(string(b))
	case err == nil, errors.Is(err, fs.ErrNotExist):
		raw := make([]byte, 24)
		if _, err := rand.Read(raw); err != nil {
			return err
		}
		c.password = hex.EncodeToString(raw)
		if err := os.WriteFile(file, []byte(c.password+"\n"), 0o600); err != nil {
			return fmt.Errorf("keeping the cluster's password: %w", err)
		}
	default:
		return fmt.Errorf("reading the cluster's password: %w", err)
	}
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%d user=%s dbname=postgres sslmode=disable",
		filepath.Join(c.dir, sockName), c.port, Superuser))
	if err != nil {
		return fmt.Errorf("connecting through the cluster's socket: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The password is sent as a literal (ALTER ROLE takes no parameter);
	// it is hex, so it needs no quoting beyond the quotes.
	if _, err := conn.Exec(ctx, "ALTER ROLE "+pgx.Identifier{Superuser}.Sanitize()+" PASSWORD '"+c.password+"'"); err != nil {
		return fmt.Errorf("setting the cluster's password: %w", err)
	}
	return nil
}

// secureHBA moves pg_hba.conf's host lines from trust to scram-sha-256,
// before the server starts (so no reload races a client): see secure.
func (c *Cluster) secureHBA() error {
	hba := filepath.Join(c.dataDir, "pg_hba.conf")
	text, err := os.ReadFile(hba)
	if err != nil {
		return err
	}
	lines := strings.Split(string(text), "\n")
	changed := false
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) >= 4 && (f[0] == "host" || f[0] == "hostssl" || f[0] == "hostnossl") && f[len(f)-1] == "trust" {
			lines[i] = strings.TrimSuffix(strings.TrimRight(l, " \t"), "trust") + "scram-sha-256"
			changed = true
		}
	}
	if !changed {
		return nil
	}
	// Written in place: the file keeps its owner (the server's OS user).
	return os.WriteFile(hba, []byte(strings.Join(lines, "\n")), 0o600)
}
