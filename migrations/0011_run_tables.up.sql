-- What each run loaded per table: the inserted, updated and unchanged rows
-- of every task, on its checkpoint, so they commit in the transaction of
-- each page with the page's rows and units. A run taken up again (resumed
-- or continued) goes on counting from what its earlier attempts committed,
-- and a crash loses nothing that committed: the counts are those of the
-- whole run, like task_checkpoints.rows and runs.rows. The view run_tables
-- sums them per run and table (etl runs show prints it).

ALTER TABLE task_checkpoints
    ADD COLUMN table_name text,
    ADD COLUMN inserted   bigint CHECK (inserted >= 0),
    ADD COLUMN updated    bigint CHECK (updated >= 0),
    ADD COLUMN unchanged  bigint CHECK (unchanged >= 0);
COMMENT ON COLUMN task_checkpoints.table_name IS 'the warehouse table the task loads; NULL on checkpoints written before migration 0011';
COMMENT ON COLUMN task_checkpoints.inserted IS 'rows the task''s committed pages added to its table, over every attempt of the run; NULL before migration 0011';
COMMENT ON COLUMN task_checkpoints.updated IS 'rows the task''s committed pages changed in its table (the later observation won), over every attempt of the run; NULL before migration 0011';
COMMENT ON COLUMN task_checkpoints.unchanged IS 'rows the task''s committed pages found equal to what the table held (or repeated within a page), over every attempt of the run; NULL before migration 0011';

CREATE VIEW run_tables AS
SELECT run_id, table_name, count(*) AS tasks, sum(rows)::bigint AS rows, sum(inserted)::bigint AS inserted,
       sum(updated)::bigint AS updated, sum(unchanged)::bigint AS unchanged, sum(rejected)::bigint AS quarantined
  FROM task_checkpoints
 WHERE table_name IS NOT NULL
 GROUP BY run_id, table_name;
COMMENT ON VIEW run_tables IS 'What each run loaded per warehouse table, over every attempt of the run, from its task checkpoints (runs before migration 0011 have no rows here). rows = inserted + updated + unchanged + quarantined.';
COMMENT ON COLUMN run_tables.run_id IS 'the run (runs.run_id)';
COMMENT ON COLUMN run_tables.table_name IS 'the warehouse table';
COMMENT ON COLUMN run_tables.tasks IS 'tasks of the run that load the table';
COMMENT ON COLUMN run_tables.rows IS 'rows received for the table (good and quarantined), as task_checkpoints.rows and runs.rows count them';
COMMENT ON COLUMN run_tables.inserted IS 'rows added to the table';
COMMENT ON COLUMN run_tables.updated IS 'rows changed in the table (the later observation won)';
COMMENT ON COLUMN run_tables.unchanged IS 'rows equal to what the table held, or repeated within a page';
COMMENT ON COLUMN run_tables.quarantined IS 'rows that could not be parsed, kept in the quarantine table';
-- The default privileges of 0003 grant etl_analyst SELECT on it already;
-- granted again for a database whose earlier migrations ran as another role.
GRANT SELECT ON run_tables TO etl_analyst;
