-- Video submissions as a transactional outbox (docs/decisions.md, "Video submit: answer first, start after"): the
-- task row and its hold commit together and the client has its answer; the workflow is started right after, in the
-- background, and marked here. A task whose start did not happen (the process died, Temporal was unreachable) is
-- started by the reconciler of a process serving the same task queue.
ALTER TABLE video_tasks ADD COLUMN task_queue TEXT;
ALTER TABLE video_tasks ADD COLUMN workflow_started_at TIMESTAMPTZ;
-- Tasks submitted before this migration were started as part of their submit.
UPDATE video_tasks SET workflow_started_at = created_at;
CREATE INDEX video_tasks_unstarted_idx ON video_tasks (task_queue, created_at) WHERE workflow_started_at IS NULL AND finished_at IS NULL;

-- A submit in one operation of the group-commit queue: the hold (billing_reserve), then the task row; with an
-- Idempotency-Key the account used before, the hold is released and the earlier task returned. The caller makes
-- it durable before answering (a synchronous commit after it flushes the WAL that holds it).
CREATE FUNCTION video_submit(p JSONB) RETURNS JSONB
LANGUAGE plpgsql AS $$
DECLARE
  r RECORD;
  t video_tasks%ROWTYPE;
BEGIN
  SELECT * INTO r FROM billing_reserve(p->>'hold', (p->>'account')::bigint, (p->>'token')::bigint, (p->>'amount')::bigint,
    'video', (p->>'ttl')::double precision, true);
  IF r.o_status <> 'ok' THEN RETURN jsonb_build_object('status', r.o_status); END IF;
  INSERT INTO video_tasks (id, family, account_id, token_id, token_name, model, prompt, request, channel, quota,
                           callback_url, idempotency_key, request_id, public_origin, task_queue)
  VALUES (p->>'id', p->>'family', (p->>'account')::bigint, (p->>'token')::bigint, p->>'token_name', p->>'model',
          p->>'prompt', p->'request', p->>'channel', (p->>'amount')::bigint, p->>'callback_url', p->>'idempotency_key',
          p->>'request_id', p->>'public_origin', p->>'task_queue')
  ON CONFLICT (account_id, idempotency_key) DO NOTHING
  RETURNING * INTO t;
  IF t.id IS NULL THEN
    PERFORM billing_release(p->>'hold', true);
    SELECT * INTO t FROM video_tasks WHERE account_id = (p->>'account')::bigint AND idempotency_key = p->>'idempotency_key';
    RETURN jsonb_build_object('status', 'replayed', 'task', to_jsonb(t));
  END IF;
  RETURN jsonb_build_object('status', 'created', 'task', to_jsonb(t));
END $$;

CREATE OR REPLACE FUNCTION billing_batch(p_ops JSONB) RETURNS JSONB
LANGUAGE plpgsql AS $$
DECLARE
  op JSONB;
  r RECORD;
  results JSONB := '[]'::jsonb;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  -- See migration 006: a batch of several gives up waiting for a lock after 200 ms; the caller then runs its
  -- operations one by one.
  IF jsonb_array_length(p_ops) > 1 THEN PERFORM set_config('lock_timeout', '200ms', true); END IF;
  FOR op IN SELECT value FROM jsonb_array_elements(p_ops) LOOP
    IF op->>'op' = 'video_submit' THEN
      results := results || jsonb_build_array(video_submit(op));
      CONTINUE;
    END IF;
    IF op->>'op' = 'reserve' THEN
      SELECT * INTO r FROM billing_reserve(op->>'key', (op->>'account')::bigint, (op->>'token')::bigint, (op->>'amount')::bigint,
        op->>'reason', (op->>'ttl')::double precision, true);
    ELSIF op->>'op' = 'settle' THEN
      SELECT * INTO r FROM billing_settle(op->>'key', (op->>'actual')::bigint, (op->>'excess')::boolean, op->>'request', op->>'task',
        op->>'token_name', op->>'model', (op->>'channel_id')::bigint, (op->>'prompt')::integer, (op->>'completion')::integer,
        (op->>'units')::integer, (op->>'latency')::integer, (op->>'stream')::boolean, op->>'channel', true);
    ELSIF op->>'op' = 'release' THEN
      SELECT * INTO r FROM billing_release(op->>'key', true);
    ELSIF op->>'op' = 'lease' THEN
      SELECT * INTO r FROM billing_lease(op->>'key', (op->>'account')::bigint, (op->>'token')::bigint, (op->>'amount')::bigint,
        (op->>'ttl')::double precision);
    ELSIF op->>'op' = 'renew' THEN
      SELECT * INTO r FROM billing_renew(op->>'key', (op->>'ttl')::double precision);
    ELSIF op->>'op' = 'settle_lease' THEN
      SELECT * INTO r FROM billing_settle_lease(op->>'key', (op->>'portion')::bigint, (op->>'actual')::bigint,
        (op->>'account')::bigint, (op->>'token')::bigint, op->>'request', op->>'token_name', op->>'model',
        (op->>'prompt')::integer, (op->>'completion')::integer, (op->>'units')::integer, (op->>'latency')::integer,
        (op->>'stream')::boolean, op->>'channel');
    ELSE
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'unknown billing operation';
    END IF;
    results := results || jsonb_build_array(to_jsonb(r));
  END LOOP;
  RETURN results;
END $$;
