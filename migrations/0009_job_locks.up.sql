-- The job lock: which process is running each job, so that a job never
-- overlaps itself (runs and backfills apart).
--
-- Until now it was a session advisory lock on a key derived from the
-- job's name. Any role that can connect may take any advisory lock, so a
-- read-only analyst (etl_analyst) could take a job's key and block its
-- runs and schedules ("the job is already running"). A row of this table
-- is taken with SELECT ... FOR UPDATE, which needs the UPDATE privilege:
-- etl_analyst has SELECT only, so it can read who holds a job but can
-- neither take nor lock the row (LOCK TABLE in any mode but ACCESS SHARE
-- needs UPDATE, DELETE or TRUNCATE too, and ACCESS SHARE conflicts with
-- nothing the lock does).
--
-- The holder is a backend, not a transaction: the row names the backend
-- of the holder's own lock connection (its pid, session role and start
-- time, as pg_stat_activity shows them), and the lock is held while that
-- backend lives. A process that dies frees it when its connection ends,
-- as the advisory lock did, and no transaction stays open for the length
-- of a run (which would hold back vacuum). Taking it is one short
-- transaction: the row lock serialises takers, the first writes itself,
-- the next sees a live holder and is refused.

CREATE TABLE job_locks (
    job           text        NOT NULL,
    class         text        NOT NULL CHECK (class IN ('run', 'backfill')),
    holder        text,
    backend_pid   integer,
    backend_role  oid,
    backend_start timestamptz,
    taken_at      timestamptz,
    PRIMARY KEY (job, class),
    CHECK ((backend_pid IS NULL) = (backend_role IS NULL) AND (backend_pid IS NULL) = (backend_start IS NULL))
);
COMMENT ON TABLE job_locks IS 'The lock that keeps a job from overlapping itself: one row per job and class, held while the backend it names is alive (pg_stat_activity with that pid, role and backend_start); free when backend_pid is NULL or that backend has ended. Taken and released by etl only (it needs UPDATE); analysts may read it.';
COMMENT ON COLUMN job_locks.job IS 'name of the job';
COMMENT ON COLUMN job_locks.class IS 'run (etl run and schedules) or backfill: a backfill fetches other months, so it locks apart from runs';
COMMENT ON COLUMN job_locks.holder IS 'host and process id of the etl process holding the lock; NULL once released';
COMMENT ON COLUMN job_locks.backend_pid IS 'pg_stat_activity.pid of the holder''s lock connection; NULL once released';
COMMENT ON COLUMN job_locks.backend_role IS 'pg_stat_activity.usesysid (session role) of the holder''s lock connection, so that a later backend reusing the pid under another role is not taken for the holder; NULL once released';
COMMENT ON COLUMN job_locks.backend_start IS 'pg_stat_activity.backend_start of the holder''s lock connection, so that a later backend reusing the pid is not taken for the holder; NULL once released';
COMMENT ON COLUMN job_locks.taken_at IS 'when the lock was last taken';

-- The default privileges of 0003 grant etl_analyst SELECT on it already;
-- said again for databases where another role ran the migrations.
GRANT SELECT ON job_locks TO etl_analyst;
