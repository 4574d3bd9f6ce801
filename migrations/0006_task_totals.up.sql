-- Task totals: how many rows a task's request has in all, as learned by a
-- run that read its data to the end, or by a probe of `etl plan --probe`
-- (a limit=1 answer's meta.total, or the target's overview). `etl plan`
-- prices per-line tasks with them.
--
-- Probes spend units like any request, through the ledger, in runs of
-- their own whose trigger is 'probe'.

CREATE TABLE task_totals (
    endpoint    text        NOT NULL,
    request     text        NOT NULL,
    filter      text        NOT NULL DEFAULT '',
    total       bigint      NOT NULL CHECK (total >= 0),
    source      text        NOT NULL CHECK (source IN ('run', 'meta.total', 'overview')),
    observed_at timestamptz NOT NULL,
    PRIMARY KEY (endpoint, request, filter)
);
COMMENT ON TABLE task_totals IS 'Row total of each task''s request, the latest learned: by a run that read the data to its end, or by a probe (etl plan --probe). etl plan prices per-line tasks with it.';
COMMENT ON COLUMN task_totals.endpoint IS 'catalog name of the endpoint';
COMMENT ON COLUMN task_totals.request IS 'what the task asks about: url and scope, or urls and scope of a target set (as unit_ledger.target)';
COMMENT ON COLUMN task_totals.filter IS 'what narrows the rows besides the target: the filter expression as in the job spec, and summary''s date_from= / date_to=; empty for none';
COMMENT ON COLUMN task_totals.total IS 'rows the request has in all, before limit, offset and max_rows';
COMMENT ON COLUMN task_totals.source IS 'how it was learned: run (a run counted the rows to the end of the data), meta.total (a probe''s limit=1 answer) or overview (a probe''s overview count, e.g. backlinks_count for links)';
COMMENT ON COLUMN task_totals.observed_at IS 'when it was learned';

ALTER TABLE runs DROP CONSTRAINT runs_trigger_check;
ALTER TABLE runs ADD CONSTRAINT runs_trigger_check CHECK (trigger IN ('manual', 'schedule', 'backfill', 'probe'));
COMMENT ON COLUMN runs.trigger IS 'what started the run: manual (etl run), schedule, backfill, or probe (etl plan --probe: its requests only learn row totals)';
