-- Partitions whose cost does not grow with history (issue 18), and the
-- newest month of each target that the *_latest views read.
--
-- Until now each month of each fact table was a partition of its own,
-- HASH-partitioned 8 ways below: 179 months of summary history and keyword
-- metrics made 2,864 leaf tables, and a statement that did not prune planned
-- and locked all of them. From now on (load.LayoutOf, the one place that
-- decides it) a table has no partitions below its RANGE (month) partitions,
-- and those span:
--   a year:  backlink_overview, backlink_history, score_profile, comparison,
--            keyword_metrics (a handful of rows per target and month);
--   a month: backlinks, ref_domains, ref_ips, indexed_pages, anchors,
--            competitors, matrix (paged lists, as large as a user buys).
-- This migration moves the rows of every partition of the old layout into
-- the new one: a year partition <table>_yYYYY gathers the months of its
-- year; a month partition keeps its name <table>_pYYYYMM, without the hash
-- partitions below it. Detached tables (*_detached) are left alone.
--
-- latest_months and keyword_latest_months keep the newest month of each
-- target (or set, or keyword and country) of each fact table; the loader
-- keeps them in each page's transaction, and the *_latest views now read
-- each owner's newest month through them, so a view reads the partitions
-- of the months it shows and no other, as EXPLAIN shows (before, it
-- grouped the whole table).
--
-- The whole file is one DO block that commits after each partition (or
-- year) it moves: golang-migrate sends it as one statement outside a
-- transaction block, where a DO block may commit. So moving a warehouse of
-- thousands of old partitions never holds more than one year's locks at
-- once (a single transaction would take tens of thousands of locks and run
-- out of shared memory at PostgreSQL's default settings). Every step is
-- idempotent: should the migration stop midway, its version stays dirty;
-- `etl migrate force 15` then `etl migrate up` goes on where it stopped.
DO $migration$
DECLARE
    yearly CONSTANT text[] := ARRAY['backlink_overview', 'backlink_history', 'score_profile', 'comparison', 'keyword_metrics'];
    monthly CONSTANT text[] := ARRAY['backlinks', 'ref_domains', 'ref_ips', 'indexed_pages', 'anchors', 'competitors', 'matrix'];
    tbl text;
    own text;
    cols text;
    sel text;
    part record;
    y int;
    y_lo date;
    y_hi date;
    newrel text;
    -- How many of a table's newest latest months the *_latest views name
    -- to the executor (latest_month_of).
    slots CONSTANT int := 4;
    months text;
BEGIN
    CREATE TABLE IF NOT EXISTS latest_months (
        fact_table text   NOT NULL,
        owner_id   bigint NOT NULL,
        month      date   NOT NULL,
        PRIMARY KEY (fact_table, owner_id)
    );
    COMMENT ON TABLE latest_months IS 'The newest month of each target (matrix: target set) in each fact table, kept by the loader with every page; the *_latest views read the fact tables through it, one partition per month shown.';
    COMMENT ON COLUMN latest_months.fact_table IS 'the fact table (backlinks, backlink_overview, ...)';
    COMMENT ON COLUMN latest_months.owner_id IS 'the target (targets.target_id), or for matrix the target set (target_sets.set_id)';
    COMMENT ON COLUMN latest_months.month IS 'the newest month of the owner''s rows in the fact table';
    CREATE TABLE IF NOT EXISTS keyword_latest_months (
        keyword text NOT NULL,
        country text NOT NULL,
        month   date NOT NULL,
        PRIMARY KEY (keyword, country)
    );
    COMMENT ON TABLE keyword_latest_months IS 'The newest month of each keyword and country in keyword_metrics, kept by the loader with every page; keyword_metrics_latest reads keyword_metrics through it.';
    COMMENT ON COLUMN keyword_latest_months.keyword IS 'the keyword as requested';
    COMMENT ON COLUMN keyword_latest_months.country IS 'country code as requested';
    COMMENT ON COLUMN keyword_latest_months.month IS 'the newest month of the keyword and country in keyword_metrics';
    GRANT SELECT ON latest_months, keyword_latest_months TO etl_analyst;
    COMMIT;

    -- The partitions of each table, with their range of months, are read
    -- from the view etl_0016_parts below (a temporary one, gone with the
    -- session). The bounds are read back in the session's DateStyle, so
    -- they round-trip whatever it is.
    CREATE OR REPLACE TEMPORARY VIEW etl_0016_parts AS
    SELECT p.parent, p.relname, p.relkind, b[1]::date AS lo, b[2]::date AS hi
    FROM (SELECT i.inhparent::regclass::text AS parent, c.relname::text AS relname, c.relkind::text AS relkind,
                 regexp_match(pg_get_expr(c.relpartbound, c.oid), $$^FOR VALUES FROM \('([^']*)'\) TO \('([^']*)'\)$$) AS b
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid) p
    WHERE p.b IS NOT NULL;

    FOREACH tbl IN ARRAY yearly || monthly LOOP
        -- The columns a row is copied with (row_key is generated).
        SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
        FROM pg_attribute
        WHERE attrelid = tbl::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '';

        IF tbl = ANY (yearly) THEN
            -- Every year with a partition that is not that year's.
            FOR y IN SELECT DISTINCT extract(year FROM p.lo)::int FROM etl_0016_parts p
                     WHERE p.parent = tbl
                       AND (p.lo, p.hi) IS DISTINCT FROM (make_date(extract(year FROM p.lo)::int, 1, 1), make_date(extract(year FROM p.lo)::int + 1, 1, 1))
                     ORDER BY 1 LOOP
                y_lo := make_date(y, 1, 1);
                y_hi := make_date(y + 1, 1, 1);
                newrel := tbl || '_y' || y;
                IF to_regclass(quote_ident(newrel)) IS NOT NULL THEN
                    RAISE EXCEPTION 'migration 0016: % exists already, beside partitions of % in %: move their rows into it by hand, or rename it', newrel, tbl, y;
                END IF;
                EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS, CONSTRAINT etl_0016_span CHECK (month >= %L AND month < %L))',
                    newrel, tbl, y_lo, y_hi);
                FOR part IN SELECT p.relname, p.lo, p.hi FROM etl_0016_parts p
                            WHERE p.parent = tbl AND p.lo >= y_lo AND p.lo < y_hi ORDER BY p.lo LOOP
                    IF part.hi > y_hi THEN
                        RAISE EXCEPTION 'migration 0016: partition % of % spans % to %, across the turn of a year: split it by hand', part.relname, tbl, part.lo, part.hi;
                    END IF;
                    EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', tbl, part.relname);
                    EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM %I', newrel, cols, cols, part.relname);
                    EXECUTE format('DROP TABLE %I', part.relname);
                END LOOP;
                EXECUTE format('COMMENT ON TABLE %I IS %L', newrel, format('Rows of %s for %s.', tbl, y));
                -- The CHECK spares ATTACH its scan of the rows.
                EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', tbl, newrel, y_lo, y_hi);
                EXECUTE format('ALTER TABLE %I DROP CONSTRAINT etl_0016_span', newrel);
                COMMIT;
            END LOOP;
        ELSE
            -- Every month partition that has partitions of its own.
            FOR part IN SELECT p.relname, p.lo, p.hi FROM etl_0016_parts p
                        WHERE p.parent = tbl AND p.relkind = 'p' ORDER BY p.lo LOOP
                newrel := part.relname || '_0016';
                EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS, CONSTRAINT etl_0016_span CHECK (month >= %L AND month < %L))',
                    newrel, tbl, part.lo, part.hi);
                EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', tbl, part.relname);
                EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM %I', newrel, cols, cols, part.relname);
                EXECUTE format('DROP TABLE %I', part.relname);
                EXECUTE format('ALTER TABLE %I RENAME TO %I', newrel, part.relname);
                EXECUTE format('COMMENT ON TABLE %I IS %L', part.relname, format('Rows of %s for %s.', tbl, to_char(part.lo, 'YYYY-MM')));
                EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', tbl, part.relname, part.lo, part.hi);
                EXECUTE format('ALTER TABLE %I DROP CONSTRAINT etl_0016_span', part.relname);
                COMMIT;
            END LOOP;
        END IF;
    END LOOP;
    DROP VIEW etl_0016_parts;

    -- The newest month of each owner: one probe of the primary key per
    -- target (or set) and partition, newest partition first.
    FOREACH tbl IN ARRAY yearly || monthly LOOP
        IF tbl = 'keyword_metrics' THEN
            INSERT INTO keyword_latest_months (keyword, country, month)
            SELECT keyword, country, max(month) FROM keyword_metrics GROUP BY keyword, country
            ON CONFLICT (keyword, country) DO UPDATE SET month = greatest(keyword_latest_months.month, EXCLUDED.month);
        ELSE
            own := CASE WHEN tbl = 'matrix' THEN 'set_id' ELSE 'target_id' END;
            EXECUTE format($q$
                INSERT INTO latest_months (fact_table, owner_id, month)
                SELECT %1$L, o.id, m.month FROM (SELECT %2$I AS id FROM %3$I) o
                CROSS JOIN LATERAL (SELECT max(month) AS month FROM %4$I WHERE %5$I = o.id) m
                WHERE m.month IS NOT NULL
                ON CONFLICT (fact_table, owner_id) DO UPDATE SET month = greatest(latest_months.month, EXCLUDED.month)$q$,
                tbl, own, CASE WHEN tbl = 'matrix' THEN 'target_sets' ELSE 'targets' END, tbl, own);
        END IF;
        COMMIT;
    END LOOP;

    -- latest_month_of(tbl, k): the k-th newest of the months that are some
    -- owner's latest in tbl (latest_months; keyword_metrics:
    -- keyword_latest_months), or the oldest of them when there are fewer
    -- than k; NULL when there is none. One probe of the index below per
    -- month it steps over. STABLE, so the executor evaluates it when a
    -- query starts and prunes the partitions of every other month before
    -- it opens them (EXPLAIN: "Subplans Removed"). (A function returning
    -- the months as an array would not do: PostgreSQL prunes on
    -- month = ANY (ARRAY[a, b, ...]), not on month = ANY (f()).)
    CREATE INDEX IF NOT EXISTS latest_months_month ON latest_months (fact_table, month);
    CREATE INDEX IF NOT EXISTS keyword_latest_months_month ON keyword_latest_months (month);
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

    -- latest_owners(tbl) and latest_keywords(): the rows of latest_months
    -- of one fact table, and of keyword_latest_months, as the *_latest
    -- views loop over them. Declared ROWS 10: the planner costs a view's
    -- loop with every partition of the fact table (it cannot know which
    -- the executor will prune), so with the true number of owners a view
    -- over a long history looked expensive enough for PostgreSQL to
    -- JIT-compile it (0.45 to 0.95 s for each query with 1,000 targets
    -- and 120 months, to read 2 partitions).
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

    -- latest_month_rows reads the rows of one owner (a target, a set, a
    -- keyword and country) in one month: a statement made for that owner
    -- and month, with both as constants, so it is planned with the one
    -- partition of the month and locks that partition alone. The *_latest
    -- views read through it the owners whose latest month is older than
    -- the 4 newest latest months of the table (targets dropped from the
    -- jobs at several times).
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

    -- The *_latest views: for each owner (latest_owners, latest_keywords),
    -- its rows of its latest month. If that month is one of the table's 4
    -- newest latest months (every owner's, unless targets were dropped
    -- from the jobs at several times), from the fact table itself, with
    -- the 4 months of latest_month_of as constants of the query: the
    -- executor prunes, when the query starts, every partition but those
    -- of the 4 months (EXPLAIN shows the partitions left, and "Subplans
    -- Removed"; JIT compiles none of the others), then at each owner every
    -- partition but its month's. Otherwise through latest_month_rows. The
    -- owner and the month come from latest_months, so a filter on them
    -- (WHERE target_id = ..., a join with targets on a url) narrows the
    -- owners first; other filters reach the fact table. (A plain join of
    -- latest_months and the fact table prunes only at each owner, after
    -- the executor opened every partition and JIT compiled each: seconds
    -- with 120 months stored.) Same columns, in the same order, as before.
    FOREACH tbl IN ARRAY yearly || monthly LOOP
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

    -- matrix_targets of each set's latest month, read as matrix_latest is.
    CREATE OR REPLACE VIEW matrix_targets_latest AS
    SELECT m.set_id, m.month, m.observed_at, m.domain, m.domain_score, m.ip_address, m.country, m.matches_count,
           s.position, s.target_id, t.url, m.backlinks_counts[s.position] AS backlinks_count
    FROM matrix_latest m
    JOIN target_set_members s USING (set_id)
    JOIN targets t USING (target_id);
    COMMENT ON VIEW matrix_targets_latest IS 'matrix_targets for each target set''s latest month: one row per referring domain and requested target.';
    COMMENT ON COLUMN matrix_targets_latest.set_id IS 'target set of the request (target_sets.set_id)';
    COMMENT ON COLUMN matrix_targets_latest.month IS 'the set''s latest month in matrix';
    COMMENT ON COLUMN matrix_targets_latest.observed_at IS 'when the row was fetched from the API';
    COMMENT ON COLUMN matrix_targets_latest.domain IS 'referring domain';
    COMMENT ON COLUMN matrix_targets_latest.domain_score IS 'authority score of the referring domain, 0-100';
    COMMENT ON COLUMN matrix_targets_latest.ip_address IS 'IP address of the referring domain';
    COMMENT ON COLUMN matrix_targets_latest.country IS 'country of the referring domain, ISO 3166-1 alpha-2';
    COMMENT ON COLUMN matrix_targets_latest.matches_count IS 'how many of the set''s targets the domain refers to';
    COMMENT ON COLUMN matrix_targets_latest.position IS '1-based position of the target in the request';
    COMMENT ON COLUMN matrix_targets_latest.target_id IS 'the requested target (targets.target_id)';
    COMMENT ON COLUMN matrix_targets_latest.url IS 'the requested target''s url';
    COMMENT ON COLUMN matrix_targets_latest.backlinks_count IS 'backlinks from the domain to this target';
    GRANT SELECT ON matrix_targets_latest TO etl_analyst;
END
$migration$;
