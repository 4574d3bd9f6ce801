-- Analytic views (issue 26): the questions SEO teams ask of backlink data,
-- answered as tested SQL over the fact tables, and read by `etl report`.
--
--   link_changes, ref_domain_changes  new and lost links (referring domains)
--                                     per target and month
--   link_velocity(since, until)       links first seen per day, rolling 30-
--                                     and 90-day sums, spikes
--   competitor_gap                    per target set and month, the domains
--                                     linking to a rival and not to the first
--                                     target, best first
--   target_authority                  score, backlinks and referring domains
--                                     per target and month
--   spend_by_day, spend_by_month      API units per job, UTC day and month
--   listing_open_problems             open listing problems by code and age
--   listing_problem_weeks             problems opened and resolved per week,
--                                     and open at its end
--
-- Each view over a fact table keeps the fact table's month (or target set)
-- as a plain column of its grouping, so a filter on it with a constant
-- reaches the scan and the planner prunes every other month's partition
-- (EXPLAIN shows only the partitions of the months asked for); a filter on
-- target_id or url narrows the targets first. link_velocity needs the 90
-- days before the days it shows, so it is a function of the days asked
-- for, which reads the partitions of those months alone.

CREATE VIEW link_changes AS
SELECT b.target_id, t.url, t.scope, b.month,
       count(*) AS links,
       count(*) FILTER (WHERE b.first_seen_at >= (b.month::timestamp AT TIME ZONE 'UTC')
                          AND b.first_seen_at < ((b.month + 1 * interval '1 month') AT TIME ZONE 'UTC')) AS new_links,
       count(*) FILTER (WHERE b.is_lost AND b.last_seen_at >= (b.month::timestamp AT TIME ZONE 'UTC')
                          AND b.last_seen_at < ((b.month + 1 * interval '1 month') AT TIME ZONE 'UTC')) AS lost_links,
       count(*) FILTER (WHERE b.is_new) AS flagged_new,
       count(*) FILTER (WHERE b.is_lost) AS flagged_lost
FROM backlinks b
JOIN targets t USING (target_id)
GROUP BY b.target_id, t.url, t.scope, b.month;
COMMENT ON VIEW link_changes IS 'New and lost backlinks per target and month, counted in the links stored for the month (a job''s links limit and filter bound them; backlink_overview has the API''s whole-target new_count and lost_count). A filter on month prunes to that month''s partition.';
COMMENT ON COLUMN link_changes.target_id IS 'the target (targets.target_id)';
COMMENT ON COLUMN link_changes.url IS 'the target''s url, as in the job spec';
COMMENT ON COLUMN link_changes.scope IS 'the target''s scope';
COMMENT ON COLUMN link_changes.month IS 'the month the links were fetched in (backlinks.month)';
COMMENT ON COLUMN link_changes.links IS 'links stored for the target and month';
COMMENT ON COLUMN link_changes.new_links IS 'of them, links first seen (first_seen_at) within the month, UTC';
COMMENT ON COLUMN link_changes.lost_links IS 'of them, links lost (is_lost) and last seen (last_seen_at) within the month, UTC';
COMMENT ON COLUMN link_changes.flagged_new IS 'of them, links the API flagged is_new (first seen within 30 days of the fetch)';
COMMENT ON COLUMN link_changes.flagged_lost IS 'of them, links the API flagged is_lost';

CREATE VIEW ref_domain_changes AS
SELECT d.target_id, t.url, t.scope, d.month,
       count(*) AS domains,
       count(*) FILTER (WHERE d.first_seen_at >= (d.month::timestamp AT TIME ZONE 'UTC')
                          AND d.first_seen_at < ((d.month + 1 * interval '1 month') AT TIME ZONE 'UTC')) AS new_domains,
       count(*) FILTER (WHERE d.is_lost AND d.last_seen_at >= (d.month::timestamp AT TIME ZONE 'UTC')
                          AND d.last_seen_at < ((d.month + 1 * interval '1 month') AT TIME ZONE 'UTC')) AS lost_domains,
       count(*) FILTER (WHERE d.is_new) AS flagged_new,
       count(*) FILTER (WHERE d.is_lost) AS flagged_lost
FROM ref_domains d
JOIN targets t USING (target_id)
GROUP BY d.target_id, t.url, t.scope, d.month;
COMMENT ON VIEW ref_domain_changes IS 'New and lost referring domains per target and month, counted in the referring domains stored for the month (a job''s ref-domains limit and filter bound them). A filter on month prunes to that month''s partition.';
COMMENT ON COLUMN ref_domain_changes.target_id IS 'the target (targets.target_id)';
COMMENT ON COLUMN ref_domain_changes.url IS 'the target''s url, as in the job spec';
COMMENT ON COLUMN ref_domain_changes.scope IS 'the target''s scope';
COMMENT ON COLUMN ref_domain_changes.month IS 'the month the referring domains were fetched in (ref_domains.month)';
COMMENT ON COLUMN ref_domain_changes.domains IS 'referring domains stored for the target and month';
COMMENT ON COLUMN ref_domain_changes.new_domains IS 'of them, domains first seen (first_seen_at) within the month, UTC';
COMMENT ON COLUMN ref_domain_changes.lost_domains IS 'of them, domains lost (is_lost: every link lost) and last seen within the month, UTC';
COMMENT ON COLUMN ref_domain_changes.flagged_new IS 'of them, domains the API flagged is_new (first seen within 30 days of the fetch)';
COMMENT ON COLUMN ref_domain_changes.flagged_lost IS 'of them, domains the API flagged is_lost';

-- link_velocity(since, until): each link (target and row_key) counts once,
-- on the UTC day of its first_seen_at as last observed (the later
-- observation wins, as everywhere in the warehouse) in the months read:
-- those of since - 90 days to until, and the month after until, which
-- holds the links first seen after the fetch of until's month. The
-- rolling sums and the trailing statistics count the days without new
-- links as zeros. A SQL function of one SELECT: PostgreSQL inlines it, so
-- since and until prune the partitions like constants of the query.
CREATE FUNCTION link_velocity(since date, until date)
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
COMMENT ON FUNCTION link_velocity(date, date) IS 'Link velocity of each target on the UTC days from since to until on which links were first seen: new_links that day, the rolling 30- and 90-day sums, the mean and standard deviation of the 30 days before (days without new links count as 0), and spike where the day is more than three standard deviations above that mean (not after 30 days without a new link). A link counts once, on the day of its first_seen_at as last observed in the months stored from since - 90 days to the month after until; only those months'' partitions are read.';
GRANT EXECUTE ON FUNCTION link_velocity(date, date) TO etl_analyst;

CREATE VIEW competitor_gap AS
SELECT g.set_id, g.set_name, g.month, g.target, g.domain, g.domain_score, g.rivals_linking, g.rival_backlinks,
       row_number() OVER (PARTITION BY g.set_id, g.month
                          ORDER BY g.domain_score DESC NULLS LAST, g.rivals_linking DESC, g.rival_backlinks DESC, g.domain) AS gap_rank
FROM (
    SELECT m.set_id, s.name AS set_name, m.month, s.urls[1] AS target, m.domain, m.domain_score,
           r.rivals_linking, r.rival_backlinks
    FROM matrix m
    JOIN target_sets s USING (set_id)
    CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE c.n > 0) AS rivals_linking, coalesce(sum(c.n), 0)::bigint AS rival_backlinks
        FROM unnest(m.backlinks_counts[2:]) AS c(n)
    ) r
    WHERE coalesce(m.backlinks_counts[1], 0) = 0 AND r.rivals_linking > 0
) g;
COMMENT ON VIEW competitor_gap IS 'The competitor gap of each target set and month, from matrix: the referring domains that link to at least one rival (the set''s urls after the first) and not to its first url, best first by gap_rank (domain score, then rivals linked, then backlinks to them). A filter on month or set_id prunes to those partitions.';
COMMENT ON COLUMN competitor_gap.set_id IS 'the target set (target_sets.set_id)';
COMMENT ON COLUMN competitor_gap.set_name IS 'the set''s name in the job spec';
COMMENT ON COLUMN competitor_gap.month IS 'the month the matrix was fetched in';
COMMENT ON COLUMN competitor_gap.target IS 'the set''s first url: the target the gap is of';
COMMENT ON COLUMN competitor_gap.domain IS 'referring domain linking to a rival and not to target';
COMMENT ON COLUMN competitor_gap.domain_score IS 'authority score of the referring domain, 0-100';
COMMENT ON COLUMN competitor_gap.rivals_linking IS 'how many of the set''s rivals the domain links to';
COMMENT ON COLUMN competitor_gap.rival_backlinks IS 'backlinks from the domain to the rivals, in all';
COMMENT ON COLUMN competitor_gap.gap_rank IS '1 for the best domain of the set and month (highest score, then most rivals, then most backlinks to them, then by name)';

CREATE VIEW target_authority AS
SELECT a.target_id, t.url, t.scope, a.month, a.source, a.score, a.backlinks, a.ref_domains, a.observed_at
FROM (
    SELECT DISTINCT ON (u.target_id, u.month) u.target_id, u.month, u.source, u.score, u.backlinks, u.ref_domains, u.observed_at
    FROM (
        SELECT h.target_id, h.month, 'summary' AS source, h.score, h.backlinks_count AS backlinks, h.domains_count AS ref_domains, h.observed_at
        FROM backlink_history h
        UNION ALL
        SELECT o.target_id, o.month, 'overview', o.score, o.backlinks_count, o.domains_count, o.observed_at
        FROM backlink_overview o
    ) u
    ORDER BY u.target_id, u.month, u.observed_at DESC, u.source DESC
) a
JOIN targets t USING (target_id);
COMMENT ON VIEW target_authority IS 'Authority score, backlinks and referring domains of each target per month: from summary history (backlink_history) and the overview (backlink_overview), whichever observed the month last. A filter on month prunes both tables to that month''s partitions.';
COMMENT ON COLUMN target_authority.target_id IS 'the target (targets.target_id)';
COMMENT ON COLUMN target_authority.url IS 'the target''s url, as in the job spec';
COMMENT ON COLUMN target_authority.scope IS 'the target''s scope';
COMMENT ON COLUMN target_authority.month IS 'the month described';
COMMENT ON COLUMN target_authority.source IS 'summary (backlink_history) or overview (backlink_overview): the row observed last of the two';
COMMENT ON COLUMN target_authority.score IS 'the target''s authority score, 0-100';
COMMENT ON COLUMN target_authority.backlinks IS 'backlinks of the target (backlinks_count)';
COMMENT ON COLUMN target_authority.ref_domains IS 'referring domains of the target (domains_count)';
COMMENT ON COLUMN target_authority.observed_at IS 'when the row was fetched';

CREATE VIEW spend_by_day AS
SELECT (l.reserved_at AT TIME ZONE 'UTC')::date AS day, l.job,
       sum(l.requests)::bigint AS requests,
       sum(l.reserved)::bigint AS reserved,
       sum(coalesce(l.spent, l.reserved))::bigint AS units,
       count(*) FILTER (WHERE l.spent IS NULL) AS unsettled
FROM unit_ledger l
GROUP BY 1, 2;
COMMENT ON VIEW spend_by_day IS 'API units per UTC day and job, from unit_ledger: what the daily cap (budget: daily, for all jobs together) is checked against. units counts a request at what it cost, or at its reservation while unsettled, as budget_usage does.';
COMMENT ON COLUMN spend_by_day.day IS 'the UTC day the requests were reserved in';
COMMENT ON COLUMN spend_by_day.job IS 'name of the job';
COMMENT ON COLUMN spend_by_day.requests IS 'API requests of the job that day';
COMMENT ON COLUMN spend_by_day.reserved IS 'units reserved before them: their worst case';
COMMENT ON COLUMN spend_by_day.units IS 'units they cost (unsettled ones at their reservation)';
COMMENT ON COLUMN spend_by_day.unsettled IS 'requests not settled (a page broke mid-body, or still running)';

CREATE VIEW spend_by_month AS
SELECT date_trunc('month', l.reserved_at AT TIME ZONE 'UTC')::date AS month, l.job,
       sum(l.requests)::bigint AS requests,
       sum(l.reserved)::bigint AS reserved,
       sum(coalesce(l.spent, l.reserved))::bigint AS units,
       count(*) FILTER (WHERE l.spent IS NULL) AS unsettled,
       count(DISTINCT l.run_id) AS runs
FROM unit_ledger l
GROUP BY 1, 2;
COMMENT ON VIEW spend_by_month IS 'API units per UTC month and job, from unit_ledger: what a job''s monthly cap (budget: monthly of the job) and, summed over jobs, the installation''s monthly cap are checked against.';
COMMENT ON COLUMN spend_by_month.month IS 'first day of the UTC month the requests were reserved in';
COMMENT ON COLUMN spend_by_month.job IS 'name of the job';
COMMENT ON COLUMN spend_by_month.requests IS 'API requests of the job that month';
COMMENT ON COLUMN spend_by_month.reserved IS 'units reserved before them: their worst case';
COMMENT ON COLUMN spend_by_month.units IS 'units they cost (unsettled ones at their reservation)';
COMMENT ON COLUMN spend_by_month.unsettled IS 'requests not settled';
COMMENT ON COLUMN spend_by_month.runs IS 'runs that made them';

CREATE VIEW listing_open_problems AS
SELECT p.account, p.code,
       count(*) AS problems,
       count(DISTINCT p.location_id) AS locations,
       min(p.first_seen_at) AS oldest_since,
       count(*) FILTER (WHERE p.first_seen_at <= now() - interval '1 day') AS over_1_day,
       count(*) FILTER (WHERE p.first_seen_at <= now() - interval '7 days') AS over_7_days,
       count(*) FILTER (WHERE p.first_seen_at <= now() - interval '30 days') AS over_30_days
FROM listing_problems p
WHERE p.resolved_at IS NULL
GROUP BY p.account, p.code;
COMMENT ON VIEW listing_open_problems IS 'Problems open now (listing_problems.resolved_at NULL) per account and error code, with their age: how many have been open more than a day, a week, 30 days (from first_seen_at to now()).';
COMMENT ON COLUMN listing_open_problems.account IS 'the account the locations belong to';
COMMENT ON COLUMN listing_open_problems.code IS 'the error''s code';
COMMENT ON COLUMN listing_open_problems.problems IS 'open problems with the code';
COMMENT ON COLUMN listing_open_problems.locations IS 'locations that have one';
COMMENT ON COLUMN listing_open_problems.oldest_since IS 'first_seen_at of the oldest open one';
COMMENT ON COLUMN listing_open_problems.over_1_day IS 'open problems first seen at least a day ago';
COMMENT ON COLUMN listing_open_problems.over_7_days IS 'open problems first seen at least 7 days ago';
COMMENT ON COLUMN listing_open_problems.over_30_days IS 'open problems first seen at least 30 days ago';

CREATE VIEW listing_problem_weeks AS
SELECT w.account, w.week, w.code, w.opened, w.resolved,
       sum(w.opened - w.resolved) OVER (PARTITION BY w.account, w.code ORDER BY w.week)::bigint AS open_at_end
FROM (
    SELECT e.account, e.week, e.code,
           count(*) FILTER (WHERE e.opened) AS opened,
           count(*) FILTER (WHERE NOT e.opened) AS resolved
    FROM (
        SELECT p.account, p.code, date_trunc('week', p.first_seen_at AT TIME ZONE 'UTC')::date AS week, true AS opened
        FROM listing_problems p
        UNION ALL
        SELECT p.account, p.code, date_trunc('week', p.resolved_at AT TIME ZONE 'UTC')::date, false
        FROM listing_problems p
        WHERE p.resolved_at IS NOT NULL
    ) e
    GROUP BY e.account, e.week, e.code
) w;
COMMENT ON VIEW listing_problem_weeks IS 'Listing problems opened (first seen) and resolved per account, ISO week (UTC, from Monday) and error code, with how many of the code were open at the week''s end; a week without either has no row (its open count is that of the row before).';
COMMENT ON COLUMN listing_problem_weeks.account IS 'the account the locations belong to';
COMMENT ON COLUMN listing_problem_weeks.week IS 'the Monday of the UTC week';
COMMENT ON COLUMN listing_problem_weeks.code IS 'the error''s code';
COMMENT ON COLUMN listing_problem_weeks.opened IS 'problems first seen that week';
COMMENT ON COLUMN listing_problem_weeks.resolved IS 'problems resolved that week';
COMMENT ON COLUMN listing_problem_weeks.open_at_end IS 'problems of the account and code open at the end of the week: opened minus resolved, that week and every week before';

-- The default privileges of 0003 grant etl_analyst SELECT on the views
-- already; said again for databases where another role ran the migrations.
GRANT SELECT ON link_changes, ref_domain_changes, competitor_gap, target_authority, spend_by_day, spend_by_month,
    listing_open_problems, listing_problem_weeks TO etl_analyst;
