// Package export writes the warehouse to a lake of Parquet files that any
// engine reads (DuckDB, Spark, Trino, BigQuery external tables): one folder
// per table, and below a fact table one Hive-style folder per partition of
// the warehouse (month=2026-11-01 for the tables partitioned by month,
// year=2026 for those partitioned by year, as load.LayoutOf decides), each
// holding one file, part-0.parquet. The dimensions that the facts need to
// be read (targets, target_sets, target_set_members) are exported whole.
//
// Rows are read through a server-side cursor in a REPEATABLE READ
// transaction, a batch at a time, gathered into one Arrow record per row
// group of Config.RowGroupRows rows and written with arrow's pqarrow, a
// column at a time: memory stays flat however large a partition is. Files
// are zstd-compressed, plain-encoded (no dictionaries, so that the same
// rows make the same bytes: see encode), carry column statistics,
// timestamps as UTC instants with their logical type, and the
// warehouse's comments (COMMENT ON) as metadata. Files and folders get
// the modes cp and mkdir -p would (0666 and 0777 less the umask).
//
// An export is incremental and atomic: table export_files records each
// file written with the partition's fingerprint (its row count, the sum of
// its rows' creating transaction ids and its newest observed_at, which
// every insert, update and delete changes; for a dimension, the md5 of its
// rows), so a partition unchanged since its last export is not
// written again; each file is written under a temporary name, synced,
// renamed into place and its folder synced, so that a reader never sees
// half a file and a killed export leaves none behind (the next export
// removes its temporary files). Two exports to one folder never run at
// once: each takes an advisory lock on the folder's real path (symbolic
// links resolved) before it writes anything. Each table folder has a manifest,
// _manifest.json, listing its files with their rows, sizes and SHA-256.
//
// BeforeDrop is the hook the retention policy (load.Retention) calls to
// export a partition before dropping it.
package export
