DROP TABLE IF EXISTS export_files;
