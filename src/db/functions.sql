-- The live definition of every SQL function of the gateway. Numbered migrations change tables; this file is
-- applied after them by src/db/migrate.ts whenever its text changed (a checksum in schema_functions), so each
-- function is defined once, here. test/integration/sql-functions.test.ts checks that the database runs exactly
-- these definitions. Rules of money: docs/decisions/0036-billing-in-one-module.md.
--
-- Lock order everywhere: hold row, budget key row, calling key row, account row. Failures are returned as a
-- status, never raised, so a caller's surrounding transaction is never aborted (each attempt runs in its own
-- subtransaction). p_async: commit with synchronous_commit = off (the relay's holds and settles).

-- Gives p_amount (may be negative: a debit) back to the current budget of p_budget_key (the key itself, or the
-- key its budget moved to by a rotation). Nothing when that key was deleted. A rotation that moves the budget
-- between the lookup and the row lock is retried with a fresh snapshot.
CREATE OR REPLACE FUNCTION billing_refund_budget(p_budget_key BIGINT, p_amount BIGINT) RETURNS void
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

-- Takes a hold that was given back whole out of its key's count for the period it was counted in (nothing when the
-- hold was not counted, or that period is over).
CREATE OR REPLACE FUNCTION billing_uncount_period(h quota_holds) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF h.period_start IS NOT NULL AND h.amount <> 0 THEN
    UPDATE tokens SET period_used = GREATEST(period_used - h.amount, 0) WHERE id = h.token_id AND period_start = h.period_start;
  END IF;
END $$;

-- Raises when an operation or ledger entry lacks one of p_keys: a key renamed on one side must fail loudly,
-- never arrive as NULL and change what is billed.
CREATE OR REPLACE FUNCTION billing_require(p JSONB, p_what TEXT, p_keys TEXT[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  k TEXT;
BEGIN
  FOREACH k IN ARRAY p_keys LOOP
    IF NOT (p ? k) OR jsonb_typeof(p->k) = 'null' THEN
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('billing %s lacks "%s"', p_what, k);
    END IF;
  END LOOP;
END $$;

-- Reserves p_amount: the hold row (recording its budget key and whether the wallet was debited), the debit of
-- the budget's remain_quota (unlimited budgets are debited too, never refused) and of the account wallet when it
-- has a quota (an unlimited wallet, quota NULL, is not written). With p_period_quota > 0 the calling key's spend in
-- the period starting at p_period_start (Unix seconds) must stay within it, and the hold is counted there.
-- Statuses: ok, exists, key, quota, period_quota, account_quota, moved.
CREATE OR REPLACE FUNCTION billing_reserve(
  p_key TEXT, p_account BIGINT, p_token BIGINT, p_amount BIGINT, p_reason TEXT, p_ttl DOUBLE PRECISION, p_async BOOLEAN,
  p_period_quota BIGINT, p_period_start BIGINT
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
      INSERT INTO quota_holds (business_key, account_id, token_id, budget_token_id, amount, reason, expires_at, wallet_debited, period_start)
      VALUES (p_key, p_account, p_token, (SELECT COALESCE(t.quota_owner_id, t.id) FROM tokens t WHERE t.id = p_token),
        p_amount, p_reason, now() + make_interval(secs => p_ttl),
        COALESCE((SELECT a.quota IS NOT NULL FROM accounts a WHERE a.id = p_account), false),
        CASE WHEN p_token IS NOT NULL AND COALESCE(p_period_quota, 0) > 0 THEN p_period_start END)
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
        IF h.period_start IS NOT NULL THEN
          -- The calling key's row (locked already as the budget, or after it): a new period starts its count at 0.
          UPDATE tokens t SET period_used = CASE WHEN t.period_start = p_period_start THEN t.period_used ELSE 0 END + p_amount,
            period_start = p_period_start
          WHERE t.id = p_token AND CASE WHEN t.period_start = p_period_start THEN t.period_used ELSE 0 END + need <= p_period_quota;
          IF NOT FOUND THEN RAISE EXCEPTION 'period_quota'; END IF;
        END IF;
      END IF;
      IF h.wallet_debited THEN
        UPDATE accounts a SET quota = a.quota - p_amount WHERE a.id = p_account AND a.quota >= need;
        IF NOT FOUND THEN
          IF NOT EXISTS (SELECT 1 FROM accounts WHERE id = p_account) THEN RAISE EXCEPTION 'key'; END IF;
          -- Made unlimited since the hold row read it: try again, recording what is true now.
          IF EXISTS (SELECT 1 FROM accounts WHERE id = p_account AND quota IS NULL) THEN RAISE EXCEPTION 'moved'; END IF;
          RAISE EXCEPTION 'account_quota';
        END IF;
      ELSIF NOT EXISTS (SELECT 1 FROM accounts WHERE id = p_account) THEN
        RAISE EXCEPTION 'key';
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

-- The one place a cost above what was held is charged: takes up to p_excess from the current budget of
-- p_budget_key and from the account wallet, as far as both can pay (never below zero; an unlimited budget or
-- wallet pays in full; a hold without a key is paid by the wallet alone; a deleted key pays nothing), under
-- their row locks in the lock order, and debits both. Returns what was taken.
CREATE OR REPLACE FUNCTION billing_take_excess(p_budget_key BIGINT, p_token BIGINT, p_account BIGINT, p_excess BIGINT) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
  v_root BIGINT;
  v_remain BIGINT;
  v_unlimited BOOLEAN;
  v_wallet BIGINT;
  take BIGINT := 0;
BEGIN
  IF p_excess <= 0 THEN RETURN 0; END IF;
  IF p_budget_key IS NULL THEN
    take := p_excess;
  ELSE
    FOR attempt IN 1..5 LOOP
      v_root := NULL;
      SELECT b.id, b.remain_quota, b.unlimited_quota INTO v_root, v_remain, v_unlimited
      FROM tokens b WHERE b.id = (SELECT COALESCE(t.quota_owner_id, t.id) FROM tokens t WHERE t.id = p_budget_key)
        AND b.quota_owner_id IS NULL FOR NO KEY UPDATE OF b;
      IF v_root IS NOT NULL OR NOT EXISTS (SELECT 1 FROM tokens WHERE id = p_budget_key) THEN EXIT; END IF;
      IF attempt = 5 THEN RAISE EXCEPTION 'moved'; END IF;
    END LOOP;
    IF v_root IS NOT NULL THEN
      take := CASE WHEN v_unlimited THEN p_excess ELSE LEAST(p_excess, GREATEST(v_remain, 0)) END;
    END IF;
  END IF;
  IF p_token IS NOT NULL AND p_token IS DISTINCT FROM v_root THEN
    PERFORM 1 FROM tokens WHERE id = p_token FOR NO KEY UPDATE;
  END IF;
  SELECT a.quota INTO v_wallet FROM accounts a WHERE a.id = p_account FOR NO KEY UPDATE;
  IF v_wallet IS NOT NULL THEN take := LEAST(take, GREATEST(v_wallet, 0)); END IF;
  IF take <> 0 THEN
    IF v_root IS NOT NULL THEN UPDATE tokens SET remain_quota = remain_quota - take WHERE id = v_root; END IF;
    IF v_wallet IS NOT NULL THEN UPDATE accounts SET quota = quota - take WHERE id = p_account; END IF;
  END IF;
  RETURN take;
END $$;

-- The ledger row of a billed call. p_entry carries the call's columns by their ledger names (request_id and model
-- required; task_id, token_name, channel_id, latency_ms, is_stream, channel and the token counts optional, 0 or
-- empty when absent); the money columns come from the caller. NULL when this request or task is billed already.
CREATE OR REPLACE FUNCTION billing_ledger_insert(
  p_entry JSONB, p_account BIGINT, p_token BIGINT, p_billed BIGINT, p_shortfall BIGINT
) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
  e ledger%ROWTYPE;
  ledger_id BIGINT;
BEGIN
  PERFORM billing_require(p_entry, 'ledger entry', ARRAY['request_id', 'model']);
  e := jsonb_populate_record(NULL::ledger, p_entry);
  INSERT INTO ledger (request_id, task_id, account_id, token_id, token_name, model, channel_id, prompt_tokens,
    completion_tokens, units, unit, quota, latency_ms, created_at, is_stream, channel, shortfall, cache_read_tokens,
    cache_write_tokens, cache_write_1h_tokens, reasoning_tokens, image_input_tokens, audio_input_tokens, audio_output_tokens)
  VALUES (e.request_id, e.task_id, p_account, p_token, COALESCE(e.token_name, ''), e.model, e.channel_id,
    COALESCE(e.prompt_tokens, 0), COALESCE(e.completion_tokens, 0), COALESCE(e.units, 0), COALESCE(e.unit, ''), p_billed,
    GREATEST(COALESCE(e.latency_ms, 0), 0), floor(extract(epoch FROM now()))::bigint, COALESCE(e.is_stream, false),
    COALESCE(e.channel, ''), p_shortfall, COALESCE(e.cache_read_tokens, 0), COALESCE(e.cache_write_tokens, 0),
    COALESCE(e.cache_write_1h_tokens, 0), COALESCE(e.reasoning_tokens, 0), COALESCE(e.image_input_tokens, 0),
    COALESCE(e.audio_input_tokens, 0), COALESCE(e.audio_output_tokens, 0))
  ON CONFLICT DO NOTHING
  RETURNING id INTO ledger_id;
  RETURN ledger_id;
END $$;

-- Bills a hold: deletes it, writes the ledger row, gives back (held - billed) to the budget and, when the hold
-- debited it, to the wallet; adds billed to the calling key's and the account's used_quota. A cost above the hold:
-- with p_allow_excess, billing_take_excess charges it and the rest is the ledger row's shortfall; without it,
-- status 'exceeds' and nothing changes.
CREATE OR REPLACE FUNCTION billing_settle(p_key TEXT, p_actual BIGINT, p_allow_excess BOOLEAN, p_entry JSONB, p_async BOOLEAN)
RETURNS TABLE (o_status TEXT, o_ledger_id BIGINT, o_billed BIGINT, o_refunded BIGINT, o_shortfall BIGINT, o_held BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  h quota_holds%ROWTYPE;
  budget_key BIGINT;
  take BIGINT := 0;
  billed BIGINT;
  refund BIGINT;
  ledger_id BIGINT;
BEGIN
  IF p_async THEN PERFORM set_config('synchronous_commit', 'off', true); END IF;
  IF p_actual IS NULL OR p_actual < 0 OR p_allow_excess IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'billing settle needs a whole actual amount >= 0 and allow_excess';
  END IF;
  BEGIN
    DELETE FROM quota_holds WHERE business_key = p_key RETURNING * INTO h;
    IF h.id IS NULL THEN
      IF EXISTS (SELECT 1 FROM ledger WHERE request_id = p_entry->>'request_id' OR (p_entry->>'task_id' IS NOT NULL AND task_id = p_entry->>'task_id')) THEN
        RETURN QUERY SELECT 'already_settled'::text, NULL::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint;
      ELSE
        RETURN QUERY SELECT 'not_found'::text, NULL::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint;
      END IF;
      RETURN;
    END IF;
    IF p_actual > h.amount AND NOT p_allow_excess THEN RAISE EXCEPTION 'exceeds'; END IF;
    budget_key := COALESCE(h.budget_token_id, h.token_id);
    take := billing_take_excess(budget_key, h.token_id, h.account_id, p_actual - h.amount);
    billed := LEAST(p_actual, h.amount + take);
    refund := h.amount - LEAST(billed, h.amount);

    ledger_id := billing_ledger_insert(p_entry, h.account_id, h.token_id, billed, p_actual - billed);
    IF ledger_id IS NULL THEN
      -- This call is billed already (another hold for the same request or task): give this one back whole, and
      -- what was just taken for its excess.
      PERFORM billing_refund_budget(budget_key, h.amount + take);
      PERFORM billing_uncount_period(h);
      UPDATE accounts SET quota = quota + CASE WHEN h.wallet_debited THEN h.amount ELSE 0 END + take
      WHERE id = h.account_id AND quota IS NOT NULL AND (h.wallet_debited OR take <> 0);
      RETURN QUERY SELECT 'duplicate'::text, NULL::bigint, 0::bigint, h.amount, 0::bigint, h.amount;
      RETURN;
    END IF;

    IF take = 0 AND h.token_id IS NOT NULL AND budget_key = h.token_id THEN
      -- The common case, a key that paid for itself and still does: refund and used in one row update.
      UPDATE tokens SET remain_quota = remain_quota + refund, used_quota = used_quota + billed
      WHERE id = h.token_id AND quota_owner_id IS NULL;
      IF NOT FOUND THEN
        PERFORM billing_refund_budget(budget_key, refund);
        IF billed <> 0 THEN UPDATE tokens SET used_quota = used_quota + billed WHERE id = h.token_id; END IF;
      END IF;
    ELSE
      PERFORM billing_refund_budget(budget_key, refund);
      IF h.token_id IS NOT NULL AND billed <> 0 THEN
        UPDATE tokens SET used_quota = used_quota + billed WHERE id = h.token_id;
      END IF;
    END IF;
    IF h.period_start IS NOT NULL AND billed <> h.amount THEN
      UPDATE tokens SET period_used = GREATEST(period_used + billed - h.amount, 0) WHERE id = h.token_id AND period_start = h.period_start;
    END IF;
    IF billed <> 0 OR (refund <> 0 AND h.wallet_debited) THEN
      UPDATE accounts SET quota = quota + CASE WHEN h.wallet_debited THEN refund ELSE 0 END, used_quota = used_quota + billed
      WHERE id = h.account_id;
    END IF;
    RETURN QUERY SELECT 'settled'::text, ledger_id, billed, h.amount - billed, p_actual - billed, h.amount;
  EXCEPTION WHEN raise_exception THEN
    RETURN QUERY SELECT SQLERRM::text, NULL::bigint, 0::bigint, 0::bigint, 0::bigint, h.amount;
  END;
END $$;

-- Gives a hold back whole without billing: to the budget it was debited from and, when it debited the wallet,
-- to the wallet.
CREATE OR REPLACE FUNCTION billing_release(p_key TEXT, p_async BOOLEAN) RETURNS TABLE (o_status TEXT, o_refunded BIGINT)
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
    PERFORM billing_uncount_period(h);
    IF h.amount <> 0 AND h.wallet_debited THEN UPDATE accounts SET quota = quota + h.amount WHERE id = h.account_id; END IF;
    RETURN QUERY SELECT 'released'::text, h.amount;
  EXCEPTION WHEN raise_exception THEN
    RETURN QUERY SELECT SQLERRM::text, 0::bigint;
  END;
END $$;

-- Credit leases (docs/decisions/0031-credit-leases.md): an api process reserves a chunk of a key's credit once, as
-- one hold with reason 'lease', and draws its calls' holds from it in memory. A lease is an ordinary hold for
-- every rule above. Takes a lease, or adds p_amount to one this process holds already (and extends its expiry):
-- a top-up is reserved as a temporary hold and folded in, unless the wallet changed between limited and
-- unlimited since the lease was taken (status 'moved': the process lets this lease go and takes a new one).
CREATE OR REPLACE FUNCTION billing_lease(p_key TEXT, p_account BIGINT, p_token BIGINT, p_amount BIGINT, p_ttl DOUBLE PRECISION)
RETURNS TABLE (o_status TEXT)
LANGUAGE plpgsql AS $$
DECLARE
  h quota_holds%ROWTYPE;
  t quota_holds%ROWTYPE;
  r RECORD;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  SELECT * INTO h FROM quota_holds WHERE business_key = p_key FOR UPDATE;
  IF h.id IS NULL THEN
    SELECT * INTO r FROM billing_reserve(p_key, p_account, p_token, p_amount, 'lease', p_ttl, true, 0, NULL);
    RETURN QUERY SELECT r.o_status;
    RETURN;
  END IF;
  SELECT * INTO r FROM billing_reserve(p_key || ':top-up', p_account, p_token, p_amount, 'lease', p_ttl, true, 0, NULL);
  IF r.o_status <> 'ok' THEN
    RETURN QUERY SELECT r.o_status;
    RETURN;
  END IF;
  SELECT * INTO t FROM quota_holds WHERE id = r.o_id;
  IF t.wallet_debited IS DISTINCT FROM h.wallet_debited OR t.budget_token_id IS DISTINCT FROM h.budget_token_id THEN
    PERFORM billing_release(t.business_key, true);
    RETURN QUERY SELECT 'moved'::text;
    RETURN;
  END IF;
  DELETE FROM quota_holds WHERE id = t.id;
  UPDATE quota_holds SET amount = amount + p_amount, expires_at = now() + make_interval(secs => p_ttl) WHERE id = h.id;
  RETURN QUERY SELECT 'ok'::text;
END $$;

-- Keeps a lease alive: its process is still using it.
CREATE OR REPLACE FUNCTION billing_renew(p_key TEXT, p_ttl DOUBLE PRECISION) RETURNS TABLE (o_status TEXT)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  UPDATE quota_holds SET expires_at = now() + make_interval(secs => p_ttl) WHERE business_key = p_key;
  RETURN QUERY SELECT CASE WHEN FOUND THEN 'ok' ELSE 'not_found' END::text;
END $$;

-- Bills one call drawn from a lease: up to p_portion of the cost comes out of the lease (already debited when the
-- lease was taken); the rest, or all of it when the lease is gone (swept after a stall), is charged by
-- billing_take_excess. Ledger row, lease debit, used_quota of the key and the account, one transaction. o_from_lease
-- says how much the lease paid, so the process can tell when its view of the lease went stale.
CREATE OR REPLACE FUNCTION billing_settle_lease(
  p_lease TEXT, p_portion BIGINT, p_actual BIGINT, p_account BIGINT, p_token BIGINT, p_entry JSONB
) RETURNS TABLE (o_status TEXT, o_ledger_id BIGINT, o_billed BIGINT, o_shortfall BIGINT, o_from_lease BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  r RECORD;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  SELECT * INTO r FROM billing_settle_lease_part(p_lease, p_portion, p_actual, p_account, p_token, p_entry, 0);
  IF r.o_status = 'settled' THEN PERFORM billing_lease_counters(p_lease, r.o_from_lease, p_token, p_account, r.o_billed); END IF;
  RETURN QUERY SELECT r.o_status, r.o_ledger_id, r.o_billed, r.o_shortfall, r.o_from_lease;
END $$;

-- The counters a lease settle moves: the lease's amount, used_quota of the key and of the account. billing_batch
-- adds up those of all its settles and moves each counter once: many versions of one row in one transaction
-- overflow its page, and every later update of it then writes its indexes too.
CREATE OR REPLACE FUNCTION billing_lease_counters(p_lease TEXT, p_from_lease BIGINT, p_token BIGINT, p_account BIGINT, p_billed BIGINT)
RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
  IF p_from_lease <> 0 THEN UPDATE quota_holds SET amount = amount - p_from_lease WHERE business_key = p_lease; END IF;
  IF p_billed <> 0 THEN
    UPDATE tokens SET used_quota = used_quota + p_billed WHERE id = p_token;
    UPDATE accounts SET used_quota = used_quota + p_billed WHERE id = p_account;
  END IF;
END $$;

-- A lease settle without its counters (billing_lease_counters moves them): the ledger row and any excess. p_taken is
-- what earlier settles of the same batch took from this lease, not yet subtracted from its row.
CREATE OR REPLACE FUNCTION billing_settle_lease_part(
  p_lease TEXT, p_portion BIGINT, p_actual BIGINT, p_account BIGINT, p_token BIGINT, p_entry JSONB, p_taken BIGINT
) RETURNS TABLE (o_status TEXT, o_ledger_id BIGINT, o_billed BIGINT, o_shortfall BIGINT, o_from_lease BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  h quota_holds%ROWTYPE;
  budget_key BIGINT := p_token;
  from_lease BIGINT := 0;
  take BIGINT;
  billed BIGINT;
  ledger_id BIGINT;
BEGIN
  IF p_actual IS NULL OR p_actual < 0 OR p_portion IS NULL OR p_portion < 0 THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'billing settle_lease needs whole amounts >= 0';
  END IF;
  BEGIN
    SELECT * INTO h FROM quota_holds WHERE business_key = p_lease FOR UPDATE;
    IF h.id IS NOT NULL THEN
      from_lease := GREATEST(LEAST(p_actual, p_portion, h.amount - p_taken), 0);
      budget_key := COALESCE(h.budget_token_id, h.token_id);
    END IF;
    take := billing_take_excess(budget_key, p_token, p_account, p_actual - from_lease);
    billed := from_lease + take;

    ledger_id := billing_ledger_insert(p_entry, p_account, p_token, billed, p_actual - billed);
    IF ledger_id IS NULL THEN
      -- Billed already: what was just taken for the excess goes back; nothing comes out of the lease.
      IF take <> 0 THEN
        PERFORM billing_refund_budget(budget_key, take);
        UPDATE accounts SET quota = quota + take WHERE id = p_account AND quota IS NOT NULL;
      END IF;
      RETURN QUERY SELECT 'duplicate'::text, NULL::bigint, 0::bigint, 0::bigint, 0::bigint;
      RETURN;
    END IF;
    RETURN QUERY SELECT 'settled'::text, ledger_id, billed, p_actual - billed, from_lease;
  EXCEPTION WHEN raise_exception THEN
    RETURN QUERY SELECT SQLERRM::text, NULL::bigint, 0::bigint, 0::bigint, 0::bigint;
  END;
END $$;

-- A video submit's task row (the hold is reserved in the same billing_batch operation). With an Idempotency-Key
-- the account used before, nothing is inserted and the earlier task is returned whole; a created task comes
-- back as its id and created_at (the caller has the rest). Wakes the workers of the task's queue at commit.
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
  RETURN jsonb_build_object('status', 'created', 'task', jsonb_build_object('id', t.id, 'created_at', t.created_at));
END $$;

-- Group commit: the reserves, settles and releases of concurrent calls (and video submits) in one statement and
-- one commit, in arrival order; each operation keeps its own subtransaction and its own status, so one refused
-- reserve never affects another. The operations are encoded by src/domain/billing/operations.ts; every key an
-- operation needs is checked present. A batch commits asynchronously, except one that created a video task: it
-- commits as the session would (synchronously), so the submit's answer needs no second statement. Returns one
-- result object per operation, in order.
CREATE OR REPLACE FUNCTION billing_batch(p_ops JSONB) RETURNS JSONB
LANGUAGE plpgsql AS $$
DECLARE
  op JSONB;
  kind TEXT;
  r RECORD;
  results JSONB[] := '{}';
  v JSONB;
  -- The session's own setting (on, remote_write, ...), read before this function turns it off.
  session_commit TEXT := current_setting('synchronous_commit');
  durable BOOLEAN := false;
  -- The lease settles' counters, added up and moved once at the end (billing_lease_counters).
  leases JSONB := '{}';
  keys JSONB := '{}';
  wallets JSONB := '{}';
  c RECORD;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  -- Operations of one batch take their row locks one after the other, so two batches (two replicas) can deadlock
  -- where single operations, which all lock in one order, cannot. A batch of several gives up waiting after
  -- 200 ms instead of the server's deadlock_timeout; the caller then runs its operations one by one.
  IF jsonb_array_length(p_ops) > 1 THEN PERFORM set_config('lock_timeout', '200ms', true); END IF;
  FOR op IN SELECT value FROM jsonb_array_elements(p_ops) LOOP
    kind := op->>'op';
    -- Any other operation may read a lease's amount (a release gives it back): the debits so far go in first.
    IF kind <> 'settle_lease' AND leases <> '{}' THEN
      FOR c IN SELECT key, value::bigint AS n FROM jsonb_each_text(leases) WHERE value::bigint <> 0 ORDER BY key LOOP
        UPDATE quota_holds SET amount = amount - c.n WHERE business_key = c.key;
      END LOOP;
      leases := '{}';
    END IF;
    IF kind IN ('reserve', 'video_submit') THEN
      PERFORM billing_require(op, kind, ARRAY['key', 'account', 'amount', 'reason', 'ttl']);
      SELECT * INTO r FROM billing_reserve(op->>'key', (op->>'account')::bigint, (op->>'token')::bigint, (op->>'amount')::bigint,
        op->>'reason', (op->>'ttl')::double precision, true, COALESCE((op->>'period_quota')::bigint, 0), (op->>'period_start')::bigint);
      IF kind = 'video_submit' AND r.o_status = 'ok' THEN
        PERFORM billing_require(op, kind, ARRAY['task']);
        durable := true;
        v := video_task_insert(op->'task');
        -- An Idempotency-Key replay: the earlier task stands and this hold was never needed.
        IF v->>'status' = 'replayed' THEN PERFORM billing_release(op->>'key', true); END IF;
        results := array_append(results, to_jsonb(r) || jsonb_build_object('video', v));
        CONTINUE;
      END IF;
    ELSIF kind = 'settle' THEN
      PERFORM billing_require(op, kind, ARRAY['key', 'actual', 'excess', 'entry']);
      SELECT * INTO r FROM billing_settle(op->>'key', (op->>'actual')::bigint, (op->>'excess')::boolean, op->'entry', true);
    ELSIF kind = 'release' THEN
      PERFORM billing_require(op, kind, ARRAY['key']);
      SELECT * INTO r FROM billing_release(op->>'key', true);
    ELSIF kind = 'lease' THEN
      PERFORM billing_require(op, kind, ARRAY['key', 'account', 'token', 'amount', 'ttl']);
      SELECT * INTO r FROM billing_lease(op->>'key', (op->>'account')::bigint, (op->>'token')::bigint, (op->>'amount')::bigint,
        (op->>'ttl')::double precision);
    ELSIF kind = 'renew' THEN
      PERFORM billing_require(op, kind, ARRAY['key', 'ttl']);
      SELECT * INTO r FROM billing_renew(op->>'key', (op->>'ttl')::double precision);
    ELSIF kind = 'settle_lease' THEN
      PERFORM billing_require(op, kind, ARRAY['key', 'portion', 'actual', 'account', 'token', 'entry']);
      SELECT * INTO r FROM billing_settle_lease_part(op->>'key', (op->>'portion')::bigint, (op->>'actual')::bigint,
        (op->>'account')::bigint, (op->>'token')::bigint, op->'entry', COALESCE((leases->>(op->>'key'))::bigint, 0));
      IF r.o_status = 'settled' THEN
        leases := leases || jsonb_build_object(op->>'key', COALESCE((leases->>(op->>'key'))::bigint, 0) + r.o_from_lease);
        keys := keys || jsonb_build_object(op->>'token', COALESCE((keys->>(op->>'token'))::bigint, 0) + r.o_billed);
        wallets := wallets || jsonb_build_object(op->>'account', COALESCE((wallets->>(op->>'account'))::bigint, 0) + r.o_billed);
      END IF;
    ELSE
      RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('unknown billing operation "%s"', kind);
    END IF;
    results := array_append(results, to_jsonb(r));
  END LOOP;
  -- In the single settle's lock order: leases, then keys, then accounts (each in key order).
  FOR c IN SELECT key, value::bigint AS n FROM jsonb_each_text(leases) WHERE value::bigint <> 0 ORDER BY key LOOP
    UPDATE quota_holds SET amount = amount - c.n WHERE business_key = c.key;
  END LOOP;
  FOR c IN SELECT key::bigint AS id, value::bigint AS n FROM jsonb_each_text(keys) WHERE value::bigint <> 0 ORDER BY 1 LOOP
    UPDATE tokens SET used_quota = used_quota + c.n WHERE id = c.id;
  END LOOP;
  FOR c IN SELECT key::bigint AS id, value::bigint AS n FROM jsonb_each_text(wallets) WHERE value::bigint <> 0 ORDER BY 1 LOOP
    UPDATE accounts SET used_quota = used_quota + c.n WHERE id = c.id;
  END LOOP;
  -- The value in force at commit decides: a batch that created a video task commits synchronously.
  IF durable THEN PERFORM set_config('synchronous_commit', COALESCE(NULLIF(session_commit, 'off'), 'on'), true); END IF;
  RETURN to_jsonb(results);
END $$;

-- Admits one request of a key under its per-minute limits (0: none) and counts it; a refused request is not counted.
-- The counts returned are the minute's after the request (requests admitted, tokens settled so far).
CREATE OR REPLACE FUNCTION limits_admit(p_token BIGINT, p_minute BIGINT, p_rpm INTEGER, p_tpm BIGINT)
RETURNS TABLE (o_admitted BOOLEAN, o_requests INTEGER, o_tokens BIGINT)
LANGUAGE plpgsql AS $$
BEGIN
  -- A counter, not money: a crash may lose the last milliseconds of counts, never a ledger row. Not waiting for
  -- the WAL flush is most of what admission costs.
  PERFORM set_config('synchronous_commit', 'off', true);
  INSERT INTO key_rate_windows AS w (token_id, minute, requests) VALUES (p_token, p_minute, 1)
  ON CONFLICT (token_id, minute) DO UPDATE SET requests = w.requests + 1
    WHERE (p_rpm = 0 OR w.requests < p_rpm) AND (p_tpm = 0 OR w.tokens < p_tpm)
  RETURNING true, w.requests, w.tokens INTO o_admitted, o_requests, o_tokens;
  IF NOT FOUND THEN
    SELECT false, w.requests, w.tokens INTO o_admitted, o_requests, o_tokens
      FROM key_rate_windows w WHERE w.token_id = p_token AND w.minute = p_minute;
  END IF;
  RETURN NEXT;
END $$;

-- Takes up to p_want of a key's p_rpm requests of minute p_minute at once, fewer when fewer are left: permits a
-- replica then admits requests with, no round trip each (src/domain/limits/request-permits.ts). The row is locked,
-- so two replicas never take the same request.
CREATE OR REPLACE FUNCTION limits_take_requests(p_token BIGINT, p_minute BIGINT, p_rpm INTEGER, p_want INTEGER)
RETURNS TABLE (o_granted INTEGER, o_requests INTEGER)
LANGUAGE plpgsql AS $$
DECLARE
  v_before INTEGER;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  INSERT INTO key_rate_windows (token_id, minute) VALUES (p_token, p_minute) ON CONFLICT (token_id, minute) DO NOTHING;
  SELECT w.requests INTO v_before FROM key_rate_windows w WHERE w.token_id = p_token AND w.minute = p_minute FOR UPDATE;
  o_granted := GREATEST(0, LEAST(p_want, p_rpm - v_before));
  IF o_granted > 0 THEN
    UPDATE key_rate_windows SET requests = v_before + o_granted WHERE token_id = p_token AND minute = p_minute;
  END IF;
  o_requests := v_before + o_granted;
  RETURN NEXT;
END $$;

-- Takes one of a key's p_limit in-flight slots for p_ttl_seconds (the holder renews it while it runs, and deletes
-- it when done); slots whose holder died lapse. One key's takers queue on an advisory lock, so two replicas never
-- both take the last free slot.
CREATE OR REPLACE FUNCTION limits_acquire_slot(p_token BIGINT, p_slot UUID, p_limit INTEGER, p_ttl_seconds INTEGER)
RETURNS TABLE (o_acquired BOOLEAN, o_in_flight INTEGER)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM pg_advisory_xact_lock(727003, (p_token % 2147483647)::integer);
  DELETE FROM key_inflight WHERE token_id = p_token AND expires_at < now();
  SELECT count(*)::integer INTO o_in_flight FROM key_inflight WHERE token_id = p_token;
  IF o_in_flight >= p_limit THEN
    o_acquired := false;
  ELSE
    INSERT INTO key_inflight (slot, token_id, expires_at) VALUES (p_slot, p_token, now() + p_ttl_seconds * interval '1 second');
    o_acquired := true;
    o_in_flight := o_in_flight + 1;
  END IF;
  RETURN NEXT;
END $$;

-- token_counts (the key list's X-Total-Count) kept by the triggers of migration 021: inserts and deletes are counted
-- once per statement (a batch chunk is one statement), an update only when it changes the status, the group or the
-- owner of a key, so the billing's updates of the balances never run it.
CREATE OR REPLACE FUNCTION token_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO token_counts AS c (user_id, status, "group", n)
  SELECT user_id, status, "group", count(*) FROM new_rows GROUP BY user_id, status, "group"
  ON CONFLICT (user_id, status, "group") DO UPDATE SET n = c.n + EXCLUDED.n;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION token_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE token_counts c SET n = c.n - d.n
  FROM (SELECT user_id, status, "group", count(*) AS n FROM old_rows GROUP BY user_id, status, "group") d
  WHERE c.user_id = d.user_id AND c.status = d.status AND c."group" = d."group";
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION token_counts_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE token_counts SET n = n - 1 WHERE user_id = OLD.user_id AND status = OLD.status AND "group" = OLD."group";
  INSERT INTO token_counts AS c (user_id, status, "group", n) VALUES (NEW.user_id, NEW.status, NEW."group", 1)
  ON CONFLICT (user_id, status, "group") DO UPDATE SET n = c.n + 1;
  RETURN NULL;
END $$;

-- The references of tokens.user_id (accounts) and tokens.batch_id (key_batches), checked per statement by the
-- triggers of migration 026 as a foreign key would per row: the distinct owners and batches of the new rows are
-- locked FOR KEY SHARE (so neither can be deleted until the insert commits), then each must exist. A million-key
-- rollout checks a few rows per chunk instead of a million.
CREATE OR REPLACE FUNCTION tokens_check_references(p_users bigint[], p_batches bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM accounts WHERE id = ANY (p_users) FOR KEY SHARE;
  IF EXISTS (SELECT 1 FROM unnest(p_users) u(id) WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = u.id)) THEN
    RAISE EXCEPTION 'insert or update on table "tokens" violates its reference to "accounts"' USING ERRCODE = 'foreign_key_violation';
  END IF;
  PERFORM 1 FROM key_batches WHERE id = ANY (p_batches) FOR KEY SHARE;
  IF EXISTS (SELECT 1 FROM unnest(p_batches) b(id) WHERE NOT EXISTS (SELECT 1 FROM key_batches k WHERE k.id = b.id)) THEN
    RAISE EXCEPTION 'insert or update on table "tokens" violates its reference to "key_batches"' USING ERRCODE = 'foreign_key_violation';
  END IF;
END $$;

CREATE OR REPLACE FUNCTION tokens_references_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM tokens_check_references(
    ARRAY(SELECT DISTINCT user_id FROM new_rows),
    ARRAY(SELECT DISTINCT batch_id FROM new_rows WHERE batch_id IS NOT NULL));
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION tokens_references_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM tokens_check_references(ARRAY[NEW.user_id], ARRAY_REMOVE(ARRAY[NEW.batch_id], NULL));
  RETURN NULL;
END $$;

-- The foreign keys' ON DELETE actions: an account's keys are deleted with it, a deleted batch's keys stay without one.
CREATE OR REPLACE FUNCTION accounts_keys_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM tokens WHERE user_id = OLD.id;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION key_batches_keys_released() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE tokens SET batch_id = NULL WHERE batch_id = OLD.id;
  RETURN NULL;
END $$;

-- Sets the status (1 or 2) of the keys p_ids that have the other one, in one statement, and moves them between
-- the token_counts rows once per (account, group); the row trigger stays out (gateway.counted_by_statement, see
-- migration 022). Returns the ids it changed.
CREATE OR REPLACE FUNCTION tokens_set_status(p_ids BIGINT[], p_status INTEGER)
RETURNS TABLE (o_id BIGINT)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('gateway.counted_by_statement', 'on', true);
  RETURN QUERY
  WITH changed AS (
    UPDATE tokens SET status = p_status WHERE id = ANY(p_ids) AND status <> p_status RETURNING id, user_id, "group"
  ), per AS (
    SELECT c.user_id, c."group", count(*) AS n FROM changed c GROUP BY c.user_id, c."group"
  ), added AS (
    INSERT INTO token_counts AS c (user_id, status, "group", n) SELECT per.user_id, p_status, per."group", per.n FROM per
    ON CONFLICT (user_id, status, "group") DO UPDATE SET n = c.n + EXCLUDED.n
  ), taken AS (
    UPDATE token_counts c SET n = c.n - per.n FROM per
     WHERE c.user_id = per.user_id AND c.status = 3 - p_status AND c."group" = per."group"
  )
  SELECT changed.id FROM changed;
  PERFORM set_config('gateway.counted_by_statement', 'off', true);
END $$;
