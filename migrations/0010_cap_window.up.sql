-- Runs a cap, the API's 403 or failed tasks stopped are continued by the
-- next run of the job in the same month, in a new per_run cap window: the
-- same run and checkpoints (done tasks stay done, the others go on from
-- their saved offset), a fresh per_run allowance (budget_usage key
-- run:ID/WINDOW).

ALTER TABLE runs ADD COLUMN cap_window integer NOT NULL DEFAULT 1 CHECK (cap_window >= 1);
COMMENT ON COLUMN runs.cap_window IS 'the run''s per_run cap window: 1, plus one each time the run was continued after a cap, the API''s 403 or failed tasks stopped it (each window may spend per_run; a resume after a crash or an interrupt keeps the window)';
COMMENT ON COLUMN runs.attempts IS 'how many processes worked on the run: 1, plus one per resume (after a crash or an interrupt) or continuation (after a cap, a 403 or failed tasks stopped it)';
COMMENT ON COLUMN runs.status IS 'running (or its process died: the next run of the job resumes it), succeeded, partial (some tasks failed or were skipped, or rows were quarantined; when tasks were left unfinished the next run of the job in the same month continues it), failed (likewise), or interrupted (stopped by SIGINT/SIGTERM after its pages in flight committed; the next run of the job resumes it)';

ALTER TABLE task_checkpoints DROP CONSTRAINT task_checkpoints_status_check;
ALTER TABLE task_checkpoints ADD CONSTRAINT task_checkpoints_status_check
    CHECK (status IN ('running', 'done', 'failed', 'skipped', 'refused'));
COMMENT ON COLUMN task_checkpoints.status IS 'running (pages remain), done, failed (see error), skipped (see error: a cap, the API out of units, an interrupt) or refused (see error: the task can never run as specified, e.g. one request costs more than a whole cap, or the API refused the request as invalid); a continuation of the run goes on with running, failed and skipped tasks, not refused ones';
