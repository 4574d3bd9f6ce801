DROP VIEW IF EXISTS run_tables;
ALTER TABLE task_checkpoints
    DROP COLUMN IF EXISTS table_name,
    DROP COLUMN IF EXISTS inserted,
    DROP COLUMN IF EXISTS updated,
    DROP COLUMN IF EXISTS unchanged;
