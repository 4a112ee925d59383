-- A created video task tells the workers' outboxes at commit (NOTIFY gateway_video_submitted, payload: its task
-- queue): an api-only process starts no workflow itself (src/domain/video/submit-listener.ts). Identical
-- notifications of one transaction are delivered once, so a group-commit batch of submits wakes each worker once.
CREATE OR REPLACE FUNCTION video_task_insert(p JSONB) RETURNS JSONB
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
  PERFORM pg_notify('gateway_video_submitted', t.task_queue);
  RETURN jsonb_build_object('status', 'created', 'task', to_jsonb(t));
END $$;
