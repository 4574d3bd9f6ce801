package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// readDatabaseURL returns the database of the commands that only read
// (etl runs, runs show): the --read-database-url flag, else
// ETL_READ_DATABASE_URL, else the warehouse's (--database-url,
// DATABASE_URL). It may name a standby, or several hosts with
// target_session_attrs=prefer-standby.
func (e *env) readDatabaseURL(readFlag, flag string) (string, error) {
	if readFlag != "" {
		return readFlag, nil
	}
	if u := e.getenv("ETL_READ_DATABASE_URL"); u != "" && flag == "" {
		return u, nil
	}
	return e.databaseURL(flag)
}

// connectReader opens a pool on the database of the commands that only
// read (see readDatabaseURL). When it reached a standby, it says so on
// stderr with how stale the standby may be: what the primary committed
// since its last replayed commit does not show.
func (e *env) connectReader(ctx context.Context, readFlag, flag string) (*pgxpool.Pool, error) {
	dbURL, err := e.readDatabaseURL(readFlag, flag)
	if err != nil {
		return nil, err
	}
	pool, err := e.openPool(ctx, dbURL, 0)
	if err != nil {
		return nil, err
	}
	s, err := readStandby(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if s.standby {
		fmt.Fprintf(e.stderr, "etl: reading from a standby (a read-only replica): %s; what the primary committed since does not show\n", s.lag())
	}
	return pool, nil
}

// standbyState is whether a server is a standby, and how far its replay
// has come.
type standbyState struct {
	standby bool
	// replayed is the commit time of the last transaction the standby
	// replayed (nil: none since it started); caughtUp says it has
	// replayed all it received.
	replayed *time.Time
	now      time.Time
	caughtUp bool
}

// lag says how far behind the standby may be.
func (s standbyState) lag() string {
	if s.replayed == nil {
		return "it has replayed no commit since it started"
	}
	ago := s.now.Sub(*s.replayed).Round(100 * time.Millisecond)
	if s.caughtUp {
		return fmt.Sprintf("its last replayed commit was %s ago, and it has replayed all it received", ago)
	}
	return fmt.Sprintf("its last replayed commit was %s ago, and it has received more it has not replayed yet", ago)
}

// readStandby asks pool's server whether it is a standby (in recovery)
// and how far its replay has come.
func readStandby(ctx context.Context, pool *pgxpool.Pool) (standbyState, error) {
	var s standbyState
	err := pool.QueryRow(ctx, `SELECT pg_is_in_recovery(), pg_last_xact_replay_timestamp(), now(),
		coalesce(pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn(), true)`).Scan(&s.standby, &s.replayed, &s.now, &s.caughtUp)
	if err != nil {
		return s, fmt.Errorf("asking the database whether it is a standby: %w", err)
	}
	return s, nil
}

// requirePrimary refuses to guard money from a standby: what a cap has
// left is the primary's ledger's word, and a standby's copy may lag
// behind it; and a run writes. what names the command.
func requirePrimary(ctx context.Context, pool *pgxpool.Pool, what string) error {
	s, err := readStandby(ctx, pool)
	if err != nil {
		return err
	}
	if !s.standby {
		return nil
	}
	return fmt.Errorf("%s needs the primary, and the database at DATABASE_URL is a standby (a read-only replica: %s), whose ledger may count less than was spent: "+
		"point DATABASE_URL (or --database-url) at the primary, or name every host with target_session_attrs=read-write (see docs/replication.md)", what, s.lag())
}
