-- The update requests of listing pushes (issue 17), one row each, with
-- when it left: the rate limits of the update operations are sliding
-- windows per account (spec 8.2: Update locations 5 a minute, Update
-- location 5 a second), and a push started within a minute of another
-- (one killed, interrupted, or just finished) must count the requests
-- that one sent, or its first ones meet a 429. listing_push_items keeps
-- only the last request of each item, so the requests an item took part
-- in before a retry would be lost from it; this table keeps them all.
-- A row is committed with its items marked SENT, before the request
-- leaves: a request that may have left is never missing.

CREATE TABLE listing_push_requests (
    push_id     bigint NOT NULL REFERENCES listing_pushes ON DELETE CASCADE,
    request_no  integer NOT NULL CHECK (request_no >= 1),
    account     text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('bulk', 'single')),
    locations   integer NOT NULL CHECK (locations >= 1),
    sent_at     timestamptz NOT NULL,
    attempts    smallint CHECK (attempts >= 0),
    answered_at timestamptz,
    PRIMARY KEY (push_id, request_no),
    CHECK (answered_at IS NULL OR answered_at >= sent_at)
);
CREATE INDEX listing_push_requests_sent ON listing_push_requests (account, kind, sent_at);

COMMENT ON TABLE listing_push_requests IS 'Every update request a listing push sent (Update locations, Update location), with when it left: a push reads those of the last minute to pace its first requests under the rate limits of spec 8.2. Read-backs (Get location) are not listed';
COMMENT ON COLUMN listing_push_requests.push_id IS 'the push (listing_pushes.push_id)';
COMMENT ON COLUMN listing_push_requests.request_no IS 'its number in the push (listing_push_items.request_no), from 1, counting every round';
COMMENT ON COLUMN listing_push_requests.account IS 'the account the request updated (the push''s)';
COMMENT ON COLUMN listing_push_requests.kind IS 'bulk (Update locations) or single (Update location)';
COMMENT ON COLUMN listing_push_requests.locations IS 'the locations it carried';
COMMENT ON COLUMN listing_push_requests.sent_at IS 'when its rate limit let it go, on the pushing process''s clock; committed before it left';
COMMENT ON COLUMN listing_push_requests.attempts IS 'the times it was written to the network (more than 1 when the client retried it after a 429, or after a failure to send); NULL until answered, or when the process died first';
COMMENT ON COLUMN listing_push_requests.answered_at IS 'when its answer (or its failure) was recorded; NULL when the process died first. A request retried by the client left last before this time: a later push counts it at answered_at';

GRANT SELECT ON listing_push_requests TO etl_analyst;
