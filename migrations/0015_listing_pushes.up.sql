-- Listing pushes (issue 17): the desired state of an account's locations,
-- read from a relation of the user's, sent to the provider (Update
-- locations, Update location), and what became of every location. One row
-- per push, one per location of a push. Written by package push; an item's
-- outcome is committed with its push's counts after each request, and an
-- item is marked SENT in a commit of its own before its request leaves,
-- so that a push killed at any moment leaves every item either settled or
-- visibly in doubt (SENT), which the next push reads back before sending.

CREATE TABLE listing_pushes (
    push_id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account           text NOT NULL,
    relation          text NOT NULL,
    only_ids          text[],
    started_at        timestamptz NOT NULL,
    finished_at       timestamptz,
    status            text NOT NULL CHECK (status IN ('running', 'done', 'failed', 'interrupted')),
    rows_read         integer NOT NULL DEFAULT 0 CHECK (rows_read >= 0),
    planned_requests  integer NOT NULL DEFAULT 0 CHECK (planned_requests >= 0),
    planned_seconds   double precision NOT NULL DEFAULT 0 CHECK (planned_seconds >= 0),
    plan              text,
    bulk_requests     integer NOT NULL DEFAULT 0 CHECK (bulk_requests >= 0),
    single_requests   integer NOT NULL DEFAULT 0 CHECK (single_requests >= 0),
    read_backs        integer NOT NULL DEFAULT 0 CHECK (read_backs >= 0),
    sent              integer NOT NULL DEFAULT 0 CHECK (sent >= 0),
    updated           integer NOT NULL DEFAULT 0 CHECK (updated >= 0),
    failed            integer NOT NULL DEFAULT 0 CHECK (failed >= 0),
    refused           integer NOT NULL DEFAULT 0 CHECK (refused >= 0),
    unchanged         integer NOT NULL DEFAULT 0 CHECK (unchanged >= 0),
    waiting           integer NOT NULL DEFAULT 0 CHECK (waiting >= 0),
    error             text,
    CHECK (finished_at IS NULL OR finished_at >= started_at)
);
CREATE INDEX listing_pushes_account ON listing_pushes (account, push_id);

COMMENT ON TABLE listing_pushes IS 'Pushes of listings (etl listings push, or a job''s listings push step): the desired locations of an account read from a relation, diffed against the latest pulled versions, checked, and the changed ones sent. The counts are the push''s checkpoint, committed with the outcome of each request';
COMMENT ON COLUMN listing_pushes.push_id IS 'the push''s number, increasing';
COMMENT ON COLUMN listing_pushes.account IS 'the account (accounts.name) whose locations were pushed';
COMMENT ON COLUMN listing_pushes.relation IS 'the table or view the desired locations were read from, as given (schema.name or name)';
COMMENT ON COLUMN listing_pushes.only_ids IS 'the location ids the push was limited to (--only); NULL: every row of the relation';
COMMENT ON COLUMN listing_pushes.started_at IS 'when the push began';
COMMENT ON COLUMN listing_pushes.finished_at IS 'when it ended; NULL while running, or when the process died (a later push then marks it interrupted)';
COMMENT ON COLUMN listing_pushes.status IS 'running, done (every item settled; some may have failed), failed (stopped by an error, see error) or interrupted (the process died; found by a later push of the account)';
COMMENT ON COLUMN listing_pushes.rows_read IS 'rows read from the relation (for the ids of only_ids when set)';
COMMENT ON COLUMN listing_pushes.planned_requests IS 'requests the plan made (bulk and single), before any was sent';
COMMENT ON COLUMN listing_pushes.planned_seconds IS 'seconds from the first request to the last as planned, at the paced rate limits, answers assumed instantaneous';
COMMENT ON COLUMN listing_pushes.plan IS 'how the plan split the locations between bulk requests and single updates, and why';
COMMENT ON COLUMN listing_pushes.bulk_requests IS 'Update locations requests sent';
COMMENT ON COLUMN listing_pushes.single_requests IS 'Update location requests sent';
COMMENT ON COLUMN listing_pushes.read_backs IS 'Get location requests made to settle an item in doubt (sent, outcome unknown)';
COMMENT ON COLUMN listing_pushes.sent IS 'items sent (each counted once, whatever its attempts)';
COMMENT ON COLUMN listing_pushes.updated IS 'items UPDATED';
COMMENT ON COLUMN listing_pushes.failed IS 'items FAILED';
COMMENT ON COLUMN listing_pushes.refused IS 'items REFUSED locally, never sent';
COMMENT ON COLUMN listing_pushes.unchanged IS 'items UNCHANGED: the desired location equals the latest pulled version, or what an earlier push updated since';
COMMENT ON COLUMN listing_pushes.waiting IS 'items WAITING: an earlier push failed them permanently and neither the desired location nor the pulled one changed since';
COMMENT ON COLUMN listing_pushes.error IS 'why the push failed; NULL otherwise. Never holds a token';

CREATE TABLE listing_push_items (
    push_id       bigint NOT NULL REFERENCES listing_pushes ON DELETE CASCADE,
    location_id   text NOT NULL,
    account       text NOT NULL,
    outcome       text NOT NULL CHECK (outcome IN ('PLANNED', 'SENT', 'UPDATED', 'FAILED', 'REFUSED', 'UNCHANGED', 'WAITING', 'NOT_SENT')),
    content       jsonb NOT NULL,
    content_hash  bytea NOT NULL,
    base_hash     bytea,
    changes       jsonb,
    request_kind  text CHECK (request_kind IN ('bulk', 'single')),
    request_no    integer CHECK (request_no >= 1),
    planned_after interval,
    attempts      smallint NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    code          text,
    detail        text,
    field         text,
    reason        text,
    transient     boolean,
    problems      jsonb,
    read_back     boolean NOT NULL DEFAULT false,
    request_id    text,
    sent_at       timestamptz,
    settled_at    timestamptz,
    PRIMARY KEY (push_id, location_id),
    CHECK (outcome NOT IN ('SENT', 'UPDATED', 'FAILED') OR (request_kind IS NOT NULL AND attempts >= 1 AND sent_at IS NOT NULL)),
    CHECK (outcome <> 'REFUSED' OR (code IS NOT NULL AND field IS NOT NULL AND reason IS NOT NULL))
);
CREATE INDEX listing_push_items_location ON listing_push_items (account, location_id, push_id);

COMMENT ON TABLE listing_push_items IS 'What became of each location of a push: one row per location id read from the relation. The latest settled row of a location (view listing_push_latest) decides what the next push does with it';
COMMENT ON COLUMN listing_push_items.push_id IS 'the push (listing_pushes.push_id)';
COMMENT ON COLUMN listing_push_items.location_id IS 'the location''s id (spec 2.14 id), unique within the account';
COMMENT ON COLUMN listing_push_items.account IS 'the account the location belongs to (the push''s)';
COMMENT ON COLUMN listing_push_items.outcome IS 'PLANNED (to be sent by a running push), SENT (its request left, or may have: in doubt until its answer or a read-back settles it), UPDATED (the provider applied it), FAILED (the provider refused it: see code, detail, transient), REFUSED (refused locally, never sent: see field, reason), UNCHANGED (nothing to send), WAITING (failed permanently before, and nothing changed since), NOT_SENT (its push ended before sending it)';
COMMENT ON COLUMN listing_push_items.content IS 'the desired location as the push sends it (every request field of spec 2.14, with its id; JSON names of the spec), or, refused, as far as it could be read';
COMMENT ON COLUMN listing_push_items.content_hash IS 'SHA-256 of content as listing_versions.content_hash defines it, comparable with it: the desired state this row is about';
COMMENT ON COLUMN listing_push_items.base_hash IS 'content_hash of the state the desired location was diffed against: the latest pulled version, or what an earlier push updated since; NULL when the location was never pulled';
COMMENT ON COLUMN listing_push_items.changes IS 'the fields that differ from the base: [{field, from, to}] (hours as JSON text); NULL when none or unknown';
COMMENT ON COLUMN listing_push_items.request_kind IS 'bulk (Update locations) or single (Update location); NULL when not to be sent';
COMMENT ON COLUMN listing_push_items.request_no IS 'the position of its request in the push''s plan (1 = the first sent)';
COMMENT ON COLUMN listing_push_items.planned_after IS 'when the plan sends its request, after the push''s first request';
COMMENT ON COLUMN listing_push_items.attempts IS 'requests that carried the item in this push';
COMMENT ON COLUMN listing_push_items.code IS 'FAILED: the provider''s error code (BAD_REQUEST...) or the HTTP status as HTTP_503; REFUSED: the code of the first problem (REQUIRED, INVALID_PHONE, LOCATION_HAS_NOT_COMPLETE_STATUS, UNKNOWN_LOCATION, INVALID_TYPE, UNKNOWN_FIELD...)';
COMMENT ON COLUMN listing_push_items.detail IS 'FAILED: the first detail code of the provider''s error (LOCATION_HAS_NOT_COMPLETE_STATUS...); NULL otherwise';
COMMENT ON COLUMN listing_push_items.field IS 'REFUSED or FAILED: the field at fault (spec 2.14 name, with a path: businessHours.monday), when known';
COMMENT ON COLUMN listing_push_items.reason IS 'REFUSED or FAILED: why, in words';
COMMENT ON COLUMN listing_push_items.transient IS 'FAILED: true when another attempt may succeed as it is (429 past the retries, a network failure, a 5xx not applied): the next push sends it again; false when it must wait for a change';
COMMENT ON COLUMN listing_push_items.problems IS 'REFUSED: every problem found, [{code, message, field, index}]';
COMMENT ON COLUMN listing_push_items.read_back IS 'true when the outcome was settled by reading the location back (Get location) after a request whose answer left doubt';
COMMENT ON COLUMN listing_push_items.request_id IS 'the provider''s request identifier of the answer that settled it';
COMMENT ON COLUMN listing_push_items.sent_at IS 'when its last request was about to leave (committed before it left)';
COMMENT ON COLUMN listing_push_items.settled_at IS 'when its outcome was recorded';

CREATE VIEW listing_push_latest AS
SELECT DISTINCT ON (i.account, i.location_id)
       i.account, i.location_id, i.push_id, p.started_at AS pushed_at, i.outcome, i.code, i.detail, i.field, i.reason,
       i.transient, i.content, i.content_hash, i.settled_at
FROM listing_push_items i JOIN listing_pushes p USING (push_id)
WHERE i.outcome NOT IN ('PLANNED', 'NOT_SENT')
ORDER BY i.account, i.location_id, i.push_id DESC;
COMMENT ON VIEW listing_push_latest IS 'The latest outcome of each location pushed, per account: what the next push reads (SENT is in doubt until a push reads it back)';
COMMENT ON COLUMN listing_push_latest.account IS 'the account';
COMMENT ON COLUMN listing_push_latest.location_id IS 'the location''s id';
COMMENT ON COLUMN listing_push_latest.push_id IS 'the push of that outcome';
COMMENT ON COLUMN listing_push_latest.pushed_at IS 'when that push began';
COMMENT ON COLUMN listing_push_latest.outcome IS 'SENT, UPDATED, FAILED, REFUSED, UNCHANGED or WAITING';
COMMENT ON COLUMN listing_push_latest.code IS 'the code of a failure or refusal';
COMMENT ON COLUMN listing_push_latest.detail IS 'the provider''s detail code of a failure';
COMMENT ON COLUMN listing_push_latest.field IS 'the field at fault';
COMMENT ON COLUMN listing_push_latest.reason IS 'why, in words';
COMMENT ON COLUMN listing_push_latest.transient IS 'a failure the next push retries as it is';
COMMENT ON COLUMN listing_push_latest.content IS 'the desired location of that outcome';
COMMENT ON COLUMN listing_push_latest.content_hash IS 'its content hash';
COMMENT ON COLUMN listing_push_latest.settled_at IS 'when the outcome was recorded';

-- The default privileges of 0003 grant etl_analyst SELECT on these already;
-- say it here too, for a database whose defaults were changed.
GRANT SELECT ON listing_pushes, listing_push_items, listing_push_latest TO etl_analyst;
