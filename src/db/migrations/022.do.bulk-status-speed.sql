-- How far (batch_index) a status change or a rotation's disabling has counted its source keys into `processed`:
-- each chunk adds only the keys past it, so progress costs one chunk's count, not a count from the first key.
ALTER TABLE key_batches ADD COLUMN processed_through INTEGER NOT NULL DEFAULT 0;

-- A bulk status change moves its keys between the counters once per (account, group), in tokens_set_status
-- (src/db/functions.sql), and tells the row trigger to stay out: run once per key, it updated one counter row
-- thousands of times in one transaction, each update walking the chain of that row's earlier versions.
DROP TRIGGER tokens_counted_update ON tokens;
CREATE TRIGGER tokens_counted_update AFTER UPDATE OF status, "group", user_id ON tokens
  FOR EACH ROW WHEN ((OLD.status IS DISTINCT FROM NEW.status OR OLD."group" IS DISTINCT FROM NEW."group" OR OLD.user_id IS DISTINCT FROM NEW.user_id)
    AND current_setting('gateway.counted_by_statement', true) IS DISTINCT FROM 'on')
  EXECUTE FUNCTION token_counts_moved();
