-- Video submissions as a transactional outbox (docs/decisions.md, "Video submit: answer first, start after"): the
-- task row and its hold commit together and the client has its answer; the workflow is started right after, in the
-- background, and marked here. A task whose start did not happen (the process died, Temporal was unreachable) is
-- started by the reconciler of a process serving the same task queue.
ALTER TABLE video_tasks ADD COLUMN task_queue TEXT;
ALTER TABLE video_tasks ADD COLUMN workflow_started_at TIMESTAMPTZ;
-- Tasks submitted before this migration were started as part of their submit.
UPDATE video_tasks SET workflow_started_at = created_at;
CREATE INDEX video_tasks_unstarted_idx ON video_tasks (task_queue, created_at) WHERE workflow_started_at IS NULL AND finished_at IS NULL;
