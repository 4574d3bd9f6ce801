-- A claim on each row of the unit ledger (issue 25): a random id the
-- process that reserves a request gives its row, and settles it by. After
-- a failover that lost commits (an asynchronous standby promoted), the new
-- primary's identity sequence hands out ledger_ids the lost rows had: a
-- process that settled by ledger_id alone would settle another request's
-- row. By its claim it finds its own row, or finds it lost and books it
-- again. Rows of before this migration keep NULL.
ALTER TABLE unit_ledger ADD COLUMN claim uuid;
CREATE UNIQUE INDEX unit_ledger_claim_idx ON unit_ledger (claim);
COMMENT ON COLUMN unit_ledger.claim IS 'a random id the process that reserved the row gave it, and settles it by: after a failover that lost commits, ledger_ids are handed out again, claims never; NULL for rows of before migration 0022';
