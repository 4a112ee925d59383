-- Sign-in security: the operator role, throttled password and token attempts shared by every replica, and failed
-- attempts in the audit log.
--
-- accounts.is_admin: the operator's view (channel health, global metrics). The bootstrap account has it.
ALTER TABLE accounts ADD COLUMN is_admin BOOLEAN NOT NULL DEFAULT false;
UPDATE accounts SET is_admin = true WHERE username = 'admin';

-- A failed sign-in with a username no account has is audited without an account.
ALTER TABLE audit_events ALTER COLUMN account_id DROP NOT NULL;

-- Failed attempts per (scope, subject): scope 'username' (the name tried, known or not) or 'address' (the client's
-- address). Failures older than the window start the count again; past a threshold each failure locks the subject
-- for a growing time (src/domain/accounts/sign-in-throttle.ts).
CREATE TABLE sign_in_failures (
  scope            TEXT NOT NULL,
  subject          TEXT NOT NULL,
  failures         INTEGER NOT NULL,
  last_failure_at  TIMESTAMPTZ NOT NULL,
  locked_until     TIMESTAMPTZ,
  PRIMARY KEY (scope, subject)
);
CREATE INDEX sign_in_failures_age_idx ON sign_in_failures (last_failure_at);
