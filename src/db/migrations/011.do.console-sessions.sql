-- Web console sign-ins (issue 9 §1). The cookie carries a random session id; only its sha256 is stored, so a
-- copy of this table signs nobody in. `csrf` is the token the console sends back on every write.
CREATE TABLE console_sessions (
  id_hash     BYTEA PRIMARY KEY,
  account_id  BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  csrf        TEXT NOT NULL,
  created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
  expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX console_sessions_expiry_idx ON console_sessions (expires_at);
