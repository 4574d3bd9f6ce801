DROP VIEW IF EXISTS matrix_latest;
DROP VIEW IF EXISTS comparison_latest;
DROP VIEW IF EXISTS matrix_targets;
DROP TABLE IF EXISTS matrix;
DROP TABLE IF EXISTS comparison;
DROP TABLE IF EXISTS target_set_members;
DROP TABLE IF EXISTS target_sets;
