-- The key list's filters at a million keys: by status and by group, newest first, each an index walk.
CREATE INDEX tokens_user_status_idx ON tokens (user_id, status, id);
CREATE INDEX tokens_user_group_idx ON tokens (user_id, "group", id);
