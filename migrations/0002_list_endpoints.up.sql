-- The fact tables of the per-target list endpoints: links, referring
-- domains and IPs, indexed pages, anchors, score profile, competitors.
-- Partitioned like the others (RANGE by month, each month HASH by target,
-- created on demand by the loader). Where a row's natural key holds text
-- (URLs, anchors), a generated row_key (md5 of the key) is the primary key
-- instead: long text cannot be a btree entry. Column comments come from the
-- endpoint catalog (etl migrate up).

CREATE TABLE backlinks (
    target_id            bigint NOT NULL,
    month                date NOT NULL,
    observed_at          timestamptz NOT NULL,
    source_url           text NOT NULL,
    target_url           text NOT NULL,
    anchor               text NOT NULL,
    redirect_url         text,
    source_title         text,
    target_title         text,
    image_url            text NOT NULL,
    image_alt            text,
    ip_address           text,
    lang                 text,
    source_size          bigint,
    external_links_count bigint,
    internal_links_count bigint,
    response_code        bigint,
    page_score           bigint,
    domain_score         bigint,
    first_seen_at        timestamptz,
    last_seen_at         timestamptz,
    source_domain        text,
    is_nofollow          boolean,
    is_ugc               boolean,
    is_sponsored         boolean,
    is_form              boolean,
    is_frame             boolean,
    is_image             boolean,
    is_sitewide_main     boolean,
    is_new               boolean,
    is_lost              boolean,
    row_key              uuid NOT NULL GENERATED ALWAYS AS (md5("source_url" || E'\x1f' || "target_url" || E'\x1f' || "anchor" || E'\x1f' || "image_url")::uuid) STORED,
    PRIMARY KEY (target_id, month, row_key)
) PARTITION BY RANGE (month);

CREATE TABLE ref_domains (
    target_id       bigint NOT NULL,
    month           date NOT NULL,
    observed_at     timestamptz NOT NULL,
    domain          text NOT NULL,
    ip_address      text,
    country         text,
    backlinks_count bigint,
    domain_score    bigint,
    first_seen_at   timestamptz,
    last_seen_at    timestamptz,
    is_follow       boolean,
    is_new          boolean,
    is_lost         boolean,
    row_key         uuid NOT NULL GENERATED ALWAYS AS (md5("domain")::uuid) STORED,
    PRIMARY KEY (target_id, month, row_key)
) PARTITION BY RANGE (month);

CREATE TABLE ref_ips (
    target_id       bigint NOT NULL,
    month           date NOT NULL,
    observed_at     timestamptz NOT NULL,
    ip_address      text NOT NULL,
    country         text,
    backlinks_count bigint,
    domains_count   bigint,
    first_seen_at   timestamptz,
    last_seen_at    timestamptz,
    row_key         uuid NOT NULL GENERATED ALWAYS AS (md5("ip_address")::uuid) STORED,
    PRIMARY KEY (target_id, month, row_key)
) PARTITION BY RANGE (month);

CREATE TABLE indexed_pages (
    target_id            bigint NOT NULL,
    month                date NOT NULL,
    observed_at          timestamptz NOT NULL,
    source_url           text NOT NULL,
    source_title         text,
    response_code        bigint,
    backlinks_count      bigint,
    domains_count        bigint,
    external_links_count bigint,
    internal_links_count bigint,
    first_seen_at        timestamptz,
    last_seen_at         timestamptz,
    row_key              uuid NOT NULL GENERATED ALWAYS AS (md5("source_url")::uuid) STORED,
    PRIMARY KEY (target_id, month, row_key)
) PARTITION BY RANGE (month);

CREATE TABLE anchors (
    target_id       bigint NOT NULL,
    month           date NOT NULL,
    observed_at     timestamptz NOT NULL,
    anchor          text NOT NULL,
    backlinks_count bigint,
    domains_count   bigint,
    first_seen_at   timestamptz,
    last_seen_at    timestamptz,
    row_key         uuid NOT NULL GENERATED ALWAYS AS (md5("anchor")::uuid) STORED,
    PRIMARY KEY (target_id, month, row_key)
) PARTITION BY RANGE (month);

CREATE TABLE score_profile (
    target_id     bigint NOT NULL,
    month         date NOT NULL,
    observed_at   timestamptz NOT NULL,
    domain_score  bigint NOT NULL,
    domains_count bigint,
    PRIMARY KEY (target_id, month, domain_score)
) PARTITION BY RANGE (month);

CREATE TABLE competitors (
    target_id         bigint NOT NULL,
    month             date NOT NULL,
    observed_at       timestamptz NOT NULL,
    domain            text NOT NULL,
    similarity        double precision,
    common_refdomains bigint,
    row_key           uuid NOT NULL GENERATED ALWAYS AS (md5("domain")::uuid) STORED,
    PRIMARY KEY (target_id, month, row_key)
) PARTITION BY RANGE (month);
