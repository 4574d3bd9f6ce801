-- The *_latest views and link_velocity in shapes a Citus cluster runs
-- (issue 32; refused there, on Citus 13.2.2, in the shapes of 0023 and
-- 0024), as fast here.
--
-- A *_latest view is now the fact table joined to latest_months (for
-- keyword_metrics, keyword_latest_months) on the owner and the month: a
-- join of a distributed table with a reference table, which Citus runs
-- on each shard (a filter on the owner, which the view shows from the
-- fact table, reaches one shard). The view of 0023 was a table function
-- (latest_owners) with a lateral UNION ALL of two reads of the fact
-- table, which Citus refuses ("complex joins are only supported when all
-- distributed tables are co-located and joined on their distribution
-- columns"). Here each owner's rows are read by its primary key in the
-- partition of its latest month alone: once the subquery of the oldest
-- of the owners' latest months has run, the executor skips every
-- partition older than it (EXPLAIN ANALYZE: "never executed"), so that a
-- view of every target reads the partitions of the latest months alone
-- however long the history; then at each owner every partition but its
-- month's. (A function there, latest_month_oldest of 0023, would let the
-- executor prune those partitions when it starts, but Citus refuses it
-- on a worker: "cannot execute a distributed query from a query on a
-- shard", as it reads latest_months, a reference table; the subquery
-- reads each worker's copy.) latest_owners, latest_keywords,
-- latest_month_of and latest_month_oldest, read by no view any more, go.
-- Same columns, in the same order.
--
-- link_velocity becomes PL/pgSQL: Citus refuses a SQL function with
-- parameters over a distributed table ("parameterized queries for SQL
-- functions referencing distributed tables are not supported"). Its query
-- is run with since and until as constants of its text (RETURN QUERY
-- EXECUTE), so the partitions are pruned when it is planned, as the
-- inlined SQL function's were.
DO $migration$
DECLARE
    tables CONSTANT text[] := ARRAY['backlink_overview', 'backlink_history', 'score_profile', 'comparison', 'keyword_metrics',
                                    'backlinks', 'ref_domains', 'ref_ips', 'indexed_pages', 'anchors', 'competitors', 'matrix'];
    tbl text;
    sel text;
BEGIN
    FOREACH tbl IN ARRAY tables LOOP
        SELECT string_agg('f.' || quote_ident(attname), ', ' ORDER BY attnum) INTO sel
        FROM pg_attribute WHERE attrelid = tbl::regclass AND attnum > 0 AND NOT attisdropped;
        IF tbl = 'keyword_metrics' THEN
            EXECUTE format($q$CREATE OR REPLACE VIEW keyword_metrics_latest AS
                SELECT %s FROM keyword_metrics f
                JOIN keyword_latest_months l ON l.keyword = f.keyword AND l.country = f.country AND l.month = f.month
                WHERE f.month >= (SELECT min(x.month) FROM keyword_latest_months x)$q$, sel);
        ELSE
            EXECUTE format($q$CREATE OR REPLACE VIEW %1$I AS
                SELECT %2$s FROM %3$I f
                JOIN latest_months l ON l.fact_table = %3$L AND l.owner_id = f.%4$I AND l.month = f.month
                WHERE f.month >= (SELECT min(x.month) FROM latest_months x WHERE x.fact_table = %3$L)$q$,
                tbl || '_latest', sel, tbl, CASE WHEN tbl = 'matrix' THEN 'set_id' ELSE 'target_id' END);
        END IF;
    END LOOP;
END
$migration$;

DROP FUNCTION latest_owners(text);
DROP FUNCTION latest_keywords();
DROP FUNCTION latest_month_of(text, int);
DROP FUNCTION latest_month_oldest(text);

CREATE OR REPLACE FUNCTION link_velocity(since date, until date)
RETURNS TABLE (target_id bigint, url text, day date, new_links bigint, new_30d bigint, new_90d bigint,
               trailing_mean numeric, trailing_stddev numeric, spike boolean)
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
    RETURN QUERY EXECUTE format($q$
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
            WHERE b.month >= date_trunc('month', %1$L::date - 90)::date
              AND b.month <= (date_trunc('month', %2$L::date) + interval '1 month')::date
              AND b.first_seen_at IS NOT NULL
            ORDER BY b.target_id, b.row_key, b.month DESC
        ) f
        WHERE f.day >= %1$L::date - 90 AND f.day <= %2$L::date
        GROUP BY f.target_id, f.day
    ) d
) v
JOIN targets t ON t.target_id = v.target_id
WHERE v.day >= %1$L::date AND v.day <= %2$L::date$q$, since, until);
END
$fn$;
