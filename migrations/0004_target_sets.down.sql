DROP VIEW IF EXISTS matrix_latest;
DROP VIEW IF EXISTS comparison_latest;
DROP VIEW IF EXISTS matrix_targets;
DROP TABLE IF EXISTS matrix;
DROP TABLE IF EXISTS comparison;
DROP TABLE IF EXISTS target_set_members;
DROP TABLE IF EXISTS target_sets;
COMMENT ON COLUMN quarantine.line IS '1-based line of the response body where the row starts';
COMMENT ON COLUMN quarantine.target_id IS 'target the request was about (targets.target_id); NULL for keyword metrics';
