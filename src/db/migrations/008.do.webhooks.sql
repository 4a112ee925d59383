-- Webhooks of video tasks (issue 8 §4).
--   account_webhook_secrets  the account's whsec_ signing secret, AES-256-GCM under GATEWAY_SECRET (never plain)
--   webhook_attempts         one row per delivery attempt: what an operator and the console timeline show
--                            (never the secret, never the receiver's body)
CREATE TABLE account_webhook_secrets (
  account_id     BIGINT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
  secret_cipher  BYTEA NOT NULL,
  created_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE webhook_attempts (
  id           BIGSERIAL PRIMARY KEY,
  webhook_id   TEXT NOT NULL,
  task_id      TEXT NOT NULL,
  account_id   BIGINT NOT NULL,
  attempt      INTEGER NOT NULL,
  status       INTEGER,
  error        TEXT,
  delivered    BOOLEAN NOT NULL,
  created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX webhook_attempts_task_idx ON webhook_attempts (task_id, id);
