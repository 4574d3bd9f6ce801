-- Back to the *_latest views of 0023 (a lateral UNION ALL from the
-- functions latest_owners and latest_keywords, which come back with
-- latest_month_of and latest_month_oldest) and the SQL function
-- link_velocity of 0024: the shapes Citus refuses.
CREATE OR REPLACE FUNCTION latest_month_of(tbl text, k int)
RETURNS date LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    m date;
    newer date;
BEGIN
    FOR i IN 1 .. k LOOP
        newer := m;
        IF tbl = 'keyword_metrics' AND newer IS NULL THEN
            SELECT max(l.month) INTO m FROM keyword_latest_months l;
        ELSIF tbl = 'keyword_metrics' THEN
            SELECT max(l.month) INTO m FROM keyword_latest_months l WHERE l.month < newer;
        ELSIF newer IS NULL THEN
            SELECT max(l.month) INTO m FROM latest_months l WHERE l.fact_table = tbl;
        ELSE
            SELECT max(l.month) INTO m FROM latest_months l WHERE l.fact_table = tbl AND l.month < newer;
        END IF;
        IF m IS NULL THEN
            RETURN newer;
        END IF;
    END LOOP;
    RETURN m;
END
$fn$;
COMMENT ON FUNCTION latest_month_of(text, int) IS 'The k-th newest of the months that are some owner''s latest month in the fact table tbl (latest_months; keyword_metrics: keyword_latest_months), the oldest of them when there are fewer than k, NULL when none: the *_latest views name the 4 newest to the executor, which prunes the partitions of every other month before it opens them.';
GRANT EXECUTE ON FUNCTION latest_month_of(text, int) TO etl_analyst;
CREATE OR REPLACE FUNCTION latest_owners(tbl text)
RETURNS TABLE (owner_id bigint, month date) LANGUAGE plpgsql STABLE ROWS 10 AS $fn$
BEGIN
    RETURN QUERY SELECT l.owner_id, l.month FROM latest_months l WHERE l.fact_table = tbl;
END
$fn$;
COMMENT ON FUNCTION latest_owners(text) IS 'The owners (targets, matrix: target sets) of the fact table tbl with their latest month, from latest_months: what the *_latest views loop over.';
GRANT EXECUTE ON FUNCTION latest_owners(text) TO etl_analyst;
CREATE OR REPLACE FUNCTION latest_keywords()
RETURNS TABLE (keyword text, country text, month date) LANGUAGE plpgsql STABLE ROWS 10 AS $fn$
BEGIN
    RETURN QUERY SELECT l.keyword, l.country, l.month FROM keyword_latest_months l;
END
$fn$;
COMMENT ON FUNCTION latest_keywords() IS 'Each keyword and country of keyword_metrics with its latest month, from keyword_latest_months: what keyword_metrics_latest loops over.';
GRANT EXECUTE ON FUNCTION latest_keywords() TO etl_analyst;

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

CREATE OR REPLACE FUNCTION link_velocity(since date, until date)
RETURNS TABLE (target_id bigint, url text, day date, new_links bigint, new_30d bigint, new_90d bigint,
               trailing_mean numeric, trailing_stddev numeric, spike boolean)
LANGUAGE sql STABLE AS $fn$
SELECT v.target_id, t.url, v.day, v.new_links, v.new_30d, v.new_90d,
       round(v.trailing_sum / 30.0, 4),
       round(sqrt(greatest(v.trailing_sq / 30.0 - (v.trailing_sum / 30.0) ^ 2, 0)), 4),
       -- new_links > mean + 3 sd, in integers (times 30, squared): exact
       v.trailing_sum > 0 AND 30 * v.new_links > v.trailing_sum
         AND (30 * v.new_links - v.trailing_sum) ^ 2 > 9 * (30 * v.trailing_sq - v.trailing_sum ^ 2)
FROM (
    SELECT d.target_id, d.day, d.new_links,
           sum(d.new_links) OVER (PARTITION BY d.target_id ORDER BY d.day RANGE BETWEEN interval '29 days' PRECEDING AND CURRENT ROW)::bigint AS new_30d,
           sum(d.new_links) OVER (PARTITION BY d.target_id ORDER BY d.day RANGE BETWEEN interval '89 days' PRECEDING AND CURRENT ROW)::bigint AS new_90d,
           coalesce(sum(d.new_links) OVER (PARTITION BY d.target_id ORDER BY d.day RANGE BETWEEN interval '30 days' PRECEDING AND interval '1 day' PRECEDING), 0)::numeric AS trailing_sum,
           coalesce(sum(d.new_links * d.new_links) OVER (PARTITION BY d.target_id ORDER BY d.day RANGE BETWEEN interval '30 days' PRECEDING AND interval '1 day' PRECEDING), 0)::numeric AS trailing_sq
    FROM (
        SELECT f.target_id, f.day, count(*) AS new_links
        FROM (
            SELECT DISTINCT ON (b.target_id, b.row_key) b.target_id, (b.first_seen_at AT TIME ZONE 'UTC')::date AS day
            FROM backlinks b
            WHERE b.month >= date_trunc('month', since - 90)::date
              AND b.month <= (date_trunc('month', until) + interval '1 month')::date
              AND b.first_seen_at IS NOT NULL
            ORDER BY b.target_id, b.row_key, b.month DESC
        ) f
        WHERE f.day >= since - 90 AND f.day <= until
        GROUP BY f.target_id, f.day
    ) d
) v
JOIN targets t ON t.target_id = v.target_id
WHERE v.day >= since AND v.day <= until
$fn$;
