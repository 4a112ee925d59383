-- Reserve, settle and release each in one round trip (docs/decisions/0011-quota-holds.md).
-- The rules are those of src/domain/billing/holds.ts, which calls these functions; lock order everywhere: hold
-- row, budget key row, calling key row, account row. Failures are returned as a status, never raised, so a
-- caller's surrounding transaction is never aborted (each attempt runs in its own subtransaction).
-- p_async: commit with synchronous_commit = off (the relay's holds and settles; see decisions.md).
--
-- ledger.shortfall: credits an answer cost above what its key and account could still pay (a call that cost
-- more than its hold, settled on a nearly empty balance). Billed = ledger.quota; shortfall is not billed.

ALTER TABLE ledger ADD COLUMN shortfall BIGINT NOT NULL DEFAULT 0 CHECK (shortfall >= 0);
CREATE INDEX ledger_shortfall_idx ON ledger (account_id, id) WHERE shortfall > 0;

-- Gives p_amount (may be negative: a debit) back to the current budget of p_budget_key (the key itself, or the
-- key its budget moved to by a rotation). Nothing when that key was deleted. A rotation that moves the budget
-- between the lookup and the row lock is retried with a fresh snapshot.
CREATE FUNCTION billing_refund_budget(p_budget_key BIGINT, p_amount BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_budget_key IS NULL OR p_amount = 0 THEN RETURN; END IF;
  FOR attempt IN 1..5 LOOP
    UPDATE tokens SET remain_quota = remain_quota + p_amount
    WHERE id = (SELECT COALESCE(t.quota_owner_id, t.id) FROM tokens t WHERE t.id = p_budget_key) AND quota_owner_id IS NULL;
    IF FOUND THEN RETURN; END IF;
    IF NOT EXISTS (SELECT 1 FROM tokens WHERE id = p_budget_key) THEN RETURN; END IF;
  END LOOP;
  RAISE EXCEPTION 'moved';
END $$;

CREATE FUNCTION billing_reserve(
  p_key TEXT, p_account BIGINT, p_token BIGINT, p_amount BIGINT, p_reason TEXT, p_ttl DOUBLE PRECISION, p_async BOOLEAN
) RETURNS TABLE (o_status TEXT, o_id BIGINT, o_budget BIGINT, o_created TIMESTAMPTZ, o_expires TIMESTAMPTZ)
LANGUAGE plpgsql AS $$
DECLARE
  need BIGINT := GREATEST(p_amount, 1);
  h quota_holds%ROWTYPE;
  v_budget BIGINT;
  v_usable BOOLEAN;
  v_root BOOLEAN;
  debited BOOLEAN;
BEGIN
  IF p_async THEN PERFORM set_config('synchronous_commit', 'off', true); END IF;
  FOR attempt IN 1..5 LOOP
    BEGIN
      INSERT INTO quota_holds (business_key, account_id, token_id, budget_token_id, amount, reason, expires_at)
      VALUES (p_key, p_account, p_token, (SELECT COALESCE(t.quota_owner_id, t.id) FROM tokens t WHERE t.id = p_token),
        p_amount, p_reason, now() + make_interval(secs => p_ttl))
      ON CONFLICT (business_key) DO NOTHING
      RETURNING * INTO h;
      IF h.id IS NULL THEN
        RETURN QUERY SELECT 'exists'::text, NULL::bigint, NULL::bigint, NULL::timestamptz, NULL::timestamptz;
        RETURN;
      END IF;
      IF p_token IS NOT NULL THEN
        debited := false;
        IF h.budget_token_id = p_token THEN
          -- The key pays for itself; it must be usable (enabled, not expired), checked under its row lock.
          UPDATE tokens t SET remain_quota = t.remain_quota - p_amount
          WHERE t.id = p_token AND t.user_id = p_account AND t.quota_owner_id IS NULL AND t.status = 1
            AND (t.expired_time = -1 OR t.expired_time > extract(epoch FROM now()))
            AND (t.unlimited_quota OR t.remain_quota >= need);
          debited := FOUND;
        ELSIF h.budget_token_id IS NOT NULL THEN
          UPDATE tokens t SET remain_quota = t.remain_quota - p_amount
          WHERE t.id = h.budget_token_id AND t.quota_owner_id IS NULL AND (t.unlimited_quota OR t.remain_quota >= need);
          IF FOUND THEN
            SELECT COALESCE(t.quota_owner_id, t.id), t.status = 1 AND (t.expired_time = -1 OR t.expired_time > extract(epoch FROM now()))
              INTO v_budget, v_usable
            FROM tokens t WHERE t.id = p_token AND t.user_id = p_account FOR NO KEY UPDATE;
            IF v_usable IS NOT TRUE THEN RAISE EXCEPTION 'key'; END IF;
            IF v_budget <> h.budget_token_id THEN RAISE EXCEPTION 'moved'; END IF;
            debited := true;
          END IF;
        END IF;
        IF NOT debited THEN
          SELECT COALESCE(t.quota_owner_id, t.id), t.status = 1 AND (t.expired_time = -1 OR t.expired_time > extract(epoch FROM now())),
              (b.id IS NOT NULL AND b.quota_owner_id IS NULL)
            INTO v_budget, v_usable, v_root
          FROM tokens t LEFT JOIN tokens b ON b.id = COALESCE(t.quota_owner_id, t.id)
          WHERE t.id = p_token AND t.user_id = p_account;
          IF v_usable IS NOT TRUE THEN RAISE EXCEPTION 'key'; END IF;
          IF v_budget IS DISTINCT FROM h.budget_token_id OR NOT v_root THEN RAISE EXCEPTION 'moved'; END IF;
          RAISE EXCEPTION 'quota';
        END IF;
      END IF;
      UPDATE accounts a SET quota = a.quota - p_amount WHERE a.id = p_account AND (a.quota IS NULL OR a.quota >= need);
      IF NOT FOUND THEN
        IF NOT EXISTS (SELECT 1 FROM accounts WHERE id = p_account) THEN RAISE EXCEPTION 'key'; END IF;
        RAISE EXCEPTION 'account_quota';
      END IF;
      RETURN QUERY SELECT 'ok'::text, h.id, h.budget_token_id, h.created_at, h.expires_at;
      RETURN;
    EXCEPTION WHEN raise_exception THEN
      -- The subtransaction rolled back the hold and any debit; a moved budget is tried again from the start.
      IF SQLERRM = 'moved' AND attempt < 5 THEN CONTINUE; END IF;
      RETURN QUERY SELECT SQLERRM::text, NULL::bigint, NULL::bigint, NULL::timestamptz, NULL::timestamptz;
      RETURN;
    END;
  END LOOP;
END $$;

-- Bills a hold: deletes it, writes the ledger row, gives back (held - billed) to the budget, adds billed to the
-- calling key's and the account's used_quota. When the actual cost exceeds the hold: with p_allow_excess the
-- excess is taken from the budget and the wallet as far as both can pay (never below zero; unlimited pays in
-- full) and the rest recorded as ledger.shortfall; without it, status 'exceeds' and nothing changes.
CREATE FUNCTION billing_settle(
  p_key TEXT, p_actual BIGINT, p_allow_excess BOOLEAN, p_request_id TEXT, p_task_id TEXT, p_token_name TEXT, p_model TEXT,
  p_channel_id BIGINT, p_prompt INTEGER, p_completion INTEGER, p_units INTEGER, p_latency INTEGER, p_is_stream BOOLEAN,
  p_channel TEXT, p_async BOOLEAN
) RETURNS TABLE (o_status TEXT, o_ledger_id BIGINT, o_billed BIGINT, o_refunded BIGINT, o_shortfall BIGINT, o_held BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  h quota_holds%ROWTYPE;
  budget_key BIGINT;
  v_root BIGINT;
  v_remain BIGINT;
  v_unlimited BOOLEAN;
  v_wallet BIGINT;
  excess BIGINT := 0;
  take BIGINT := 0;
  billed BIGINT;
  ledger_id BIGINT;
BEGIN
  IF p_async THEN PERFORM set_config('synchronous_commit', 'off', true); END IF;
  BEGIN
    DELETE FROM quota_holds WHERE business_key = p_key RETURNING * INTO h;
    IF h.id IS NULL THEN
      IF EXISTS (SELECT 1 FROM ledger WHERE request_id = p_request_id OR (p_task_id IS NOT NULL AND task_id = p_task_id)) THEN
        RETURN QUERY SELECT 'already_settled'::text, NULL::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint;
      ELSE
        RETURN QUERY SELECT 'not_found'::text, NULL::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint;
      END IF;
      RETURN;
    END IF;
    IF p_actual > h.amount AND NOT p_allow_excess THEN RAISE EXCEPTION 'exceeds'; END IF;
    budget_key := COALESCE(h.budget_token_id, h.token_id);
    excess := GREATEST(p_actual - h.amount, 0);

    IF excess > 0 THEN
      -- What the budget and the wallet can still pay, read under their row locks (in the lock order).
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
        take := CASE WHEN budget_key IS NULL THEN excess ELSE 0 END;
      ELSIF v_unlimited THEN
        take := excess;
      ELSE
        take := LEAST(excess, GREATEST(v_remain, 0));
      END IF;
      IF h.token_id IS NOT NULL AND h.token_id IS DISTINCT FROM v_root THEN
        PERFORM 1 FROM tokens WHERE id = h.token_id FOR NO KEY UPDATE;
      END IF;
      SELECT a.quota INTO v_wallet FROM accounts a WHERE a.id = h.account_id FOR NO KEY UPDATE;
      IF v_wallet IS NOT NULL THEN take := LEAST(take, GREATEST(v_wallet, 0)); END IF;
    END IF;
    billed := LEAST(p_actual, h.amount + take);

    INSERT INTO ledger (request_id, task_id, account_id, token_id, token_name, model, channel_id, prompt_tokens,
      completion_tokens, units, quota, latency_ms, created_at, is_stream, channel, shortfall)
    VALUES (p_request_id, p_task_id, h.account_id, h.token_id, p_token_name, p_model, p_channel_id, p_prompt, p_completion,
      p_units, billed, p_latency, floor(extract(epoch FROM now()))::bigint, p_is_stream, p_channel, p_actual - billed)
    ON CONFLICT DO NOTHING
    RETURNING id INTO ledger_id;

    IF ledger_id IS NULL THEN
      -- This call is billed already (another hold for the same request or task): give this one back whole.
      PERFORM billing_refund_budget(budget_key, h.amount);
      UPDATE accounts SET quota = quota + h.amount WHERE id = h.account_id;
      RETURN QUERY SELECT 'duplicate'::text, NULL::bigint, 0::bigint, h.amount, 0::bigint, h.amount;
      RETURN;
    END IF;

    IF v_root IS NULL AND h.token_id IS NOT NULL AND budget_key = h.token_id THEN
      -- The common case, a key that paid for itself and still does: refund and used in one row update.
      UPDATE tokens SET remain_quota = remain_quota + (h.amount - billed), used_quota = used_quota + billed
      WHERE id = h.token_id AND quota_owner_id IS NULL;
      IF NOT FOUND THEN
        PERFORM billing_refund_budget(budget_key, h.amount - billed);
        IF billed <> 0 THEN UPDATE tokens SET used_quota = used_quota + billed WHERE id = h.token_id; END IF;
      END IF;
    ELSE
      IF v_root IS NOT NULL THEN
        IF take <> 0 THEN UPDATE tokens SET remain_quota = remain_quota - take WHERE id = v_root; END IF;
      ELSE
        PERFORM billing_refund_budget(budget_key, h.amount - billed);
      END IF;
      IF h.token_id IS NOT NULL AND billed <> 0 THEN
        UPDATE tokens SET used_quota = used_quota + billed WHERE id = h.token_id;
      END IF;
    END IF;
    IF h.amount <> billed OR billed <> 0 THEN
      -- A NULL wallet stays NULL (NULL + x is NULL): it was not debited either.
      UPDATE accounts SET quota = quota + (h.amount - billed), used_quota = used_quota + billed WHERE id = h.account_id;
    END IF;
    RETURN QUERY SELECT 'settled'::text, ledger_id, billed, h.amount - billed, p_actual - billed, h.amount;
  EXCEPTION WHEN raise_exception THEN
    RETURN QUERY SELECT SQLERRM::text, NULL::bigint, 0::bigint, 0::bigint, 0::bigint, h.amount;
  END;
END $$;

CREATE FUNCTION billing_release(p_key TEXT, p_async BOOLEAN) RETURNS TABLE (o_status TEXT, o_refunded BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  h quota_holds%ROWTYPE;
BEGIN
  IF p_async THEN PERFORM set_config('synchronous_commit', 'off', true); END IF;
  BEGIN
    DELETE FROM quota_holds WHERE business_key = p_key RETURNING * INTO h;
    IF h.id IS NULL THEN
      RETURN QUERY SELECT 'not_found'::text, 0::bigint;
      RETURN;
    END IF;
    PERFORM billing_refund_budget(COALESCE(h.budget_token_id, h.token_id), h.amount);
    IF h.amount <> 0 THEN UPDATE accounts SET quota = quota + h.amount WHERE id = h.account_id; END IF;
    RETURN QUERY SELECT 'released'::text, h.amount;
  EXCEPTION WHEN raise_exception THEN
    RETURN QUERY SELECT SQLERRM::text, 0::bigint;
  END;
END $$;

-- Group commit: the relay's reserves, settles and releases of concurrent calls in one statement and one
-- (asynchronous) commit, in arrival order; each operation keeps its own subtransaction and its own status, so
-- one refused reserve never affects another. Returns one result object per operation, in order.
CREATE FUNCTION billing_batch(p_ops JSONB) RETURNS JSONB
LANGUAGE plpgsql AS $$
DECLARE
  op JSONB;
  r RECORD;
  results JSONB := '[]'::jsonb;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  -- Operations of one batch take their row locks one after the other, so two batches (two replicas) can deadlock
  -- where single operations, which all lock in one order, cannot. A batch of several gives up waiting after
  -- 200 ms instead of the server's deadlock_timeout; the caller then runs its operations one by one.
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
    ELSE
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'unknown billing operation';
    END IF;
    results := results || jsonb_build_array(to_jsonb(r));
  END LOOP;
  RETURN results;
END $$;
