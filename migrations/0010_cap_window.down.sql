ALTER TABLE runs DROP COLUMN IF EXISTS cap_window;
COMMENT ON COLUMN runs.attempts IS 'how many processes worked on the run: 1, plus one per resume after a crash or an interrupt';
COMMENT ON COLUMN runs.status IS 'running (or its process died: the next run of the job resumes it), succeeded, partial (some tasks failed or were skipped, or rows were quarantined), failed, or interrupted (stopped by SIGINT/SIGTERM after its pages in flight committed; the next run of the job resumes it)';
UPDATE task_checkpoints SET status = 'skipped' WHERE status = 'refused';
ALTER TABLE task_checkpoints DROP CONSTRAINT task_checkpoints_status_check;
ALTER TABLE task_checkpoints ADD CONSTRAINT task_checkpoints_status_check
    CHECK (status IN ('running', 'done', 'failed', 'skipped'));
COMMENT ON COLUMN task_checkpoints.status IS 'running (pages remain), done, failed (see error) or skipped (see error: a cap, the API out of units, an interrupt)';
