-- The *_latest views without a table function inside UNION (issue 25):
-- Citus refuses to run a view whose UNION has a table function in one of
-- its branches ("Table functions are not supported with union operator"),
-- and every *_latest view of 0016 read the owners whose latest month is
-- older than the table's 4 newest latest months through the function
-- latest_month_rows, in a UNION ALL branch beside the fact table.
--
-- Now both branches read the fact table, for each owner (latest_owners,
-- latest_keywords) its rows of its latest month: the first where that
-- month is one of the 4 newest latest months of the table
-- (latest_month_of, as before), the second where it lies from the oldest
-- latest month (latest_month_oldest, new) up to, not including, the 4th
-- newest. Every owner's latest month is in one branch alone, so the view
-- shows the same rows. Both are constants when the query starts: the
-- executor prunes, before it opens them, every partition but those of
-- the 4 newest latest months in the first branch, and every partition in
-- the second unless some owner's latest month is older than the 4 newest
-- (targets dropped from the jobs at four or more different times), when
-- it keeps those of that range; then at each owner every partition but
-- its month's. So when every target was fetched in the last month, a
-- view plans and reads one partition, as before.
--
-- latest_month_rows, read by no view any more, goes. Same columns, in the
-- same order, as before.
CREATE OR REPLACE FUNCTION latest_month_oldest(tbl text)
RETURNS date LANGUAGE plpgsql STABLE AS $fn$
BEGIN
    IF tbl = 'keyword_metrics' THEN
        RETURN (SELECT min(l.month) FROM keyword_latest_months l);
    END IF;
    RETURN (SELECT min(l.month) FROM latest_months l WHERE l.fact_table = tbl);
END
$fn$;
COMMENT ON FUNCTION latest_month_oldest(text) IS 'The oldest of the months that are some owner''s latest month in the fact table tbl (latest_months; keyword_metrics: keyword_latest_months), NULL when none: the *_latest views read the partitions from it up to the 4th newest (latest_month_of), which the executor prunes to nothing unless some owner''s latest month is older than the 4 newest.';
GRANT EXECUTE ON FUNCTION latest_month_oldest(text) TO etl_analyst;

DO $migration$
DECLARE
    tables CONSTANT text[] := ARRAY['backlink_overview', 'backlink_history', 'score_profile', 'comparison', 'keyword_metrics',
                                    'backlinks', 'ref_domains', 'ref_ips', 'indexed_pages', 'anchors', 'competitors', 'matrix'];
    slots CONSTANT int := 4;
    tbl text;
    own text;
    sel text;
    newest text;
    older text;
BEGIN
    FOREACH tbl IN ARRAY tables LOOP
        newest := format('f.month = ANY (ARRAY[%s])',
            (SELECT string_agg(format('latest_month_of(%L, %s)', tbl, k), ', ' ORDER BY k) FROM generate_series(1, slots) k));
        older := format('f.month >= latest_month_oldest(%L) AND f.month < latest_month_of(%L, %s)', tbl, tbl, slots);
        IF tbl = 'keyword_metrics' THEN
            SELECT string_agg(CASE WHEN attname IN ('keyword', 'country', 'month') THEN 'l.' ELSE 'f.' END || quote_ident(attname), ', ' ORDER BY attnum)
            INTO sel
            FROM pg_attribute WHERE attrelid = tbl::regclass AND attnum > 0 AND NOT attisdropped;
            EXECUTE format($q$CREATE OR REPLACE VIEW keyword_metrics_latest AS
                SELECT %1$s FROM latest_keywords() l
                CROSS JOIN LATERAL (
                    SELECT * FROM keyword_metrics f
                    WHERE f.keyword = l.keyword AND f.country = l.country AND f.month = l.month AND %2$s
                    UNION ALL
                    SELECT * FROM keyword_metrics f
                    WHERE f.keyword = l.keyword AND f.country = l.country AND f.month = l.month AND %3$s) f$q$,
                sel, newest, older);
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
                    WHERE f.%4$I = l.owner_id AND f.month = l.month AND %5$s
                    UNION ALL
                    SELECT * FROM %3$I f
                    WHERE f.%4$I = l.owner_id AND f.month = l.month AND %6$s) f$q$,
                tbl || '_latest', sel, tbl, own, newest, older);
        END IF;
    END LOOP;
END
$migration$;

DROP FUNCTION latest_month_rows(anyelement, text[], text[], date);
