-- OAuth 2.0 accounts (spec 5, issue 15): one row per named account, shared
-- by every process that uses the warehouse, so that a rotated refresh token
-- reaches all of them. The tokens are encrypted by package auth (AES-256-GCM
-- with the key of ETL_SECRET_KEY, the account's name and the column bound in
-- as additional data); the database never sees them in clear. A renewal
-- locks the row (SELECT ... FOR UPDATE), re-reads it and renews only if it
-- is still due, so concurrent processes renew once.

CREATE TABLE accounts (
    name               text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    flow               text NOT NULL CHECK (flow IN ('device', 'code')),
    scopes             text NOT NULL DEFAULT '',
    access_token       bytea NOT NULL,
    refresh_token      bytea NOT NULL,
    access_expires_at  timestamptz NOT NULL,
    refresh_expires_at timestamptz NOT NULL,
    signed_in_at       timestamptz NOT NULL,
    refreshed_at       timestamptz,
    refreshed_by       text
);
COMMENT ON TABLE accounts IS 'OAuth 2.0 accounts: named credentials for the data API (etl auth login --account NAME); the tokens are encrypted and unreadable to etl_analyst';
COMMENT ON COLUMN accounts.name IS 'the account''s name, as jobs name it (account: NAME)';
COMMENT ON COLUMN accounts.flow IS 'the flow that issued the tokens, and where they are renewed: device (the device authorization grant, spec 5.3) or code (the authorization code flow, spec 5.4)';
COMMENT ON COLUMN accounts.scopes IS 'the scopes asked for at sign-in, space-separated';
COMMENT ON COLUMN accounts.access_token IS 'the access token, encrypted (AES-256-GCM, key from ETL_SECRET_KEY): nonce then sealed bytes';
COMMENT ON COLUMN accounts.refresh_token IS 'the refresh token, encrypted like access_token; it rotates with every renewal';
COMMENT ON COLUMN accounts.access_expires_at IS 'when the access token expires (expires_in of the token answer)';
COMMENT ON COLUMN accounts.refresh_expires_at IS 'when the refresh token expires: 30 days after it was issued (spec 5.3); past it the account must sign in again';
COMMENT ON COLUMN accounts.signed_in_at IS 'when the account last signed in (etl auth login)';
COMMENT ON COLUMN accounts.refreshed_at IS 'when the tokens were last renewed; NULL if never since sign-in';
COMMENT ON COLUMN accounts.refreshed_by IS 'the host name of the process that last renewed the tokens';

-- The default privileges of 0003 grant etl_analyst SELECT on every new
-- table: take it back, and give back only the columns that hold no token.
REVOKE ALL ON accounts FROM etl_analyst;
GRANT SELECT (name, flow, scopes, access_expires_at, refresh_expires_at, signed_in_at, refreshed_at, refreshed_by)
    ON accounts TO etl_analyst;
