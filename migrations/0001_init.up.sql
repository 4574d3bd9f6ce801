-- Foundation schema: the targets dimension and the fact tables of the first
-- slice (overview, summary history, keyword metrics).
--
-- Fact tables are partitioned by RANGE (month); the loader creates each month
-- partition on demand, itself partitioned by HASH on the target (or keyword)
-- with a fixed modulus, so the partition count grows with months, never with
-- the number of targets. Column comments are applied from the endpoint
-- catalog by `etl migrate up` (one home for the spec's meanings).

CREATE TABLE targets (
    target_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url        text        NOT NULL,
    scope      text        NOT NULL CHECK (scope IN ('ROOT_DOMAIN', 'SUBDOMAIN', 'SUBFOLDER', 'PAGE')),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (url, scope)
);

CREATE TABLE backlink_overview (
    target_id        bigint      NOT NULL,
    month            date        NOT NULL,
    observed_at      timestamptz NOT NULL,
    backlinks_count  bigint,
    domains_count    bigint,
    urls_count       bigint,
    follows_count    bigint,
    nofollows_count  bigint,
    sponsored_count  bigint,
    ugc_count        bigint,
    frames_count     bigint,
    forms_count      bigint,
    images_count     bigint,
    texts_count      bigint,
    ips_count        bigint,
    ip_class_c_count bigint,
    new_count        bigint,
    lost_count       bigint,
    score            bigint,
    PRIMARY KEY (target_id, month)
) PARTITION BY RANGE (month);

CREATE TABLE backlink_history (
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

CREATE TABLE keyword_metrics (
    keyword             text        NOT NULL,
    country             text        NOT NULL,
    month               date        NOT NULL,
    observed_at         timestamptz NOT NULL,
    competitive_density bigint,
    cpc                 numeric,
    intents             text[],
    keyword_difficulty  bigint,
    number_of_results   bigint,
    search_volume       bigint,
    serp_features       text[],
    trends              bigint[],
    PRIMARY KEY (keyword, country, month)
) PARTITION BY RANGE (month);

CREATE TABLE quarantine (
    quarantine_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    observed_at   timestamptz NOT NULL DEFAULT now(),
    endpoint      text        NOT NULL,
    target_id     bigint,
    request       text        NOT NULL,
    line          integer     NOT NULL,
    raw           text        NOT NULL,
    raw_bytes     bytea,
    reason        text        NOT NULL
);
CREATE INDEX quarantine_observed_at_idx ON quarantine (observed_at);

COMMENT ON TABLE quarantine IS 'Rows the API sent that could not be parsed, kept with their raw text so nothing is lost; the run goes on without them.';
COMMENT ON COLUMN quarantine.quarantine_id IS 'surrogate key';
COMMENT ON COLUMN quarantine.observed_at IS 'when the row was fetched';
COMMENT ON COLUMN quarantine.endpoint IS 'catalog name of the endpoint that sent the row';
COMMENT ON COLUMN quarantine.target_id IS 'target the request was about (targets.target_id); NULL for keyword metrics';
COMMENT ON COLUMN quarantine.request IS 'what was requested: url and scope, or keyword, country and month';
COMMENT ON COLUMN quarantine.line IS '1-based line of the response body where the row starts';
COMMENT ON COLUMN quarantine.raw IS 'the row as the API sent it (bytes that are not valid UTF-8, and NUL, shown as U+FFFD)';
COMMENT ON COLUMN quarantine.raw_bytes IS 'the row''s exact bytes when raw had to replace some; NULL when raw is exact';
COMMENT ON COLUMN quarantine.reason IS 'why the row could not be parsed, naming the column';

COMMENT ON TABLE targets IS 'Dimension of backlink targets: one row per url as given in the job spec and scope.';
COMMENT ON COLUMN targets.target_id IS 'surrogate key, referenced by every per-target fact table';
COMMENT ON COLUMN targets.url IS 'target exactly as given in the job spec (domain, subdomain, folder or page URL)';
COMMENT ON COLUMN targets.scope IS 'ROOT_DOMAIN, SUBDOMAIN, SUBFOLDER or PAGE';
COMMENT ON COLUMN targets.created_at IS 'when the target was first collected';
