-- Video submissions as a transactional outbox (docs/decisions/0033-video-submit-answer-first.md): the
-- task row and its hold commit together and the client has its answer; the workflow is started right after, in the
-- background, and marked here. A task whose start did not happen (the process died, Temporal was unreachable) is
-- started by the reconciler of a process serving the same task queue.
ALTER TABLE video_tasks ADD COLUMN task_queue TEXT;
ALTER TABLE video_tasks ADD COLUMN workflow_started_at TIMESTAMPTZ;
-- Tasks submitted before this migration were started as part of their submit.
UPDATE video_tasks SET workflow_started_at = created_at;
CREATE INDEX video_tasks_unstarted_idx ON video_tasks (task_queue, created_at) WHERE workflow_started_at IS NULL AND finished_at IS NULL;

-- A submit's task row, committed asynchronously (the statement is its own transaction): the caller has reserved
-- its hold before and makes both durable with one synchronous commit after (src/db/wal-flush.ts). Inserts of
-- different tasks touch no common row, so concurrent submits run side by side. With an Idempotency-Key the
-- account used before, nothing is inserted and the earlier task is returned.
CREATE FUNCTION video_task_insert(p JSONB) RETURNS JSONB
LANGUAGE plpgsql AS $$
DECLARE
  t video_tasks%ROWTYPE;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  INSERT INTO video_tasks (id, family, account_id, token_id, token_name, model, prompt, request, channel, quota,
                           callback_url, idempotency_key, request_id, public_origin, task_queue)
  VALUES (p->>'id', p->>'family', (p->>'account')::bigint, (p->>'token')::bigint, p->>'token_name', p->>'model',
          p->>'prompt', p->'request', p->>'channel', (p->>'amount')::bigint, p->>'callback_url', p->>'idempotency_key',
          p->>'request_id', p->>'public_origin', p->>'task_queue')
  ON CONFLICT (account_id, idempotency_key) DO NOTHING
  RETURNING * INTO t;
  IF t.id IS NULL THEN
    SELECT * INTO t FROM video_tasks WHERE account_id = (p->>'account')::bigint AND idempotency_key = p->>'idempotency_key';
    RETURN jsonb_build_object('status', 'replayed', 'task', to_jsonb(t));
  END IF;
  RETURN jsonb_build_object('status', 'created', 'task', to_jsonb(t));
END $$;
