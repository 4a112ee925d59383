-- Video tasks of the three families (issue 8). One row per task, written by the api at submit and by the
-- workflow's activities as the task runs; the family GETs read it. The workflow video:<id> is the process.
--   status       queued | processing | completed | failed (the family views map these to their own words)
--   error_code   on failed: timeout, cancelled, or the upstream's code (sanitised)
--   quota        credits held at submit; billed on completion through the hold task:<id> (ledger.task_id)
--   request      the normalised request sent upstream (no credentials)
--   callback_url X-Callback-Url, webhook target on a terminal state
--   public_origin the origin the client submitted to (its links, in a webhook, point there)
--   asset_url    where the upstream serves the finished file (never shown to clients: links point at the gateway)
CREATE TABLE video_tasks (
  id               TEXT PRIMARY KEY,
  family           CHAR(1) NOT NULL CHECK (family IN ('A', 'B', 'C')),
  account_id       BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  token_id         BIGINT REFERENCES tokens(id) ON DELETE SET NULL,
  token_name       TEXT NOT NULL DEFAULT '',
  model            TEXT NOT NULL,
  prompt           TEXT NOT NULL,
  request          JSONB NOT NULL,
  channel          TEXT NOT NULL,
  status           TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'processing', 'completed', 'failed')),
  progress         INTEGER NOT NULL DEFAULT 0,
  upstream_id      TEXT,
  quota            BIGINT NOT NULL CHECK (quota >= 0),
  billed           BIGINT,
  error_code       TEXT,
  error_message    TEXT,
  duration         INTEGER,
  resolution       TEXT,
  asset_url        TEXT,
  callback_url     TEXT,
  public_origin    TEXT,
  idempotency_key  TEXT,
  request_id       TEXT NOT NULL,
  created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
  finished_at      TIMESTAMPTZ,
  UNIQUE (account_id, idempotency_key)
);
CREATE INDEX video_tasks_account_created_idx ON video_tasks (account_id, created_at DESC);
