-- Back to the layout of 0015: a partition per month, HASH-partitioned 8
-- ways below (on target_id; matrix: set_id; keyword metrics: keyword),
-- named <table>_pYYYYMM and <table>_pYYYYMM_hNN; the *_latest views group
-- the whole table again, and latest_months, keyword_latest_months and
-- the functions the views read them with go.
-- Rows are moved, never lost: a year partition becomes one partition per
-- month it holds rows of. Like the up migration, one DO block that commits
-- after each partition it moves (see 0016_partition_layout.up.sql); a stop
-- midway leaves version 16 dirty, and `etl migrate force 16` then
-- `etl migrate down 1` goes on where it stopped.
DO $migration$
DECLARE
    tables CONSTANT text[] := ARRAY['backlink_overview', 'backlink_history', 'score_profile', 'comparison', 'keyword_metrics',
                                    'backlinks', 'ref_domains', 'ref_ips', 'indexed_pages', 'anchors', 'competitors', 'matrix'];
    tbl text;
    own text;
    cols text;
    part record;
    m date;
    newrel text;
    old text;
BEGIN
    FOREACH tbl IN ARRAY tables LOOP
        own := CASE tbl WHEN 'matrix' THEN 'set_id' WHEN 'keyword_metrics' THEN 'keyword' ELSE 'target_id' END;
        IF tbl = 'keyword_metrics' THEN
            CREATE OR REPLACE VIEW keyword_metrics_latest AS
            SELECT t.* FROM keyword_metrics t
            JOIN (SELECT keyword, country, max(month) AS month FROM keyword_metrics GROUP BY keyword, country) latest USING (keyword, country, month);
        ELSE
            EXECUTE format('CREATE OR REPLACE VIEW %1$I AS SELECT t.* FROM %2$I t JOIN (SELECT %3$I, max(month) AS month FROM %2$I GROUP BY %3$I) latest USING (%3$I, month)',
                tbl || '_latest', tbl, own);
        END IF;
    END LOOP;
    DROP VIEW IF EXISTS matrix_targets_latest;
    DROP FUNCTION IF EXISTS latest_month_rows(anyelement, text[], text[], date);
    DROP FUNCTION IF EXISTS latest_month_of(text, int);
    DROP FUNCTION IF EXISTS latest_owners(text);
    DROP FUNCTION IF EXISTS latest_keywords();
    DROP TABLE IF EXISTS latest_months, keyword_latest_months;
    COMMIT;

    CREATE OR REPLACE TEMPORARY VIEW etl_0016_parts AS
    SELECT p.parent, p.relname, p.relkind, b[1]::date AS lo, b[2]::date AS hi
    FROM (SELECT i.inhparent::regclass::text AS parent, c.relname::text AS relname, c.relkind::text AS relkind,
                 regexp_match(pg_get_expr(c.relpartbound, c.oid), $$^FOR VALUES FROM \('([^']*)'\) TO \('([^']*)'\)$$) AS b
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid) p
    WHERE p.b IS NOT NULL;

    FOREACH tbl IN ARRAY tables LOOP
        own := CASE tbl WHEN 'matrix' THEN 'set_id' WHEN 'keyword_metrics' THEN 'keyword' ELSE 'target_id' END;
        SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
        FROM pg_attribute
        WHERE attrelid = tbl::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '';
        -- Every partition without partitions of its own.
        FOR part IN SELECT p.relname, p.lo, p.hi FROM etl_0016_parts p
                    WHERE p.parent = tbl AND p.relkind = 'r' ORDER BY p.lo LOOP
            old := part.relname || '_0016';
            EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', tbl, part.relname);
            EXECUTE format('ALTER TABLE %I RENAME TO %I', part.relname, old);
            -- Each month it holds rows of; a month partition keeps its month
            -- even when empty.
            FOR m IN EXECUTE format('SELECT DISTINCT month FROM %I UNION SELECT %L::date WHERE %L::date + interval ''1 month'' = %L::date ORDER BY 1',
                                    old, part.lo, part.lo, part.hi) LOOP
                newrel := format('%s_p%s', tbl, to_char(m, 'YYYYMM'));
                EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS) PARTITION BY HASH (%I)', newrel, tbl, own);
                EXECUTE format('COMMENT ON TABLE %I IS %L', newrel, format('Rows of %s for %s.', tbl, to_char(m, 'YYYY-MM')));
                FOR i IN 0..7 LOOP
                    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES WITH (MODULUS 8, REMAINDER %s)', format('%s_h%s', newrel, lpad(i::text, 2, '0')), newrel, i);
                END LOOP;
                EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM %I WHERE month = %L', newrel, cols, cols, old, m);
                EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', tbl, newrel, m, (m + interval '1 month')::date);
            END LOOP;
            EXECUTE format('DROP TABLE %I', old);
            COMMIT;
        END LOOP;
    END LOOP;
    DROP VIEW etl_0016_parts;
END
$migration$;
