DROP INDEX IF EXISTS task_checkpoints_done_idx;
DELETE FROM task_checkpoints WHERE status = 'held';
ALTER TABLE task_checkpoints DROP CONSTRAINT task_checkpoints_status_check;
ALTER TABLE task_checkpoints ADD CONSTRAINT task_checkpoints_status_check
    CHECK (status IN ('running', 'done', 'failed', 'skipped', 'refused'));
ALTER TABLE task_checkpoints
    DROP COLUMN IF EXISTS held_by,
    DROP COLUMN IF EXISTS held_units,
    DROP COLUMN IF EXISTS asked_from,
    DROP COLUMN IF EXISTS asked_to,
    DROP COLUMN IF EXISTS max_rows;
COMMENT ON COLUMN task_checkpoints.status IS 'running (pages remain), done, failed (see error), skipped (see error: a cap, the API out of units, an interrupt) or refused (see error: the task can never run as specified, e.g. one request costs more than a whole cap, or the API refused the request as invalid); a continuation of the run goes on with running, failed and skipped tasks, not refused ones';
