-- Runs that survive: per-task checkpoints, resumed runs, and the ticks of
-- the scheduler.
--
-- A task's checkpoint is written in the transaction of each page it loads,
-- with the page's rows and its units (unit_ledger), so after a crash the
-- run resumes every unfinished task from its last committed page and no
-- page's effects happen twice. Schedulers sharing the database claim each
-- tick of a job's cron schedule here, so a tick runs once however many
-- schedulers see it.

ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'succeeded', 'partial', 'failed', 'interrupted'));
ALTER TABLE runs
    ADD COLUMN attempts      integer     NOT NULL DEFAULT 1 CHECK (attempts >= 1),
    ADD COLUMN resumed_at    timestamptz,
    ADD COLUMN scheduled_for timestamptz,
    ADD COLUMN host          text;
COMMENT ON COLUMN runs.status IS 'running (or its process died: the next run of the job resumes it), succeeded, partial (some tasks failed or were skipped, or rows were quarantined), failed, or interrupted (stopped by SIGINT/SIGTERM after its pages in flight committed; the next run of the job resumes it)';
COMMENT ON COLUMN runs.attempts IS 'how many processes worked on the run: 1, plus one per resume after a crash or an interrupt';
COMMENT ON COLUMN runs.resumed_at IS 'when the run was last resumed; NULL if never';
COMMENT ON COLUMN runs.scheduled_for IS 'the tick of the job''s cron schedule the run is for (trigger schedule); NULL otherwise';
COMMENT ON COLUMN runs.host IS 'host and process id of the process that last worked on the run';
CREATE INDEX runs_job_status_idx ON runs (job, status) WHERE status IN ('running', 'interrupted');

CREATE TABLE task_checkpoints (
    run_id      bigint      NOT NULL REFERENCES runs ON DELETE CASCADE,
    task        text        NOT NULL,
    endpoint    text        NOT NULL,
    name        text        NOT NULL,
    month       date,
    status      text        NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'failed', 'skipped')),
    next_offset bigint      NOT NULL DEFAULT 0 CHECK (next_offset >= 0),
    pages       integer     NOT NULL DEFAULT 0,
    rows        bigint      NOT NULL DEFAULT 0,
    rejected    bigint      NOT NULL DEFAULT 0,
    units       bigint      NOT NULL DEFAULT 0,
    since       timestamptz,
    error       text,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (run_id, task)
);
CREATE INDEX task_checkpoints_task_idx ON task_checkpoints (task, updated_at);
COMMENT ON TABLE task_checkpoints IS 'One row per task of a run: how far it got. Written in the transaction of every page the task loads, with the page''s rows and units.';
COMMENT ON COLUMN task_checkpoints.run_id IS 'the run (runs.run_id)';
COMMENT ON COLUMN task_checkpoints.task IS 'the task''s identity: endpoint and request parameters, without paging; equal across runs for the same work';
COMMENT ON COLUMN task_checkpoints.endpoint IS 'catalog name of the endpoint';
COMMENT ON COLUMN task_checkpoints.name IS 'the task in words, as logs and summaries name it';
COMMENT ON COLUMN task_checkpoints.month IS 'the month the task''s rows describe, where it asks for one (keyword metrics, a backfill''s summary month); NULL otherwise';
COMMENT ON COLUMN task_checkpoints.status IS 'running (pages remain), done, failed (see error) or skipped (see error: a cap, the API out of units, an interrupt)';
COMMENT ON COLUMN task_checkpoints.next_offset IS 'the offset of the next page to fetch: rows committed so far';
COMMENT ON COLUMN task_checkpoints.pages IS 'pages committed';
COMMENT ON COLUMN task_checkpoints.rows IS 'rows committed (good and quarantined)';
COMMENT ON COLUMN task_checkpoints.rejected IS 'rows quarantined';
COMMENT ON COLUMN task_checkpoints.units IS 'API units the committed pages cost';
COMMENT ON COLUMN task_checkpoints.since IS 'for an incremental task, the watermark its pages were asked past (filter field > since; the zero time: all rows); a resumed attempt asks past the same one, at next_offset';
COMMENT ON COLUMN task_checkpoints.error IS 'why the task failed or was skipped';
COMMENT ON COLUMN task_checkpoints.updated_at IS 'when the checkpoint was last written';

CREATE TABLE schedule_ticks (
    job        text        NOT NULL,
    tick       timestamptz NOT NULL,
    claimed_by text        NOT NULL,
    claimed_at timestamptz NOT NULL,
    outcome    text        NOT NULL DEFAULT 'claimed',
    run_id     bigint      REFERENCES runs ON DELETE SET NULL,
    PRIMARY KEY (job, tick)
);
COMMENT ON TABLE schedule_ticks IS 'Each tick of a job''s cron schedule, claimed by the one scheduler that handles it.';
COMMENT ON COLUMN schedule_ticks.job IS 'name of the job';
COMMENT ON COLUMN schedule_ticks.tick IS 'the time the cron schedule named';
COMMENT ON COLUMN schedule_ticks.claimed_by IS 'host and process id of the scheduler that claimed it';
COMMENT ON COLUMN schedule_ticks.claimed_at IS 'when it was claimed';
COMMENT ON COLUMN schedule_ticks.outcome IS 'claimed (the run is starting), ran, caught up (a missed tick run late, after the scheduler was down), skipped: why (the job still running from an earlier tick), or failed: why (the run could not start)';
COMMENT ON COLUMN schedule_ticks.run_id IS 'the run the tick started (runs.run_id)';
