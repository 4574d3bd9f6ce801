COMMENT ON TABLE api_bounds IS 'Upper bounds of request parameters that the spec does not show, as learned from the API: the largest value it accepted, and the smallest it refused';
COMMENT ON COLUMN api_bounds.operation IS 'the operation or endpoint (Get locations)';
COMMENT ON COLUMN api_bounds.param IS 'the parameter (size)';
