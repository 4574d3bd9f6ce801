// Package pgcluster starts and stops a local PostgreSQL cluster from the
// server binaries installed on the machine: the throwaway cluster of a test
// binary, and the persistent cluster that `etl local` keeps (under .etl/pg,
// or where Place says) so that data survives between runs.
//
// It owns the cluster's folder and processes, and promises to leave nothing
// behind:
//
//   - The postmaster is a direct child started in its own process group (a
//     Ctrl-C in the terminal reaches the owner, which stops the server in
//     order, not the server itself) with a parent-death signal: when the
//     owning process dies, even by SIGKILL, the kernel sends the postmaster
//     SIGQUIT and it shuts down at once (Linux).
//   - Each cluster folder holds an owner file naming the owning process (pid
//     and start time), on which the owner holds an exclusive flock(2) for as
//     long as the cluster runs. The kernel drops that lock when the owner
//     dies, so a free lock means a dead owner, with no pid-reuse race.
//   - Throwaway clusters all live under one parent folder (Options.TempRoot).
//     Every Start sweeps it: a folder whose owner is gone has any server
//     process still running in it stopped, then is removed.
//   - A persistent cluster whose previous owner died is recovered by the next
//     Start: a server left running is stopped (fast shutdown), a stale
//     postmaster.pid is left for PostgreSQL, which replaces it when its pid is
//     dead, and removed by Start only when its pid now belongs to some other
//     process.
//
// PostgreSQL refuses to run as root. When this process is root, initdb and
// postgres run as the OS user Options.OSUser (default "postgres") through
// exec credentials, and the cluster folder is handed to that user. That
// user must be able to enter every folder above the cluster's, which a
// checkout in /root or in a mktemp -d folder (mode 0700) does not allow:
// Place then puts a persistent cluster away from its folder, under
// /var/lib/etl/local (DefaultAwayRoot), in a folder of its own named after
// that folder, and Remove deletes it again.
//
// A throwaway cluster trusts every local connection (initdb --auth=trust).
// A persistent one, which lives on between commands and is reachable on
// 127.0.0.1 by every user of the machine, asks TCP clients for a password
// (scram-sha-256), made once and kept in its folder (mode 0600); URL
// carries it. Both listen on 127.0.0.1 only, on a free port, with the Unix
// socket (trusted) in a private folder: they are for tests and local
// trials, never for production.
//
// StartStandby starts a throwaway streaming standby of a running cluster
// (pg_basebackup -R); Crash stops a server as pg_ctl stop -m immediate
// does, StopReceiving cuts a standby off from its primary, and Promote
// makes it a primary: the pieces of a failover, for the tests of one. A
// standby starts with its primary's settings, so that the standby of a
// Citus coordinator (StartCitus) preloads citus too; PromoteCoordinator
// promotes it and names it the coordinator in the Citus metadata.
package pgcluster
