-- Back to the *_latest views of 0016: the owners whose latest month is
-- older than the table's 4 newest latest months are read through the
-- function latest_month_rows, in a UNION ALL branch beside the fact
-- table (which Citus refuses); latest_month_oldest goes.
CREATE OR REPLACE FUNCTION latest_month_rows(kind anyelement, key_columns text[], key_values text[], month date)
RETURNS SETOF anyelement LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    cond text := format('month = %L', month);
BEGIN
    FOR i IN 1 .. coalesce(array_length(key_columns, 1), 0) LOOP
        cond := cond || format(' AND %I = %L', key_columns[i], key_values[i]);
    END LOOP;
    RETURN QUERY EXECUTE format('SELECT * FROM %s WHERE %s', pg_typeof(kind), cond);
END
$fn$;
COMMENT ON FUNCTION latest_month_rows(anyelement, text[], text[], date) IS 'The rows of the fact table of kind''s row type (NULL::backlinks) whose key_columns equal key_values in month, read by a statement planned for that month alone: the *_latest views read through it the owners whose latest month is older than the 4 newest of the table. EXPLAIN shows it as a Function Scan.';
GRANT EXECUTE ON FUNCTION latest_month_rows(anyelement, text[], text[], date) TO etl_analyst;

DO $migration$
DECLARE
    tables CONSTANT text[] := ARRAY['backlink_overview', 'backlink_history', 'score_profile', 'comparison', 'keyword_metrics',
                                    'backlinks', 'ref_domains', 'ref_ips', 'indexed_pages', 'anchors', 'competitors', 'matrix'];
    slots CONSTANT int := 4;
    tbl text;
    own text;
    sel text;
    months text;
BEGIN
    FOREACH tbl IN ARRAY tables LOOP
        months := format('ARRAY[%s]', (SELECT string_agg(format('latest_month_of(%L, %s)', tbl, k), ', ' ORDER BY k) FROM generate_series(1, slots) k));
        IF tbl = 'keyword_metrics' THEN
            SELECT string_agg(CASE WHEN attname IN ('keyword', 'country', 'month') THEN 'l.' ELSE 'f.' END || quote_ident(attname), ', ' ORDER BY attnum)
            INTO sel
            FROM pg_attribute WHERE attrelid = tbl::regclass AND attnum > 0 AND NOT attisdropped;
            EXECUTE format($q$CREATE OR REPLACE VIEW keyword_metrics_latest AS
                SELECT %1$s FROM latest_keywords() l
                CROSS JOIN LATERAL (
                    SELECT * FROM keyword_metrics f
                    WHERE f.keyword = l.keyword AND f.country = l.country AND f.month = l.month AND f.month = ANY (%2$s)
                    UNION ALL
                    SELECT * FROM latest_month_rows(NULL::keyword_metrics, '{keyword,country}', ARRAY[l.keyword, l.country], l.month)
                    WHERE l.month < latest_month_of('keyword_metrics', %3$s)) f$q$,
                sel, months, slots);
        ELSE
            own := CASE WHEN tbl = 'matrix' THEN 'set_id' ELSE 'target_id' END;
            SELECT string_agg(CASE attname WHEN own THEN 'l.owner_id AS ' || quote_ident(own) WHEN 'month' THEN 'l.month'
                                           ELSE 'f.' || quote_ident(attname) END, ', ' ORDER BY attnum)
            INTO sel
            FROM pg_attribute WHERE attrelid = tbl::regclass AND attnum > 0 AND NOT attisdropped;
            EXECUTE format($q$CREATE OR REPLACE VIEW %1$I AS
                SELECT %2$s FROM latest_owners(%3$L) l
                CROSS JOIN LATERAL (
                    SELECT * FROM %3$I f
                    WHERE f.%4$I = l.owner_id AND f.month = l.month AND f.month = ANY (%5$s)
                    UNION ALL
                    SELECT * FROM latest_month_rows(NULL::%3$I, ARRAY[%4$L], ARRAY[l.owner_id::text], l.month)
                    WHERE l.month < latest_month_of(%3$L, %6$s)) f$q$,
                tbl || '_latest', sel, tbl, own, months, slots);
        END IF;
    END LOOP;
END
$migration$;

DROP FUNCTION latest_month_oldest(text);
