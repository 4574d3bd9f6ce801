DROP VIEW IF EXISTS listings_current;
DROP TABLE IF EXISTS listing_problems;
DROP TABLE IF EXISTS listing_versions;
