-- api_bounds holds the bound of limit of the paged endpoints too (issue
-- 18), not only the size of Get locations: its comments say so.

COMMENT ON TABLE api_bounds IS 'Upper bounds of request parameters that the spec does not show (spec 8.2), as learned from the API: the largest value it accepted, and the smallest it refused. Written by package pipeline: the limit of each paged backlink endpoint, the size of Get locations';
COMMENT ON COLUMN api_bounds.operation IS 'the endpoint (its catalog name, e.g. links) or the listing operation (Get locations)';
COMMENT ON COLUMN api_bounds.param IS 'the parameter: limit (a paged endpoint''s page size) or size (Get locations''s)';
