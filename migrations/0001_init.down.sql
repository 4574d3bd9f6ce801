DROP TABLE IF EXISTS quarantine;
DROP TABLE IF EXISTS keyword_metrics;
DROP TABLE IF EXISTS backlink_history;
DROP TABLE IF EXISTS backlink_overview;
DROP TABLE IF EXISTS targets;
