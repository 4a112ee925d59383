-- Finished videos kept in the gateway's object store (src/domain/video/store), past the upstream's expiry.
--   result_key        the object's key once the copy is complete (results/<task id>); null before, or when the copy
--                     gave up (result_fallback) or retention deleted it (result_deleted_at)
--   result_bytes      its size, for Range answers without asking the store
--   result_type       its content type as the upstream sent it (video/*, or application/octet-stream)
--   result_stored_at  when the copy completed; retention counts from here
--   result_fallback   why the copy gave up (the task still completed: its link serves the upstream's file)
--   result_deleted_at retention removed the copy; the link answers 404 from then on
--   input_key         a first frame the client uploaded (inputs/<task id>), passed upstream on submit, with its
--                     content type and file name (input_type, input_name)
ALTER TABLE video_tasks
  ADD COLUMN result_key        TEXT,
  ADD COLUMN result_bytes      BIGINT,
  ADD COLUMN result_type       TEXT,
  ADD COLUMN result_stored_at  TIMESTAMPTZ,
  ADD COLUMN result_fallback   TEXT,
  ADD COLUMN result_deleted_at TIMESTAMPTZ,
  ADD COLUMN input_key         TEXT,
  ADD COLUMN input_type        TEXT,
  ADD COLUMN input_name        TEXT;

-- Retention's sweep: stored copies, oldest first.
CREATE INDEX video_tasks_result_stored_idx ON video_tasks (result_stored_at) WHERE result_key IS NOT NULL;
