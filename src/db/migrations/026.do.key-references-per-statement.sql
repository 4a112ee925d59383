-- A key's owner and batch are checked once per statement instead of once per row: the foreign keys of tokens.user_id
-- and tokens.batch_id ran a lookup and a row lock for every inserted key, a fifth of a million-key rollout's
-- database time. The statement triggers below (functions in src/db/functions.sql) check and lock the distinct
-- owners and batches of an insert; the delete triggers keep the constraints' ON DELETE actions (an account's keys
-- go with it; a deleted batch leaves its keys without one).
ALTER TABLE tokens DROP CONSTRAINT tokens_user_id_fkey, DROP CONSTRAINT tokens_batch_id_fkey;

-- Stand-ins, so the triggers can be created here; functions.sql holds the live definitions.
CREATE FUNCTION tokens_references_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION tokens_references_moved() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION accounts_keys_deleted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION key_batches_keys_released() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;

CREATE TRIGGER tokens_references_insert AFTER INSERT ON tokens REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION tokens_references_inserted();
CREATE TRIGGER tokens_references_update AFTER UPDATE OF user_id, batch_id ON tokens
  FOR EACH ROW WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.batch_id IS DISTINCT FROM NEW.batch_id)
  EXECUTE FUNCTION tokens_references_moved();
CREATE TRIGGER accounts_keys_delete AFTER DELETE ON accounts
  FOR EACH ROW EXECUTE FUNCTION accounts_keys_deleted();
CREATE TRIGGER key_batches_keys_release AFTER DELETE ON key_batches
  FOR EACH ROW EXECUTE FUNCTION key_batches_keys_released();

-- When an issue batch last wrote a chunk: a batch ending while another is still writing leaves the keys table's
-- VACUUM to that one (src/domain/keys/batch-steps.ts), and only a batch that wrote lately counts as writing.
ALTER TABLE key_batches ADD COLUMN progressed_at TIMESTAMPTZ;
