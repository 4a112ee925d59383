-- Read model of bulk key rollouts (workflows keys:<id>), written by their activities.
--   phase          where the workflow is: issuing, grace, updating (status batches), disabling, done
--   changed        keys whose status this batch changed (status batches; the disabling phase of a rotation)
--   processed      keys of the source batch visited so far by a status change (progress of status/disabling)
--   grace_ends_at  end of a rotation's grace period, once it has started
ALTER TABLE key_batches ADD COLUMN phase TEXT;
ALTER TABLE key_batches ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE key_batches ADD COLUMN processed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE key_batches ADD COLUMN grace_ends_at TIMESTAMPTZ;

CREATE INDEX key_batches_account_idx ON key_batches (account_id, id);
CREATE INDEX key_batches_source_idx ON key_batches (source_batch_id) WHERE source_batch_id IS NOT NULL;
