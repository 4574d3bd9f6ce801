CREATE OR REPLACE VIEW listing_push_latest AS
SELECT DISTINCT ON (i.account, i.location_id)
       i.account, i.location_id, i.push_id, p.started_at AS pushed_at, i.outcome, i.code, i.detail, i.field, i.reason,
       i.transient, i.content, i.content_hash, i.settled_at
FROM listing_push_items i JOIN listing_pushes p USING (push_id)
WHERE i.outcome NOT IN ('PLANNED', 'NOT_SENT')
ORDER BY i.account, i.location_id, i.push_id DESC;
DELETE FROM listing_push_items WHERE outcome = 'KEPT';
ALTER TABLE listing_push_items DROP CONSTRAINT IF EXISTS listing_push_items_outcome_check;
ALTER TABLE listing_push_items ADD CONSTRAINT listing_push_items_outcome_check
    CHECK (outcome IN ('PLANNED', 'SENT', 'UPDATED', 'FAILED', 'REFUSED', 'UNCHANGED', 'WAITING', 'NOT_SENT'));
DROP INDEX IF EXISTS listing_pushes_undoes;
ALTER TABLE listing_pushes DROP COLUMN IF EXISTS kept;
ALTER TABLE listing_pushes DROP COLUMN IF EXISTS undoes;
