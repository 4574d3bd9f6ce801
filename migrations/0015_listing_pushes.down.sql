DROP VIEW IF EXISTS listing_push_latest;
DROP TABLE IF EXISTS listing_push_items;
DROP TABLE IF EXISTS listing_pushes;
