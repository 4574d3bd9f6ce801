-- Bookkeeping that does not grow without end: retention's keep_run_detail
-- compacts the task checkpoints and ledger rows of runs that finished
-- before it, keeping what the product and an auditor read (see
-- pipeline/compact.go): a run's counts per status and per table, its
-- failures and refusals, the latest fetch of every task, the closed months
-- of summary history, and the ledger's units per run, endpoint and day.

ALTER TABLE runs ADD COLUMN compacted_at timestamptz;
COMMENT ON COLUMN runs.compacted_at IS 'when retention (keep_run_detail) compacted the run''s bookkeeping: its done and held task checkpoints were deleted (but each task''s latest fetch), their counts kept in run_task_counts and run_table_totals, and its settled ledger rows summed per endpoint and day; NULL while the run''s detail is whole';

ALTER TABLE unit_ledger ADD COLUMN requests integer NOT NULL DEFAULT 1 CHECK (requests >= 1);
COMMENT ON COLUMN unit_ledger.requests IS 'requests the row stands for: 1, or on a row compacted by retention (keep_run_detail; target *), the settled requests of its run, endpoint and UTC day';
COMMENT ON COLUMN unit_ledger.target IS 'what the request was about: url and scope, a target set, or keyword, country and month; * on a row compacted by retention (see requests)';

CREATE TABLE run_task_counts (
    run_id     bigint NOT NULL REFERENCES runs ON DELETE CASCADE,
    status     text   NOT NULL,
    tasks      bigint NOT NULL CHECK (tasks >= 0),
    rows       bigint NOT NULL CHECK (rows >= 0),
    units      bigint NOT NULL CHECK (units >= 0),
    held_units bigint NOT NULL CHECK (held_units >= 0),
    PRIMARY KEY (run_id, status)
);
COMMENT ON TABLE run_task_counts IS 'The tasks of a compacted run (runs.compacted_at) counted by status, written before retention deleted its done and held checkpoints; a run not compacted has no row here (count its task_checkpoints).';
COMMENT ON COLUMN run_task_counts.run_id IS 'the run (runs.run_id)';
COMMENT ON COLUMN run_task_counts.status IS 'the status of the tasks counted (as task_checkpoints.status)';
COMMENT ON COLUMN run_task_counts.tasks IS 'tasks of the run with that status';
COMMENT ON COLUMN run_task_counts.rows IS 'rows they committed (good and quarantined)';
COMMENT ON COLUMN run_task_counts.units IS 'API units their committed pages cost';
COMMENT ON COLUMN run_task_counts.held_units IS 'for held tasks, what buying them again would have cost; 0 otherwise';

CREATE TABLE run_table_totals (
    run_id      bigint NOT NULL REFERENCES runs ON DELETE CASCADE,
    table_name  text   NOT NULL,
    tasks       bigint NOT NULL,
    rows        bigint,
    inserted    bigint,
    updated     bigint,
    unchanged   bigint,
    quarantined bigint,
    PRIMARY KEY (run_id, table_name)
);
COMMENT ON TABLE run_table_totals IS 'What a compacted run (runs.compacted_at) loaded per warehouse table, as run_tables showed it before retention deleted its done checkpoints; run_tables reads it for compacted runs.';
COMMENT ON COLUMN run_table_totals.run_id IS 'the run (runs.run_id)';
COMMENT ON COLUMN run_table_totals.table_name IS 'the warehouse table';
COMMENT ON COLUMN run_table_totals.tasks IS 'tasks of the run that load the table';
COMMENT ON COLUMN run_table_totals.rows IS 'rows received for the table (good and quarantined)';
COMMENT ON COLUMN run_table_totals.inserted IS 'rows added to the table';
COMMENT ON COLUMN run_table_totals.updated IS 'rows changed in the table (the later observation won)';
COMMENT ON COLUMN run_table_totals.unchanged IS 'rows equal to what the table held, or repeated within a page';
COMMENT ON COLUMN run_table_totals.quarantined IS 'rows that could not be parsed, kept in the quarantine table';

CREATE TABLE task_closed_months (
    task    text   NOT NULL,
    month   date   NOT NULL,
    run_id  bigint NOT NULL,
    PRIMARY KEY (task, month)
);
COMMENT ON TABLE task_closed_months IS 'Months of summary history a request fetched after they had ended, kept when retention (keep_run_detail) deleted the done checkpoint that said so: such a month is never bought again (it does not change once ended).';
COMMENT ON COLUMN task_closed_months.task IS 'the request (task_checkpoints.task)';
COMMENT ON COLUMN task_closed_months.month IS 'the first day of the month held';
COMMENT ON COLUMN task_closed_months.run_id IS 'the run that fetched it (runs.run_id; the run stays, its checkpoint is gone)';

CREATE OR REPLACE VIEW run_tables AS
SELECT c.run_id, c.table_name, count(*) AS tasks, sum(c.rows)::bigint AS rows, sum(c.inserted)::bigint AS inserted,
       sum(c.updated)::bigint AS updated, sum(c.unchanged)::bigint AS unchanged, sum(c.rejected)::bigint AS quarantined
  FROM task_checkpoints c
  JOIN runs r ON r.run_id = c.run_id
 WHERE c.table_name IS NOT NULL AND r.compacted_at IS NULL
 GROUP BY c.run_id, c.table_name
UNION ALL
SELECT run_id, table_name, tasks, rows, inserted, updated, unchanged, quarantined
  FROM run_table_totals;
COMMENT ON VIEW run_tables IS 'What each run loaded per warehouse table, over every attempt of the run, from its task checkpoints, or for a run compacted by retention from run_table_totals (runs before migration 0011 have no rows here). rows = inserted + updated + unchanged + quarantined.';
