DROP TABLE IF EXISTS listing_push_requests;
