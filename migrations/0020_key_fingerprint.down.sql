ALTER TABLE accounts DROP COLUMN IF EXISTS key_fingerprint;
