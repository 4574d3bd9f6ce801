-- Budget: runs, the unit ledger and the usage counters the caps are checked
-- against.
--
-- Every request reserves its worst case (a row of unit_ledger) before it is
-- sent and is settled to what the API charged after its page commits. The
-- counters of budget_usage sum the ledger per cap scope (a run, a job's
-- month, a UTC day, a UTC month); reservations lock them, in key order, so
-- concurrent workers and processes never overspend together.

CREATE TABLE runs (
    run_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job         text        NOT NULL,
    trigger     text        NOT NULL DEFAULT 'manual' CHECK (trigger IN ('manual', 'schedule', 'backfill')),
    status      text        NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'succeeded', 'partial', 'failed')),
    started_at  timestamptz NOT NULL,
    finished_at timestamptz,
    rows        bigint,
    units       bigint,
    error       text
);
CREATE INDEX runs_job_started_idx ON runs (job, started_at);
COMMENT ON TABLE runs IS 'One row per run of a job.';
COMMENT ON COLUMN runs.run_id IS 'surrogate key, referenced by unit_ledger';
COMMENT ON COLUMN runs.job IS 'name of the job in the job spec';
COMMENT ON COLUMN runs.trigger IS 'what started the run: manual (etl run), schedule or backfill';
COMMENT ON COLUMN runs.status IS 'running, succeeded, partial (some tasks failed or were skipped, or rows were quarantined) or failed';
COMMENT ON COLUMN runs.started_at IS 'when the run started';
COMMENT ON COLUMN runs.finished_at IS 'when the run ended; NULL while it runs (or if its process died)';
COMMENT ON COLUMN runs.rows IS 'rows received (good and quarantined)';
COMMENT ON COLUMN runs.units IS 'API units the run spent, per the ledger';
COMMENT ON COLUMN runs.error IS 'why the run failed or stopped early, if it did';

CREATE TABLE unit_ledger (
    ledger_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id      bigint      REFERENCES runs,
    job         text        NOT NULL,
    endpoint    text        NOT NULL,
    target      text        NOT NULL,
    reserved    bigint      NOT NULL CHECK (reserved >= 0),
    spent       bigint      CHECK (spent >= 0 AND spent <= reserved),
    reserved_at timestamptz NOT NULL,
    settled_at  timestamptz
);
CREATE INDEX unit_ledger_reserved_at_idx ON unit_ledger (reserved_at);
CREATE INDEX unit_ledger_run_idx ON unit_ledger (run_id);
COMMENT ON TABLE unit_ledger IS 'One row per API request: its worst case reserved before it was sent, and the units it cost once settled.';
COMMENT ON COLUMN unit_ledger.ledger_id IS 'surrogate key';
COMMENT ON COLUMN unit_ledger.run_id IS 'the run that made the request (runs.run_id)';
COMMENT ON COLUMN unit_ledger.job IS 'name of the job';
COMMENT ON COLUMN unit_ledger.endpoint IS 'catalog name of the endpoint';
COMMENT ON COLUMN unit_ledger.target IS 'what the request was about: url and scope, a target set, or keyword, country and month';
COMMENT ON COLUMN unit_ledger.reserved IS 'units reserved before the request: its worst case (limit x price for per-line endpoints)';
COMMENT ON COLUMN unit_ledger.spent IS 'units the request cost, settled after its page committed; NULL until then, and the request counts as reserved (a page that broke mid-body stays at its reservation)';
COMMENT ON COLUMN unit_ledger.reserved_at IS 'when the units were reserved: the day and month the request counts in';
COMMENT ON COLUMN unit_ledger.settled_at IS 'when spent was settled';

CREATE TABLE budget_usage (
    key  text   PRIMARY KEY,
    used bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE budget_usage IS 'Units used per cap scope: the sum of unit_ledger (spent, or reserved while unsettled) per run, job and month, day, and month.';
COMMENT ON COLUMN budget_usage.key IS 'the scope: run:<run_id>, job:<name>:<YYYY-MM>, day:<YYYY-MM-DD> or month:<YYYY-MM> (UTC)';
COMMENT ON COLUMN budget_usage.used IS 'units reserved or spent in the scope';
