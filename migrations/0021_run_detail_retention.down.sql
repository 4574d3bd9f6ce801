-- Refused while task_closed_months holds a month: after keep_run_detail
-- compacted runs, it alone says which months of summary history were
-- fetched after they ended (the checkpoints that said so are gone), and
-- etl before 0021, which reads only the checkpoints, would buy them again.
DO $$
DECLARE
    n bigint := (SELECT count(*) FROM task_closed_months);
BEGIN
    IF n > 0 THEN
        RAISE EXCEPTION 'migration 0021 down: task_closed_months holds % month% of summary history that runs compacted by keep_run_detail fetched after it ended; etl before 0021 would buy % again. Keep migration 0021 (etl migrate force 21), or to go down all the same: DELETE FROM task_closed_months, etl migrate force 21, etl migrate goto 20 --yes',
            n, CASE WHEN n = 1 THEN '' ELSE 's' END, CASE WHEN n = 1 THEN 'it' ELSE 'them' END;
    END IF;
END $$;

-- Compacted runs lose their counts per table and status: the checkpoints
-- they were counted from are gone.
CREATE OR REPLACE VIEW run_tables AS
SELECT run_id, table_name, count(*) AS tasks, sum(rows)::bigint AS rows, sum(inserted)::bigint AS inserted,
       sum(updated)::bigint AS updated, sum(unchanged)::bigint AS unchanged, sum(rejected)::bigint AS quarantined
  FROM task_checkpoints
 WHERE table_name IS NOT NULL
 GROUP BY run_id, table_name;
COMMENT ON VIEW run_tables IS 'What each run loaded per warehouse table, over every attempt of the run, from its task checkpoints (runs before migration 0011 have no rows here). rows = inserted + updated + unchanged + quarantined.';
DROP TABLE IF EXISTS task_closed_months;
DROP TABLE IF EXISTS run_table_totals;
DROP TABLE IF EXISTS run_task_counts;
COMMENT ON COLUMN unit_ledger.target IS 'what the request was about: url and scope, a target set, or keyword, country and month';
ALTER TABLE unit_ledger DROP COLUMN IF EXISTS requests;
ALTER TABLE runs DROP COLUMN IF EXISTS compacted_at;
