-- Batch inference: the Files API's files, the batches (OpenAI Batch API and Anthropic Message Batches) and their
-- lines. A batch runs as workflow batch:<id>; its lines' state lives here, never in the workflow's history.

-- Files of the Files API (purpose batch, and the batch_output files the gateway writes). The bytes live in the
-- object store under object_key; the row is the file's record and its owner.
--   lines       the input's line count as counted at upload (null for outputs)
--   expires_at  outputs expire after BATCH_FILE_RETENTION_DAYS; a sweep deletes them
--   deleted_at  set by DELETE /v1/files/{id} or the sweep; the row stays so ids never come back
CREATE TABLE batch_files (
  id          TEXT PRIMARY KEY,
  account_id  BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  purpose     TEXT NOT NULL,
  filename    TEXT NOT NULL,
  bytes       BIGINT NOT NULL CHECK (bytes >= 0),
  lines       INTEGER,
  object_key  TEXT NOT NULL,
  created_at  BIGINT NOT NULL,
  expires_at  BIGINT,
  deleted_at  BIGINT
);
CREATE INDEX batch_files_account_idx ON batch_files (account_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX batch_files_expiry_idx ON batch_files (expires_at) WHERE deleted_at IS NULL AND expires_at IS NOT NULL;

-- One batch of either API.
--   api          openai | anthropic (which shapes its reads take)
--   endpoint     what each line calls: /v1/chat/completions, /v1/embeddings, /v1/responses or /v1/messages
--   status       validating | in_progress | finalizing | completed | failed | expired | cancelling | cancelled
--   errors       OpenAI's errors.data[] when validation failed the batch
--   total, succeeded, failed, canceled, expired   the lines by outcome (written with the lines)
--   usage_*      the tokens of its lines' ledger rows (input, cached input, output, reasoning), added as lines are
--                recorded and counted again from the ledger when it ends
--   *_at         seconds since the epoch
CREATE TABLE inference_batches (
  id               TEXT PRIMARY KEY,
  api              TEXT NOT NULL CHECK (api IN ('openai', 'anthropic')),
  account_id       BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  token_id         BIGINT REFERENCES tokens(id) ON DELETE SET NULL,
  token_name       TEXT NOT NULL DEFAULT '',
  endpoint         TEXT NOT NULL,
  input_file_id    TEXT,
  completion_window TEXT NOT NULL DEFAULT '24h',
  status           TEXT NOT NULL,
  errors           JSONB,
  output_file_id   TEXT,
  error_file_id    TEXT,
  metadata         JSONB,
  callback_url     TEXT,
  public_origin    TEXT,
  request_id       TEXT NOT NULL,
  total            INTEGER NOT NULL DEFAULT 0,
  succeeded        INTEGER NOT NULL DEFAULT 0,
  failed           INTEGER NOT NULL DEFAULT 0,
  canceled         INTEGER NOT NULL DEFAULT 0,
  expired          INTEGER NOT NULL DEFAULT 0,
  quota_exhausted  BOOLEAN NOT NULL DEFAULT false,
  usage_input      BIGINT NOT NULL DEFAULT 0,
  usage_cached     BIGINT NOT NULL DEFAULT 0,
  usage_output     BIGINT NOT NULL DEFAULT 0,
  usage_reasoning  BIGINT NOT NULL DEFAULT 0,
  created_at       BIGINT NOT NULL,
  in_progress_at   BIGINT,
  expires_at       BIGINT NOT NULL,
  finalizing_at    BIGINT,
  completed_at     BIGINT,
  failed_at        BIGINT,
  expired_at       BIGINT,
  cancelling_at    BIGINT,
  cancelled_at     BIGINT,
  ended_at         BIGINT,
  deleted_at       BIGINT
);
CREATE INDEX inference_batches_account_idx ON inference_batches (account_id, api, created_at DESC, id DESC) WHERE deleted_at IS NULL;

-- A batch's lines, in input order. request_id is the line's business key in the ledger and the holds
-- (`<batch id>:<custom_id>`): a line is billed at most once whatever reruns it.
--   state        pending | succeeded | failed | canceled | expired
--   status_code  the HTTP status the line's call ended with (failed lines: the error's status)
--   result       the answer's body (succeeded) or the error object (failed)
--   channel      the channel whose own batch API runs the line (null: the gateway runs it through the relay)
--   provider_batch_id  the provider batch the line was sent in
CREATE TABLE batch_lines (
  batch_id     TEXT NOT NULL REFERENCES inference_batches(id) ON DELETE CASCADE,
  idx          INTEGER NOT NULL,
  custom_id    TEXT NOT NULL,
  body         JSONB NOT NULL,
  state        TEXT NOT NULL DEFAULT 'pending',
  status_code  INTEGER,
  result       JSONB,
  request_id   TEXT NOT NULL,
  channel      TEXT,
  provider_batch_id TEXT,
  PRIMARY KEY (batch_id, idx),
  UNIQUE (batch_id, custom_id)
);
CREATE INDEX batch_lines_pending_idx ON batch_lines (batch_id, idx) WHERE state = 'pending';

-- The provider batches of a batch, one per channel with `batch_api: true`. The row is written before the provider's
-- create (provider_batch_id null): after a crash in between, the provider is searched for the batch before any
-- second create.
CREATE TABLE provider_batches (
  batch_id          TEXT NOT NULL REFERENCES inference_batches(id) ON DELETE CASCADE,
  channel           TEXT NOT NULL,
  provider_batch_id TEXT,
  lines             INTEGER NOT NULL DEFAULT 0,
  created_at        BIGINT NOT NULL,
  ended_at          BIGINT,
  PRIMARY KEY (batch_id, channel)
);
