-- What etl plan expected a run to cost, kept with the run, so the spend
-- of each run can be set against it (issue 26).
ALTER TABLE runs ADD COLUMN expected_units bigint CHECK (expected_units >= 0);
COMMENT ON COLUMN runs.expected_units IS 'the API units the plan expected the run to cost when it started (etl run and etl schedule price its tasks as etl plan does: rows learned, held tasks at 0); NULL when no plan was made (a backfill) or it could not price every task';

CREATE VIEW spend_by_run AS
SELECT r.run_id, r.job, r.trigger, r.status, r.started_at, r.finished_at,
       coalesce(sum(l.requests), 0)::bigint AS requests,
       coalesce(sum(coalesce(l.spent, l.reserved)), 0)::bigint AS units,
       r.expected_units,
       coalesce(sum(coalesce(l.spent, l.reserved)), 0)::bigint - r.expected_units AS over_expected
FROM runs r
LEFT JOIN unit_ledger l ON l.run_id = r.run_id
GROUP BY r.run_id;
COMMENT ON VIEW spend_by_run IS 'API units per run, from unit_ledger, beside what the plan expected when the run started (runs.expected_units). A filter on run_id or job narrows it to those runs.';
COMMENT ON COLUMN spend_by_run.run_id IS 'the run (runs.run_id)';
COMMENT ON COLUMN spend_by_run.job IS 'name of the job';
COMMENT ON COLUMN spend_by_run.trigger IS 'what started the run: manual, schedule, backfill or probe';
COMMENT ON COLUMN spend_by_run.status IS 'the run''s status (runs.status)';
COMMENT ON COLUMN spend_by_run.started_at IS 'when the run started';
COMMENT ON COLUMN spend_by_run.finished_at IS 'when it ended; NULL while it runs';
COMMENT ON COLUMN spend_by_run.requests IS 'API requests it made (a ledger row compacted by retention counts its requests)';
COMMENT ON COLUMN spend_by_run.units IS 'units they cost (unsettled ones at their reservation)';
COMMENT ON COLUMN spend_by_run.expected_units IS 'what the plan expected the run to cost when it started; NULL when none was made';
COMMENT ON COLUMN spend_by_run.over_expected IS 'units - expected_units: what the run cost beyond the plan''s expectation (negative: below it); NULL without one';
