-- Periodic budgets per key: credits a key may spend per calendar day, week or month (UTC), on top of its quota.
-- period_used counts what the key held or was billed in the period that starts at period_start (Unix seconds);
-- a reserve in a later period starts the count again. A hold records the period it was counted in, so its settle
-- or release corrects that period's count only.
ALTER TABLE tokens
  ADD COLUMN period_quota BIGINT NOT NULL DEFAULT 0 CHECK (period_quota >= 0),
  ADD COLUMN quota_period TEXT CHECK (quota_period IN ('day', 'week', 'month')),
  ADD COLUMN period_start BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN period_used BIGINT NOT NULL DEFAULT 0,
  ADD CONSTRAINT tokens_period_needs_unit CHECK (period_quota = 0 OR quota_period IS NOT NULL);
ALTER TABLE quota_holds ADD COLUMN period_start BIGINT;

-- billing_reserve takes the period to count in (src/db/functions.sql defines it anew): the old signature goes.
DROP FUNCTION IF EXISTS billing_reserve(TEXT, BIGINT, BIGINT, BIGINT, TEXT, DOUBLE PRECISION, BOOLEAN);
