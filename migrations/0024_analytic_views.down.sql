DROP VIEW IF EXISTS listing_problem_weeks;
DROP VIEW IF EXISTS listing_open_problems;
DROP VIEW IF EXISTS spend_by_month;
DROP VIEW IF EXISTS spend_by_day;
DROP VIEW IF EXISTS target_authority;
DROP VIEW IF EXISTS competitor_gap;
DROP FUNCTION IF EXISTS link_velocity(date, date);
DROP VIEW IF EXISTS ref_domain_changes;
DROP VIEW IF EXISTS link_changes;
