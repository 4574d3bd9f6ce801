-- Bounds the API accepts but the spec does not show (issue 16; spec 8.2:
-- "Upper bound accepted for limit and size: not shown"): learned by asking
-- and remembered here, so each is probed once per API, not once per run.
-- Written by package pipeline (the size of Get locations).

CREATE TABLE api_bounds (
    api        text NOT NULL,
    operation  text NOT NULL,
    param      text NOT NULL,
    accepted   integer NOT NULL CHECK (accepted >= 1),
    refused    integer CHECK (refused > accepted),
    how        text NOT NULL CHECK (how IN ('named', 'probed', 'assumed')),
    learned_at timestamptz NOT NULL,
    PRIMARY KEY (api, operation, param)
);
COMMENT ON TABLE api_bounds IS 'Upper bounds of request parameters that the spec does not show, as learned from the API: the largest value it accepted, and the smallest it refused';
COMMENT ON COLUMN api_bounds.api IS 'the API''s origin (scheme://host:port of ETL_API_URL): another API may have other bounds';
COMMENT ON COLUMN api_bounds.operation IS 'the operation or endpoint (Get locations)';
COMMENT ON COLUMN api_bounds.param IS 'the parameter (size)';
COMMENT ON COLUMN api_bounds.accepted IS 'the largest value the API accepted: the value sent from now on';
COMMENT ON COLUMN api_bounds.refused IS 'the smallest value the API refused as too large; NULL when none was refused';
COMMENT ON COLUMN api_bounds.how IS 'named (the refusal stated the bound), probed (found by halving between a refused and an accepted value) or assumed (the probe gave up: the default is used)';
COMMENT ON COLUMN api_bounds.learned_at IS 'when it was learned; a refusal of the accepted value later learns it again';

GRANT SELECT ON api_bounds TO etl_analyst;
