package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// example is one entry of a command's Examples: what it does, and the
// command line, as typed into a POSIX shell.
type example struct {
	about, line string
}

// examples are the Examples of every command's --help, by command path,
// two or three each (TestEveryCommandHasExamples). A line that runs etl
// uses only flags its command has (TestExamplesParse). An entry may name a
// command that this build does not have yet: pendingExamples lists those.
var examples = map[string][]example{
	"etl": {
		{"Start the local warehouse and point this shell at it", `etl local up && eval "$(etl local env)"`},
		{"Price the job example of ./jobs.yaml, then run it", `etl plan --job example && etl run --job example`},
		{"What each exit status means", `etl help exit-codes`},
	},
	"etl run": {
		{"Run the job example now, or take up its unfinished run of this month", `etl run --jobs jobs.yaml --job example`},
		{"Start a new run that buys every task again, whatever the warehouse holds", `etl run --jobs jobs.yaml --job example --fresh --refetch`},
		{"Keep the run's summary as one JSON document", `etl run --job example --json > summary.json`},
	},
	"etl plan": {
		{"Price every task of the job example before it runs; nothing is spent", `etl plan --jobs jobs.yaml --job example`},
		{"Spend a few units to learn the row totals first", `etl plan --job example --probe`},
		{"Every task, not only those that matter; priced as a run that buys everything again", `etl plan --job example --tasks --refetch`},
	},
	"etl schedule": {
		{"Run every job of jobs.yaml on its schedule until stopped", `etl schedule --jobs jobs.yaml`},
		{"Serve /healthz and /metrics (Prometheus) on port 9090", `etl schedule --jobs jobs.yaml --http :9090`},
		{"Eight tasks in flight at once, logs as JSON", `etl schedule --jobs jobs.yaml --concurrency 8 --log-format json`},
	},
	"etl retention": {
		{"Print what the retention policy would remove; change nothing", `etl retention --jobs jobs.yaml --dry-run`},
		{"Remove it now (etl run and etl schedule do after every run)", `etl retention --jobs jobs.yaml`},
	},
	"etl export": {
		{"Write every table to ./lake as Parquet; a second run writes only what changed", `etl export --to lake`},
		{"The links of the third quarter of 2026 only, listing each file written", `etl export --to lake --tables backlinks --since 2026-07 --until 2026-09 --files`},
		{"The overviews and the targets that name them, to a lake on another disk", `etl export --to /mnt/lake --tables backlink_overview,targets`},
	},
	"etl report": {
		{"The report of the job example over the last 12 months", `etl report --jobs jobs.yaml --job example --out report.html`},
		{"Two targets over two years", `etl report --targets example.com,n2500.example --months 24 --out report.html`},
		{"Every target in the table, charts for the 25 largest", `etl report --top 25 --out all.html`},
	},
	"etl budget": {
		{"The units spent against each cap, today and this month", `etl budget --jobs jobs.yaml`},
		{"One job only, as JSON", `etl budget --jobs jobs.yaml --job example --json`},
		{"With a standby: name both hosts, and the one that takes writes answers (a standby alone is refused)", `etl budget --jobs jobs.yaml --database-url 'postgres://etl@primary:5432,standby:5432/etl?target_session_attrs=read-write'`},
	},
	"etl backfill": {
		{"The months of 2025 and their price; spend nothing", `etl backfill --jobs jobs.yaml --job example --from 2025-01 --to 2025-12 --dry-run`},
		{"Fetch them, newest month first", `etl backfill --jobs jobs.yaml --job example --from 2025-01 --to 2025-12 --reverse`},
		{"Fetch again the months whose tasks failed", `etl backfill --job example --from 2025-01 --to 2025-12 --reprocess failed`},
	},
	"etl migrate": {
		{"Apply every migration not yet applied", `etl migrate up`},
		{"The version applied, and whether the schema is dirty", `etl migrate version`},
	},
	"etl migrate up": {
		{"Apply every migration not yet applied", `etl migrate up`},
		{"Apply the next one only", `etl migrate up 1`},
		{"Migrate another database", `etl migrate up --database-url 'postgres://etl@db.example.com:5432/etl?sslmode=require'`},
	},
	"etl migrate down": {
		{"Revert the last migration", `etl migrate down 1 --yes`},
		{"Revert them all, dropping every warehouse table and its data", `etl migrate down --yes`},
	},
	"etl migrate goto": {
		{"Migrate up to version 15", `etl migrate goto 15`},
		{"Migrate down to version 10 (going down asks for --yes)", `etl migrate goto 10 --yes`},
	},
	"etl migrate force": {
		{"Migration 16 stopped midway: record 15, then go on where it stopped", `etl migrate force 15 && etl migrate up`},
		{"You finished migration 16 by hand: mark it applied and clean", `etl migrate force 16`},
	},
	"etl migrate version": {
		{"The version applied, this build's newest, and whether it is dirty", `etl migrate version`},
		{"The same as JSON", `etl migrate version --json`},
	},
	"etl sandbox": {
		{"Serve the sandbox on 127.0.0.1:8080 with the key sandbox", `etl sandbox`},
		{"Any free port (logged), an agency of 1,500 locations, device codes approved at once", `etl sandbox --addr 127.0.0.1:0 --api-key agency-n1500 --auto-approve 1`},
		{"Rehearse failures: seeded faults, a pinned clock and a unit balance", `etl sandbox --seed 7 --faults '429=0.05,503=0.02,cut=0.01' --now 2026-06-15 --units 100000`},
	},
	"etl local": {
		{"Run the job example on the local warehouse (started for the run)", `etl local run --job example`},
		{"Keep the warehouse up and point this shell at it", `etl local up && eval "$(etl local env)"`},
		{"Stop it; the data stays", `etl local down`},
	},
	"etl local run": {
		{"Run the job example on the local warehouse and the sandbox", `etl local run --job example`},
		{"Buy every task again, from another job spec", `etl local run --jobs my-jobs.yaml --job example --refetch`},
	},
	"etl local psql": {
		{"An interactive psql on the local warehouse", `etl local psql`},
		{"One psql command: list the tables", `etl local psql -- -c '\dt'`},
	},
	"etl local up": {
		{"Start the local warehouse in the background and keep it up", `etl local up`},
		{"Then point this shell's etl commands at it", `etl local up && eval "$(etl local env)"`},
		{"Keep it in another folder (the other local commands then take the same --dir)", `etl local up --dir /srv/etl`},
	},
	"etl local down": {
		{"Stop the local warehouse; the data stays", `etl local down`},
		{"Stop the one of another checkout", `etl local down --dir ../other/.etl`},
	},
	"etl local env": {
		{"Point this shell at the running local warehouse", `eval "$(etl local env)"`},
		{"See what it exports", `etl local env`},
	},
	"etl local clean": {
		{"Stop the local warehouse and delete its data", `etl local clean`},
		{"The same for another checkout's", `etl local clean --dir ../other/.etl`},
	},
	"etl version": {
		{"Which build this is, for a bug report", `etl version`},
		{"The same, as a flag", `etl --version`},
	},
	"etl runs": {
		{"The last 20 runs, newest first", `etl runs`},
		{"Every failed or partial run of the job example", `etl runs --job example --status failed,partial --all`},
		{"The last 5 runs, as JSON", `etl runs --limit 5 --json`},
	},
	"etl runs show": {
		{"Run 12: its row, its tasks, what it loaded per table, its ledger", `etl runs show 12`},
		{"Only its failed and skipped tasks", `etl runs show 12 --status failed,skipped`},
		{"Every task of one target, whatever its status", `etl runs show 12 --task 'example.com'`},
	},
	"etl auth": {
		{"Sign the account agency in: open the address printed and enter the code", `etl auth login --account agency`},
		{"List the accounts", `etl auth status`},
		{"Sign it out", `etl auth logout --account agency`},
	},
	"etl auth login": {
		{"Sign the account agency in with the device flow", `etl auth login --account agency`},
		{"With the authorization code flow (ETL_CLIENT_ID, ETL_CLIENT_SECRET set)", `etl auth login --account agency --code`},
	},
	"etl auth status": {
		{"The accounts: flow, scopes, expiry, last renewal", `etl auth status`},
		{"As JSON", `etl auth status --json`},
	},
	"etl auth logout": {
		{"Delete the account agency and its tokens", `etl auth logout --account agency`},
		{"Sign it in afresh", `etl auth logout --account agency && etl auth login --account agency`},
	},
	"etl listings": {
		{"What a push of the table desired_locations would change; send nothing", `etl listings push --account agency --from desired_locations --dry-run`},
		{"The last push, and the locations waiting", `etl listings status --account agency`},
	},
	"etl listings push": {
		{"The diff per field, and the requests and minutes; send nothing", `etl listings push --account agency --from desired_locations --dry-run`},
		{"Send what changed", `etl listings push --account agency --from desired_locations`},
		{"Only one location, from a view in another schema", `etl listings push --account agency --from crm.locations_v --only 8f14e45fceea167a5a36dedd4bea2543`},
	},
	"etl listings undo": {
		{"What undoing push 12 of the account agency would send back; send nothing", `etl listings undo --account agency --push 12 --dry-run`},
		{"Send back the versions from before push 12; locations changed since are kept", `etl listings undo --account agency --push 12`},
		{"Send them back to one location even though another writer changed it since", `etl listings undo --account agency --push 12 --only 8f14e45fceea167a5a36dedd4bea2543 --force`},
	},
	"etl listings status": {
		{"The account agency: its locations by status, its last push, what waits, and the ten that matter", `etl listings status --account agency`},
		{"Every refused location in Berlin", `etl listings status --account agency --state refused --location berlin`},
		{"Everything, as JSON", `etl listings status --account agency --json`},
	},
	"etl listings pull": {
		{"Pull every location of the account agency", `etl listings pull --account agency`},
		{"Only the locations that changed, 100 a page", `etl listings pull --account agency --status changed --size 100`},
	},
	"etl help": {
		{"Help for a command", `etl help runs show`},
		{"What each exit status means", `etl help exit-codes`},
	},
	"etl completion": {
		{"Load completions into this bash session", `source <(etl completion bash)`},
		{"Install them for zsh", `etl completion zsh > "${fpath[1]}/_etl"`},
	},
	"etl completion bash": {
		{"Load completions into this session", `source <(etl completion bash)`},
		{"Install them for every session", `etl completion bash > ~/.local/share/bash-completion/completions/etl`},
	},
	"etl completion zsh": {
		{"Load completions into this session", `source <(etl completion zsh)`},
		{"Install them for every session", `etl completion zsh > "${fpath[1]}/_etl"`},
	},
	"etl completion fish": {
		{"Load completions into this session", `etl completion fish | source`},
		{"Install them for every session", `etl completion fish > ~/.config/fish/completions/etl.fish`},
	},
	"etl completion powershell": {
		{"Load completions into this session", `etl completion powershell | Out-String | Invoke-Expression`},
		{"Without descriptions", `etl completion powershell --no-descriptions | Out-String | Invoke-Expression`},
	},
}

// pendingExamples are the entries of examples whose command this build
// may not have yet (it comes with a merge); nothing else may name a
// command that does not exist.
var pendingExamples = map[string]bool{}

// formatExamples is a command's Examples as --help prints them.
func formatExamples(ex []example) string {
	var b strings.Builder
	for i, e := range ex {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("  # " + e.about + "\n  " + e.line)
	}
	return b.String()
}

// setExamples gives every command of the tree under c without an Example
// its entry of examples.
func setExamples(c *cobra.Command) {
	if ex, ok := examples[c.CommandPath()]; ok && c.Example == "" {
		c.Example = formatExamples(ex)
	}
	for _, sub := range c.Commands() {
		setExamples(sub)
	}
}
