-- Per-key rate limits: requests and tokens per fixed minute, requests in flight. 0 means no limit; a key without
-- its own value takes its group's default from GATEWAY_CONFIG (src/domain/limits).
ALTER TABLE tokens
  ADD COLUMN rpm_limit INTEGER NOT NULL DEFAULT 0 CHECK (rpm_limit >= 0),
  ADD COLUMN tpm_limit BIGINT NOT NULL DEFAULT 0 CHECK (tpm_limit >= 0),
  ADD COLUMN max_concurrency INTEGER NOT NULL DEFAULT 0 CHECK (max_concurrency >= 0);

-- One row per key and minute (floor(unix seconds / 60)) the key was used in under a limit: requests admitted, and
-- tokens billed by calls that settled in that minute. Rows of past minutes are deleted as new minutes begin.
CREATE TABLE key_rate_windows (
  token_id  BIGINT NOT NULL,
  minute    BIGINT NOT NULL,
  requests  INTEGER NOT NULL DEFAULT 0,
  tokens    BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (token_id, minute)
);

-- Requests in flight of keys with max_concurrency: one row per request, deleted when it ends. A replica that dies
-- leaves its rows behind; they lapse at expires_at, which live replicas push forward while their requests run.
CREATE TABLE key_inflight (
  slot        UUID PRIMARY KEY,
  token_id    BIGINT NOT NULL,
  expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX key_inflight_token_idx ON key_inflight (token_id);
