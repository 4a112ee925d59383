-- The key list at a million keys: its X-Total-Count comes from per-(account, status, group) counters instead of
-- a count over the table, and a name search uses a trigram index where the server has pg_trgm.
CREATE TABLE token_counts (
  user_id  BIGINT NOT NULL,
  status   SMALLINT NOT NULL,
  "group"  TEXT NOT NULL,
  n        BIGINT NOT NULL,
  PRIMARY KEY (user_id, status, "group")
);
INSERT INTO token_counts (user_id, status, "group", n)
SELECT user_id, status, "group", count(*) FROM tokens GROUP BY user_id, status, "group";

-- The triggers' functions are defined in src/db/functions.sql (applied after the migrations); these stand-ins only
-- let the triggers be created here.
CREATE FUNCTION token_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION token_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION token_counts_moved() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;

CREATE TRIGGER tokens_counted_insert AFTER INSERT ON tokens REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION token_counts_inserted();
CREATE TRIGGER tokens_counted_delete AFTER DELETE ON tokens REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION token_counts_deleted();
CREATE TRIGGER tokens_counted_update AFTER UPDATE OF status, "group", user_id ON tokens
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD."group" IS DISTINCT FROM NEW."group" OR OLD.user_id IS DISTINCT FROM NEW.user_id)
  EXECUTE FUNCTION token_counts_moved();

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
    -- In a schema of its own: the gateway's schema holds only the functions of src/db/functions.sql.
    CREATE SCHEMA IF NOT EXISTS gateway_extensions;
    CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA gateway_extensions;
    CREATE INDEX tokens_name_trgm_idx ON tokens USING gin (name gateway_extensions.gin_trgm_ops);
  END IF;
END $$;
