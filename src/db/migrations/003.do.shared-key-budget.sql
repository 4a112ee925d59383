-- One budget per rotated key: during a rotation's grace period the old key stays enabled, and both keys
-- must spend one balance, not two copies of it.
--   tokens.quota_owner_id      the key whose remain_quota this key spends (NULL: its own). Set by a rotation
--                              on the old key (and on keys already sharing its budget) to the replacement.
--                              An owner never has an owner itself. Deleting the owner makes the key fall
--                              back to its own balance (0 after the move).
--   quota_holds.budget_token_id  the key whose remain_quota the hold was debited from; refunds go back to
--                              that key's budget. No foreign key on purpose: deleting the budget key must not
--                              lock or update holds (the delete would then lock key -> holds, the opposite
--                              of the hold -> key order every settle uses). A dangling id refunds nothing,
--                              exactly like a deleted key. NULL on holds taken before this migration: their
--                              budget is token_id.
--   key_batches.workflow_started_at  when the batch's workflow was first known to be started; NULL while a
--                              start has not succeeded yet (GET then tries again).
ALTER TABLE tokens ADD COLUMN quota_owner_id BIGINT REFERENCES tokens(id) ON DELETE SET NULL;
CREATE INDEX tokens_quota_owner_idx ON tokens (quota_owner_id) WHERE quota_owner_id IS NOT NULL;

ALTER TABLE quota_holds ADD COLUMN budget_token_id BIGINT;

ALTER TABLE key_batches ADD COLUMN workflow_started_at TIMESTAMPTZ;
-- Batches that existed before this column are treated as started; a GET never needs to start them.
UPDATE key_batches SET workflow_started_at = started_at;
