// Package localwh is the local warehouse: the local PostgreSQL cluster and
// a sandbox, owned by one background process per local folder (--dir,
// default .etl) that every `etl local` command shares. It owns that
// process (Warehouse.Serve), its socket protocol (Warehouse.Dial and Conn),
// the files of the local folder (Paths) and the key of its accounts'
// tokens (ReadOrMakeKey); the commands of cmd/etl wire it and print.
//
// The process (`etl local serve`, which the first command that needs it
// starts through Warehouse.Spawn) answers on the Unix socket local.sock in
// the local folder, one command per connection, one line each way:
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
package localwh
