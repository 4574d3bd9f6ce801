DROP TABLE IF EXISTS schedule_ticks;
DROP TABLE IF EXISTS task_checkpoints;
DROP INDEX IF EXISTS runs_job_status_idx;
UPDATE runs SET status = 'failed' WHERE status = 'interrupted';
ALTER TABLE runs DROP COLUMN IF EXISTS attempts, DROP COLUMN IF EXISTS resumed_at,
    DROP COLUMN IF EXISTS scheduled_for, DROP COLUMN IF EXISTS host;
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN ('running', 'succeeded', 'partial', 'failed'));
COMMENT ON COLUMN runs.status IS 'running, succeeded, partial (some tasks failed or were skipped, or rows were quarantined) or failed';
