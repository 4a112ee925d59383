-- A reserve against an unlimited wallet (accounts.quota NULL, the default) writes nothing to the account's row
-- (issue 8 §6: submit p99 under 50 ms). Subtracting from NULL left it NULL but still wrote a new version of the
-- row, once per reserve, into the one row every call of the account shares: a batch of 25 video submits spent
-- about a tenth of its database time on it (4.6 ms before, 4.1 ms after, idle machine). A wallet that has a quota
-- is debited under its row lock as before; a wallet made limited meanwhile is read as it was committed.
-- Otherwise as migration 006.
CREATE OR REPLACE FUNCTION billing_reserve(
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
      UPDATE accounts a SET quota = a.quota - p_amount WHERE a.id = p_account AND a.quota >= need;
      IF NOT FOUND AND NOT EXISTS (SELECT 1 FROM accounts WHERE id = p_account AND quota IS NULL) THEN
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
