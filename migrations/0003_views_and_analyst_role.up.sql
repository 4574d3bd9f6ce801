-- Analyst conveniences: a view per fact table with each target's latest
-- month (keyword metrics: each keyword and country's latest month), and a
-- read-only role.
--
-- etl_analyst is a NOLOGIN role: grant it to the analysts' own roles
-- (GRANT etl_analyst TO alice). Roles belong to the whole cluster, so the
-- down migration revokes its rights in this database but keeps the role.

CREATE VIEW backlink_overview_latest AS
SELECT t.* FROM backlink_overview t
JOIN (SELECT target_id, max(month) AS month FROM backlink_overview GROUP BY target_id) latest USING (target_id, month);
COMMENT ON VIEW backlink_overview_latest IS 'The rows of each target''s latest month in backlink_overview.';

CREATE VIEW backlink_history_latest AS
SELECT t.* FROM backlink_history t
JOIN (SELECT target_id, max(month) AS month FROM backlink_history GROUP BY target_id) latest USING (target_id, month);
COMMENT ON VIEW backlink_history_latest IS 'The rows of each target''s latest month in backlink_history.';

CREATE VIEW backlinks_latest AS
SELECT t.* FROM backlinks t
JOIN (SELECT target_id, max(month) AS month FROM backlinks GROUP BY target_id) latest USING (target_id, month);
COMMENT ON VIEW backlinks_latest IS 'The rows of each target''s latest month in backlinks.';

CREATE VIEW ref_domains_latest AS
SELECT t.* FROM ref_domains t
JOIN (SELECT target_id, max(month) AS month FROM ref_domains GROUP BY target_id) latest USING (target_id, month);
COMMENT ON VIEW ref_domains_latest IS 'The rows of each target''s latest month in ref_domains.';

CREATE VIEW ref_ips_latest AS
SELECT t.* FROM ref_ips t
JOIN (SELECT target_id, max(month) AS month FROM ref_ips GROUP BY target_id) latest USING (target_id, month);
COMMENT ON VIEW ref_ips_latest IS 'The rows of each target''s latest month in ref_ips.';

CREATE VIEW indexed_pages_latest AS
SELECT t.* FROM indexed_pages t
JOIN (SELECT target_id, max(month) AS month FROM indexed_pages GROUP BY target_id) latest USING (target_id, month);
COMMENT ON VIEW indexed_pages_latest IS 'The rows of each target''s latest month in indexed_pages.';

CREATE VIEW anchors_latest AS
SELECT t.* FROM anchors t
JOIN (SELECT target_id, max(month) AS month FROM anchors GROUP BY target_id) latest USING (target_id, month);
COMMENT ON VIEW anchors_latest IS 'The rows of each target''s latest month in anchors.';

CREATE VIEW score_profile_latest AS
SELECT t.* FROM score_profile t
JOIN (SELECT target_id, max(month) AS month FROM score_profile GROUP BY target_id) latest USING (target_id, month);
COMMENT ON VIEW score_profile_latest IS 'The rows of each target''s latest month in score_profile.';

CREATE VIEW competitors_latest AS
SELECT t.* FROM competitors t
JOIN (SELECT target_id, max(month) AS month FROM competitors GROUP BY target_id) latest USING (target_id, month);
COMMENT ON VIEW competitors_latest IS 'The rows of each target''s latest month in competitors.';

CREATE VIEW keyword_metrics_latest AS
SELECT t.* FROM keyword_metrics t
JOIN (SELECT keyword, country, max(month) AS month FROM keyword_metrics GROUP BY keyword, country) latest USING (keyword, country, month);
COMMENT ON VIEW keyword_metrics_latest IS 'The rows of each keyword and country''s latest month in keyword_metrics.';

DO $$
BEGIN
    CREATE ROLE etl_analyst NOLOGIN;
EXCEPTION WHEN duplicate_object THEN
    NULL; -- another database of the cluster created it
END
$$;
COMMENT ON ROLE etl_analyst IS 'Read-only access to the etl warehouse: grant it to analysts.';
GRANT USAGE ON SCHEMA public TO etl_analyst;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO etl_analyst;
-- Tables created later (by later migrations, run as this role) too; month
-- partitions need no grant: analysts read them through their parent.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO etl_analyst;
