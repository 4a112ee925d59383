-- Usage dimensions in the ledger, holds that record which balances they debited, and one live definition of every
-- SQL function (src/db/functions.sql, applied after the migrations by src/db/migrate.ts).
--
-- ledger: prompt_tokens stays every input token (cached ones included) and completion_tokens every output token
-- (reasoning included), as clients of one-api and new-api read them; these columns say how they split.
ALTER TABLE ledger
  ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0,     -- every cache write, 5-minute and 1-hour
  ADD COLUMN cache_write_1h_tokens INTEGER NOT NULL DEFAULT 0,  -- of which 1-hour writes
  ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0,       -- part of completion_tokens
  ADD COLUMN image_input_tokens INTEGER NOT NULL DEFAULT 0,     -- part of the uncached input
  ADD COLUMN audio_input_tokens INTEGER NOT NULL DEFAULT 0,     -- part of the uncached input
  ADD COLUMN audio_output_tokens INTEGER NOT NULL DEFAULT 0;    -- part of completion_tokens

-- Whether the reserve debited the account wallet (it has a quota) or not (quota NULL, unlimited): settle, release
-- and the sweeper give money back only where it was taken, whatever the wallet became meanwhile. Holds open now
-- were taken under the rule that an unlimited wallet is not written.
ALTER TABLE quota_holds ADD COLUMN wallet_debited BOOLEAN NOT NULL DEFAULT true;
UPDATE quota_holds h SET wallet_debited = (a.quota IS NOT NULL) FROM accounts a WHERE a.id = h.account_id;

-- The signatures functions.sql replaces (their ledger columns travel as one JSONB entry now).
DROP FUNCTION billing_settle(TEXT, BIGINT, BOOLEAN, TEXT, TEXT, TEXT, TEXT, BIGINT, INTEGER, INTEGER, INTEGER, INTEGER, BOOLEAN, TEXT, BOOLEAN);
DROP FUNCTION billing_settle_lease(TEXT, BIGINT, BIGINT, BIGINT, BIGINT, TEXT, TEXT, TEXT, INTEGER, INTEGER, INTEGER, INTEGER, BOOLEAN, TEXT);

-- functions.sql is applied when its text changed since the last time.
CREATE TABLE schema_functions (
  name        TEXT PRIMARY KEY,
  checksum    TEXT NOT NULL,
  applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
