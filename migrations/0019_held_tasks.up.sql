-- Pay once (issue 23): a task whose data the warehouse holds fresh is held,
-- not bought again, and summary history asks only for the months it does
-- not hold as closed. task_checkpoints records held tasks, and what each
-- done task asked for, so that later runs can tell what they hold.

ALTER TABLE task_checkpoints DROP CONSTRAINT task_checkpoints_status_check;
ALTER TABLE task_checkpoints ADD CONSTRAINT task_checkpoints_status_check
    CHECK (status IN ('running', 'done', 'failed', 'skipped', 'refused', 'held'));
ALTER TABLE task_checkpoints
    ADD COLUMN held_by    bigint,
    ADD COLUMN held_units bigint CHECK (held_units >= 0),
    ADD COLUMN asked_from date,
    ADD COLUMN asked_to   date,
    ADD COLUMN max_rows   integer CHECK (max_rows > 0);
COMMENT ON COLUMN task_checkpoints.status IS 'running (pages remain), done, failed (see error), skipped (see error: a cap, the API out of units, an interrupt), refused (see error: the task can never run as specified, e.g. one request costs more than a whole cap, or the API refused the request as invalid; a continuation of the run goes on with running, failed and skipped tasks, not refused ones), or held (not sent: the warehouse holds its data fresh, within max_age, or as closed months; see error and held_by)';
COMMENT ON COLUMN task_checkpoints.held_by IS 'for a held task, the run whose fetch of the same request it holds (runs.run_id); NULL otherwise';
COMMENT ON COLUMN task_checkpoints.held_units IS 'for a held task, the API units buying it again would have cost (what the fetch it holds cost); NULL otherwise';
COMMENT ON COLUMN task_checkpoints.asked_from IS 'for a request of a range of months (summary), the oldest month it asked for (its date_from, or the oldest its limit reaches); NULL otherwise';
COMMENT ON COLUMN task_checkpoints.asked_to IS 'for a request of a range of months (summary), the newest month it asked for; NULL otherwise';
COMMENT ON COLUMN task_checkpoints.max_rows IS 'the task''s max_rows when it ran (the most rows it asked for); NULL: all rows';
CREATE INDEX task_checkpoints_done_idx ON task_checkpoints (task, updated_at DESC) WHERE status = 'done';
