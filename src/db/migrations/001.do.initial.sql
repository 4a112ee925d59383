-- Accounts own keys. A system token authenticates /api/*; only its SHA-256 is kept.
CREATE TABLE accounts (
  id                 BIGSERIAL PRIMARY KEY,
  username           TEXT NOT NULL UNIQUE,
  password_hash      TEXT NOT NULL,
  system_token_hash  BYTEA UNIQUE,
  -- Wallet in credits (500,000 = 1 USD); NULL means the wallet does not cap spending.
  quota              BIGINT CHECK (quota IS NULL OR quota >= 0),
  used_quota         BIGINT NOT NULL DEFAULT 0,
  created_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Bulk rollouts (issuance, status changes, rotation) run as Temporal workflows keys:<id>.
CREATE TABLE key_batches (
  id                BIGSERIAL PRIMARY KEY,
  account_id        BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  kind              TEXT NOT NULL CHECK (kind IN ('issue', 'status', 'rotate')),
  status            TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
  requested         INTEGER NOT NULL CHECK (requested >= 0),
  created           INTEGER NOT NULL DEFAULT 0,
  params            JSONB NOT NULL DEFAULT '{}'::jsonb,
  source_batch_id   BIGINT REFERENCES key_batches(id) ON DELETE SET NULL,
  idempotency_key   TEXT,
  request_hash      TEXT,
  error             TEXT,
  started_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
  finished_at       TIMESTAMPTZ,
  UNIQUE (account_id, idempotency_key)
);

-- The API key record of the spec. Key material: SHA-256 for lookup, AES-256-GCM for read-back.
CREATE TABLE tokens (
  id               BIGSERIAL PRIMARY KEY,
  user_id          BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  key_hash         BYTEA NOT NULL UNIQUE,
  key_cipher       BYTEA NOT NULL,
  status           SMALLINT NOT NULL DEFAULT 1 CHECK (status IN (1, 2)),
  name             TEXT NOT NULL DEFAULT '',
  "group"          TEXT NOT NULL DEFAULT '',
  models           TEXT NOT NULL DEFAULT '',
  remain_quota     BIGINT NOT NULL DEFAULT 0,
  unlimited_quota  BOOLEAN NOT NULL DEFAULT false,
  used_quota       BIGINT NOT NULL DEFAULT 0,
  expired_time     BIGINT NOT NULL DEFAULT -1,
  created_time     BIGINT NOT NULL,
  accessed_time    BIGINT NOT NULL DEFAULT 0,
  batch_id         BIGINT REFERENCES key_batches(id) ON DELETE SET NULL,
  batch_index      INTEGER,
  UNIQUE (batch_id, batch_index)
);
CREATE INDEX tokens_user_id_idx ON tokens (user_id, id);

-- Upstream providers. The catalog of /v1/models is the union of enabled channels' models.
CREATE TABLE channels (
  id          BIGSERIAL PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,
  type        TEXT NOT NULL,
  base_url    TEXT NOT NULL,
  key_cipher  BYTEA,
  models      TEXT[] NOT NULL DEFAULT '{}',
  groups      TEXT[] NOT NULL DEFAULT '{default}',
  owned_by    TEXT NOT NULL DEFAULT 'gateway',
  status      SMALLINT NOT NULL DEFAULT 1 CHECK (status IN (1, 2)),
  priority    INTEGER NOT NULL DEFAULT 0,
  created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Durable reservations taken before an upstream call; settled into the ledger or released.
CREATE TABLE quota_holds (
  id            BIGSERIAL PRIMARY KEY,
  business_key  TEXT NOT NULL UNIQUE,
  account_id    BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  token_id      BIGINT REFERENCES tokens(id) ON DELETE SET NULL,
  amount        BIGINT NOT NULL CHECK (amount >= 0),
  reason        TEXT NOT NULL,
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
  expires_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX quota_holds_expires_idx ON quota_holds (expires_at);

-- Billed calls only (the "console log"). A failure never gets a row.
CREATE TABLE ledger (
  id                 BIGSERIAL PRIMARY KEY,
  request_id         TEXT NOT NULL UNIQUE,
  task_id            TEXT UNIQUE,
  account_id         BIGINT NOT NULL,
  token_id           BIGINT,
  token_name         TEXT NOT NULL DEFAULT '',
  model              TEXT NOT NULL,
  channel_id         BIGINT,
  prompt_tokens      INTEGER NOT NULL DEFAULT 0,
  completion_tokens  INTEGER NOT NULL DEFAULT 0,
  units              INTEGER NOT NULL DEFAULT 0,
  quota              BIGINT NOT NULL CHECK (quota >= 0),
  latency_ms         INTEGER NOT NULL DEFAULT 0,
  created_at         BIGINT NOT NULL
);
CREATE INDEX ledger_account_idx ON ledger (account_id, id);

-- Every management write, without key material.
CREATE TABLE audit_events (
  id           BIGSERIAL PRIMARY KEY,
  account_id   BIGINT NOT NULL,
  action       TEXT NOT NULL,
  target_type  TEXT NOT NULL,
  target_id    TEXT,
  request_id   TEXT,
  details      JSONB NOT NULL DEFAULT '{}'::jsonb,
  created_at   BIGINT NOT NULL
);
CREATE INDEX audit_events_account_idx ON audit_events (account_id, id);
