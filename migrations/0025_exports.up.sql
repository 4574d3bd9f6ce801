-- Parquet export (issue 27): `etl export --to DIR` writes each partition of
-- the fact tables (and the dimensions) as a Parquet file under DIR, and
-- records here what it wrote, so that a partition whose rows have not
-- changed since is not written again, and the manifest of each table can
-- list every file of the lake, also those of partitions retention dropped.

CREATE TABLE export_files (
    dest        text        NOT NULL,
    table_name  text        NOT NULL,
    partition   text        NOT NULL,
    file        text        NOT NULL,
    rows        bigint      NOT NULL CHECK (rows >= 0),
    bytes       bigint      NOT NULL CHECK (bytes >= 0),
    sha256      text        NOT NULL,
    fingerprint text        NOT NULL,
    exported_at timestamptz NOT NULL,
    PRIMARY KEY (dest, table_name, partition)
);
COMMENT ON TABLE export_files IS 'The Parquet files etl export (and retention with export_to) wrote: one row per destination folder, table and partition, the latest file written for it.';
COMMENT ON COLUMN export_files.dest IS 'the destination folder, as an absolute path';
COMMENT ON COLUMN export_files.table_name IS 'the warehouse table exported (a fact table or a dimension)';
COMMENT ON COLUMN export_files.partition IS 'the Hive-style folder of the partition, e.g. month=2026-11-01 or year=2026; empty for a table exported whole (the dimensions)';
COMMENT ON COLUMN export_files.file IS 'the file, relative to the table''s folder, e.g. month=2026-11-01/part-0.parquet';
COMMENT ON COLUMN export_files.rows IS 'rows in the file';
COMMENT ON COLUMN export_files.bytes IS 'size of the file in bytes';
COMMENT ON COLUMN export_files.sha256 IS 'SHA-256 of the file, in hex';
COMMENT ON COLUMN export_files.fingerprint IS 'what the partition held when it was exported (a fact partition: its row count, the sum of its rows'' creating transaction ids and its newest observed_at; a dimension: its row count and the md5 of its rows): an export skips a partition whose fingerprint is unchanged and whose file is still there';
COMMENT ON COLUMN export_files.exported_at IS 'when the file was written';
