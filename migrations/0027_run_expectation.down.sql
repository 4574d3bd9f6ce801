DROP VIEW IF EXISTS spend_by_run;
ALTER TABLE runs DROP COLUMN IF EXISTS expected_units;
