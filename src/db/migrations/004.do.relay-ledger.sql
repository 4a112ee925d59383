-- Relay columns of the ledger (billed calls only):
--   is_stream  the call was a streamed chat completion
--   channel    name of the gateway-config channel that served it (channels live in the config file, not in a
--              table, so channel_id stays NULL for relayed calls)
-- And an index for /api/log filters and paging within one account.
ALTER TABLE ledger ADD COLUMN is_stream BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE ledger ADD COLUMN channel TEXT NOT NULL DEFAULT '';
CREATE INDEX ledger_account_created_idx ON ledger (account_id, created_at, id);
