-- Credit leases (docs/decisions/0031-credit-leases.md): an api process
-- reserves a chunk of a key's credit once, as one hold with reason 'lease' and business key `lease:<process>:…`,
-- and draws its calls' holds from it in memory. A lease is an ordinary hold for every rule of 006: its amount was
-- debited from the budget and the wallet when taken, the sweeper gives back whatever is left when it expires
-- (a crashed process), billing_release gives it back when the process lets it go.

-- Takes a lease, or adds p_amount to one this process holds already (and extends its expiry). The same checks
-- and debits as billing_reserve, which does the work: for a top-up it reserves a temporary hold and folds it in.
CREATE FUNCTION billing_lease(p_key TEXT, p_account BIGINT, p_token BIGINT, p_amount BIGINT, p_ttl DOUBLE PRECISION)
RETURNS TABLE (o_status TEXT)
LANGUAGE plpgsql AS $$
DECLARE
  h quota_holds%ROWTYPE;
  r RECORD;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  SELECT * INTO h FROM quota_holds WHERE business_key = p_key FOR UPDATE;
  IF h.id IS NULL THEN
    SELECT * INTO r FROM billing_reserve(p_key, p_account, p_token, p_amount, 'lease', p_ttl, true);
    RETURN QUERY SELECT r.o_status;
    RETURN;
  END IF;
  SELECT * INTO r FROM billing_reserve(p_key || ':top-up', p_account, p_token, p_amount, 'lease', p_ttl, true);
  IF r.o_status <> 'ok' THEN
    RETURN QUERY SELECT r.o_status;
    RETURN;
  END IF;
  DELETE FROM quota_holds WHERE id = r.o_id;
  UPDATE quota_holds SET amount = amount + p_amount, expires_at = now() + make_interval(secs => p_ttl) WHERE id = h.id;
  RETURN QUERY SELECT 'ok'::text;
END $$;

-- Keeps a lease alive: its process is still using it.
CREATE FUNCTION billing_renew(p_key TEXT, p_ttl DOUBLE PRECISION) RETURNS TABLE (o_status TEXT)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  UPDATE quota_holds SET expires_at = now() + make_interval(secs => p_ttl) WHERE business_key = p_key;
  RETURN QUERY SELECT CASE WHEN FOUND THEN 'ok' ELSE 'not_found' END::text;
END $$;

-- Bills one call drawn from a lease: up to p_portion of the cost comes out of the lease (already debited from the
-- budget and the wallet when the lease was taken); the rest, or all of it when the lease is gone (swept after a
-- stall), is charged like billing_settle's excess: from the budget and the wallet as far as both can pay, the
-- remainder recorded as shortfall. Ledger row, used_quota of the calling key and the account, one transaction.
-- o_from_lease says how much the lease paid, so the process can tell when its view of the lease went stale.
CREATE FUNCTION billing_settle_lease(
  p_lease TEXT, p_portion BIGINT, p_actual BIGINT, p_account BIGINT, p_token BIGINT, p_request_id TEXT, p_token_name TEXT,
  p_model TEXT, p_prompt INTEGER, p_completion INTEGER, p_units INTEGER, p_latency INTEGER, p_is_stream BOOLEAN, p_channel TEXT
) RETURNS TABLE (o_status TEXT, o_ledger_id BIGINT, o_billed BIGINT, o_shortfall BIGINT, o_from_lease BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  h quota_holds%ROWTYPE;
  budget_key BIGINT;
  from_lease BIGINT := 0;
  excess BIGINT;
  take BIGINT := 0;
  v_root BIGINT;
  v_remain BIGINT;
  v_unlimited BOOLEAN;
  v_wallet BIGINT;
  billed BIGINT;
  ledger_id BIGINT;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  BEGIN
    SELECT * INTO h FROM quota_holds WHERE business_key = p_lease FOR UPDATE;
    IF h.id IS NOT NULL THEN
      from_lease := LEAST(p_actual, p_portion, h.amount);
      budget_key := COALESCE(h.budget_token_id, h.token_id);
    ELSE
      budget_key := p_token;
    END IF;
    excess := p_actual - from_lease;

    IF excess > 0 THEN
      FOR attempt IN 1..5 LOOP
        v_root := NULL;
        IF budget_key IS NULL THEN EXIT; END IF;
        SELECT b.id, b.remain_quota, b.unlimited_quota INTO v_root, v_remain, v_unlimited
        FROM tokens b WHERE b.id = (SELECT COALESCE(t.quota_owner_id, t.id) FROM tokens t WHERE t.id = budget_key)
          AND b.quota_owner_id IS NULL FOR NO KEY UPDATE OF b;
        IF v_root IS NOT NULL OR NOT EXISTS (SELECT 1 FROM tokens WHERE id = budget_key) THEN EXIT; END IF;
        IF attempt = 5 THEN RAISE EXCEPTION 'moved'; END IF;
      END LOOP;
      IF v_root IS NULL THEN
        take := 0;
      ELSIF v_unlimited THEN
        take := excess;
      ELSE
        take := LEAST(excess, GREATEST(v_remain, 0));
      END IF;
      IF p_token IS DISTINCT FROM v_root THEN
        PERFORM 1 FROM tokens WHERE id = p_token FOR NO KEY UPDATE;
      END IF;
      SELECT a.quota INTO v_wallet FROM accounts a WHERE a.id = p_account FOR NO KEY UPDATE;
      IF v_wallet IS NOT NULL THEN take := LEAST(take, GREATEST(v_wallet, 0)); END IF;
    END IF;
    billed := from_lease + take;

    INSERT INTO ledger (request_id, task_id, account_id, token_id, token_name, model, channel_id, prompt_tokens,
      completion_tokens, units, quota, latency_ms, created_at, is_stream, channel, shortfall)
    VALUES (p_request_id, NULL, p_account, p_token, p_token_name, p_model, NULL, p_prompt, p_completion,
      p_units, billed, p_latency, floor(extract(epoch FROM now()))::bigint, p_is_stream, p_channel, p_actual - billed)
    ON CONFLICT DO NOTHING
    RETURNING id INTO ledger_id;
    IF ledger_id IS NULL THEN
      -- Billed already: nothing is taken from the lease or the balances.
      RETURN QUERY SELECT 'duplicate'::text, NULL::bigint, 0::bigint, 0::bigint, 0::bigint;
      RETURN;
    END IF;

    IF from_lease <> 0 THEN UPDATE quota_holds SET amount = amount - from_lease WHERE id = h.id; END IF;
    IF take <> 0 AND v_root IS NOT NULL THEN UPDATE tokens SET remain_quota = remain_quota - take WHERE id = v_root; END IF;
    IF billed <> 0 THEN
      UPDATE tokens SET used_quota = used_quota + billed WHERE id = p_token;
      UPDATE accounts SET quota = quota - take, used_quota = used_quota + billed WHERE id = p_account;
    END IF;
    RETURN QUERY SELECT 'settled'::text, ledger_id, billed, p_actual - billed, from_lease;
  EXCEPTION WHEN raise_exception THEN
    RETURN QUERY SELECT SQLERRM::text, NULL::bigint, 0::bigint, 0::bigint, 0::bigint;
  END;
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
