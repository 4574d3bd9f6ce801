-- Probe runs become manual ones: their ledger rows stay, and the older
-- check holds again.
UPDATE runs SET trigger = 'manual' WHERE trigger = 'probe';
ALTER TABLE runs DROP CONSTRAINT runs_trigger_check;
ALTER TABLE runs ADD CONSTRAINT runs_trigger_check CHECK (trigger IN ('manual', 'schedule', 'backfill'));
COMMENT ON COLUMN runs.trigger IS 'what started the run: manual (etl run), schedule or backfill';
DROP TABLE IF EXISTS task_totals;
