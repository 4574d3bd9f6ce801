-- The fingerprint of the key that sealed an account's tokens (issue 24):
-- the first 8 hex digits of the SHA-256 of ETL_SECRET_KEY's 32 bytes, never
-- the key. A key that does not open the tokens then says which key did.
-- Rows stored before keep NULL until their next sign-in or renewal.
ALTER TABLE accounts ADD COLUMN key_fingerprint text CHECK (key_fingerprint ~ '^[0-9a-f]{8}$');
COMMENT ON COLUMN accounts.key_fingerprint IS 'the fingerprint of the key that encrypted the tokens (first 8 hex of the SHA-256 of ETL_SECRET_KEY''s bytes; never the key); NULL for tokens stored before migration 0020';
GRANT SELECT (key_fingerprint) ON accounts TO etl_analyst;
