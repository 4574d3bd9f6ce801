-- Undoing a listing push (issue 28): etl listings undo --push N sends,
-- as a push of its own, the version each location had before push N
-- updated it. That push records which push it undoes, and the locations
-- it left alone because another writer changed them since push N (KEPT,
-- with what changed), so the warehouse shows which push undid which.

ALTER TABLE listing_pushes ADD COLUMN undoes bigint REFERENCES listing_pushes (push_id);
ALTER TABLE listing_pushes ADD COLUMN kept integer NOT NULL DEFAULT 0 CHECK (kept >= 0);
CREATE INDEX listing_pushes_undoes ON listing_pushes (undoes) WHERE undoes IS NOT NULL;
COMMENT ON COLUMN listing_pushes.undoes IS 'the push this one undoes (etl listings undo --push N): it sent each location the version it had before push N updated it; NULL for a push of a relation';
COMMENT ON COLUMN listing_pushes.kept IS 'an undo: the locations it left alone (KEPT) because another writer changed them since the push undone';

ALTER TABLE listing_push_items DROP CONSTRAINT listing_push_items_outcome_check;
ALTER TABLE listing_push_items ADD CONSTRAINT listing_push_items_outcome_check
    CHECK (outcome IN ('PLANNED', 'SENT', 'UPDATED', 'FAILED', 'REFUSED', 'UNCHANGED', 'WAITING', 'NOT_SENT', 'KEPT'));
COMMENT ON COLUMN listing_push_items.outcome IS 'PLANNED (to be sent by a running push), SENT (its request left, or may have: in doubt until its answer or a read-back settles it), UPDATED (the provider applied it), FAILED (the provider refused it: see code, detail, transient), REFUSED (refused locally, never sent: see field, reason), UNCHANGED (nothing to send), WAITING (failed permanently before, and nothing changed since), NOT_SENT (its push ended before sending it), KEPT (an undo left it alone: changed since the push undone by another writer, see changes and reason; or no version before that push is stored)';

-- KEPT is no outcome a later push acts on: the latest outcome of a
-- location stays that of the push before.
CREATE OR REPLACE VIEW listing_push_latest AS
SELECT DISTINCT ON (i.account, i.location_id)
       i.account, i.location_id, i.push_id, p.started_at AS pushed_at, i.outcome, i.code, i.detail, i.field, i.reason,
       i.transient, i.content, i.content_hash, i.settled_at
FROM listing_push_items i JOIN listing_pushes p USING (push_id)
WHERE i.outcome NOT IN ('PLANNED', 'NOT_SENT', 'KEPT')
ORDER BY i.account, i.location_id, i.push_id DESC;
