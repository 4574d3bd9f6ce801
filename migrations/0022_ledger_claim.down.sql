DROP INDEX IF EXISTS unit_ledger_claim_idx;
ALTER TABLE unit_ledger DROP COLUMN IF EXISTS claim;
