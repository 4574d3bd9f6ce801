-- Multi-target endpoints: comparison and matrix ask about a set of up to 10
-- (comparison) or 6 (matrix) targets in one request.
--
-- A target set is the ordered url list of one request with its scope; its
-- members are ordinary targets, so comparison rows (one per target) land
-- per target like the overview, and matrix rows (one per referring domain
-- of the set) land per set. matrix_targets turns each matrix row into one
-- row per requested target, so gap analysis is plain SQL. Partitioned like
-- the other fact tables (RANGE by month, each month HASH by target or set).
-- Column comments of the fact tables come from the endpoint catalog.

CREATE TABLE target_sets (
    set_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text        NOT NULL,
    scope      text        NOT NULL CHECK (scope IN ('ROOT_DOMAIN', 'SUBDOMAIN', 'SUBFOLDER', 'PAGE')),
    urls       text[]      NOT NULL CHECK (cardinality(urls) > 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (name, scope, urls)
);
COMMENT ON TABLE target_sets IS 'Dimension of target sets: the targets one comparison or matrix request asks about together, in request order.';
COMMENT ON COLUMN target_sets.set_id IS 'surrogate key, referenced by matrix and target_set_members';
COMMENT ON COLUMN target_sets.name IS 'name of the set in the job spec';
COMMENT ON COLUMN target_sets.scope IS 'scope applied to every url of the set: ROOT_DOMAIN, SUBDOMAIN or PAGE';
COMMENT ON COLUMN target_sets.urls IS 'the targets as sent in the request, in order';
COMMENT ON COLUMN target_sets.created_at IS 'when the set was first collected';

CREATE TABLE target_set_members (
    set_id    bigint  NOT NULL REFERENCES target_sets,
    position  integer NOT NULL CHECK (position > 0),
    target_id bigint  NOT NULL REFERENCES targets,
    PRIMARY KEY (set_id, position),
    UNIQUE (set_id, target_id)
);
COMMENT ON TABLE target_set_members IS 'The targets of each target set, one row per url.';
COMMENT ON COLUMN target_set_members.set_id IS 'the set (target_sets.set_id)';
COMMENT ON COLUMN target_set_members.position IS '1-based position of the url in the request: the index into matrix.backlinks_counts';
COMMENT ON COLUMN target_set_members.target_id IS 'the target (targets.target_id)';

CREATE TABLE comparison (
    target_id       bigint      NOT NULL,
    month           date        NOT NULL,
    observed_at     timestamptz NOT NULL,
    score           bigint,
    backlinks_count bigint,
    domains_count   bigint,
    follows_count   bigint,
    month_date      date,
    url             text,
    PRIMARY KEY (target_id, month)
) PARTITION BY RANGE (month);

CREATE TABLE matrix (
    set_id           bigint      NOT NULL,
    month            date        NOT NULL,
    observed_at      timestamptz NOT NULL,
    domain           text        NOT NULL,
    domain_score     bigint,
    ip_address       text,
    country          text,
    backlinks_counts bigint[],
    matches_count    bigint,
    row_key          uuid NOT NULL GENERATED ALWAYS AS (md5("domain")::uuid) STORED,
    PRIMARY KEY (set_id, month, row_key)
) PARTITION BY RANGE (month);

CREATE VIEW matrix_targets AS
SELECT m.set_id, m.month, m.observed_at, m.domain, m.domain_score, m.ip_address, m.country, m.matches_count,
       s.position, s.target_id, t.url, m.backlinks_counts[s.position] AS backlinks_count
FROM matrix m
JOIN target_set_members s USING (set_id)
JOIN targets t USING (target_id);
COMMENT ON VIEW matrix_targets IS 'matrix with one row per referring domain and requested target: backlinks_count is what the domain sends to that target (0: none), so a gap is backlinks_count = 0 for you and > 0 for a competitor.';
COMMENT ON COLUMN matrix_targets.set_id IS 'target set of the request (target_sets.set_id)';
COMMENT ON COLUMN matrix_targets.month IS 'first day of the month the row describes';
COMMENT ON COLUMN matrix_targets.observed_at IS 'when the row was fetched from the API';
COMMENT ON COLUMN matrix_targets.domain IS 'referring domain';
COMMENT ON COLUMN matrix_targets.domain_score IS 'authority score of the referring domain, 0-100';
COMMENT ON COLUMN matrix_targets.ip_address IS 'IP address of the referring domain';
COMMENT ON COLUMN matrix_targets.country IS 'country of the referring domain, ISO 3166-1 alpha-2';
COMMENT ON COLUMN matrix_targets.matches_count IS 'how many of the set''s targets the domain refers to';
COMMENT ON COLUMN matrix_targets.position IS '1-based position of the target in the request';
COMMENT ON COLUMN matrix_targets.target_id IS 'the requested target (targets.target_id)';
COMMENT ON COLUMN matrix_targets.url IS 'the requested target''s url';
COMMENT ON COLUMN matrix_targets.backlinks_count IS 'backlinks from the domain to this target';

CREATE VIEW comparison_latest AS
SELECT t.* FROM comparison t
JOIN (SELECT target_id, max(month) AS month FROM comparison GROUP BY target_id) latest USING (target_id, month);
COMMENT ON VIEW comparison_latest IS 'The rows of each target''s latest month in comparison.';

CREATE VIEW matrix_latest AS
SELECT t.* FROM matrix t
JOIN (SELECT set_id, max(month) AS month FROM matrix GROUP BY set_id) latest USING (set_id, month);
COMMENT ON VIEW matrix_latest IS 'The rows of each target set''s latest month in matrix.';

-- The default privileges of 0003 grant etl_analyst SELECT on these already;
-- said again for databases where another role ran the migrations.
GRANT SELECT ON target_sets, target_set_members, comparison, matrix, matrix_targets, comparison_latest, matrix_latest TO etl_analyst;

COMMENT ON COLUMN quarantine.line IS '1-based line of the response body where the row starts; for a JSON answer (matrix), the row''s 1-based position in its data array';
COMMENT ON COLUMN quarantine.target_id IS 'target the request was about (targets.target_id); NULL for keyword metrics and for target sets (see request)';
