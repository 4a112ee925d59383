import type { Pool } from 'pg';

/**
 * GET /api/log/ and /api/log/stat: an account's billed calls (the ledger), with the relay's columns. Filters
 * are exact (token name, model) and inclusive Unix-second bounds on created_at; pages are newest first.
 */
export interface CallLogFilters {
  tokenName?: string;
  modelName?: string;
  startTimestamp?: number;
  endTimestamp?: number;
}

/** One billed call as /api/log/ shows it (one-api field names). */
export interface CallLogEntry {
  id: number;
  created_at: number;
  request_id: string;
  token_name: string;
  model_name: string;
  quota: number;
  prompt_tokens: number;
  completion_tokens: number;
  units: number;
  /** Seconds, as one-api reports it; `latency_ms` is exact. */
  use_time: number;
  latency_ms: number;
  is_stream: boolean;
  channel: string;
}

function where(accountId: number, f: CallLogFilters): { sql: string; params: unknown[] } {
  const params: unknown[] = [accountId];
  const conds = ['account_id = $1'];
  const add = (cond: string, v: unknown) => {
    params.push(v);
    conds.push(`${cond} $${params.length}`);
  };
  if (f.tokenName) add('token_name =', f.tokenName);
  if (f.modelName) add('model =', f.modelName);
  if (f.startTimestamp !== undefined) add('created_at >=', f.startTimestamp);
  if (f.endTimestamp !== undefined) add('created_at <=', f.endTimestamp);
  return { sql: conds.join(' AND '), params };
}

export async function listCalls(
  db: Pool,
  accountId: number,
  filters: CallLogFilters,
  page: { offset: number; limit: number },
): Promise<{ items: CallLogEntry[]; total: number }> {
  const w = where(accountId, filters);
  const n = w.params.length;
  const [rows, count] = await Promise.all([
    db.query<Omit<CallLogEntry, 'use_time'>>(
      `SELECT id, created_at, request_id, token_name, model AS model_name, quota, prompt_tokens, completion_tokens, units,
         latency_ms, is_stream, channel
       FROM ledger WHERE ${w.sql} ORDER BY created_at DESC, id DESC LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...w.params, page.limit, page.offset],
    ),
    db.query<{ n: string }>(`SELECT count(*) AS n FROM ledger WHERE ${w.sql}`, w.params),
  ]);
  return {
    items: rows.rows.map((r) => ({
      ...r,
      id: Number(r.id),
      created_at: Number(r.created_at),
      quota: Number(r.quota),
      use_time: Math.round(r.latency_ms / 1000),
    })),
    total: Number(count.rows[0].n),
  };
}

export async function sumCalls(db: Pool, accountId: number, filters: CallLogFilters): Promise<{ quota: number; count: number }> {
  const w = where(accountId, filters);
  const res = await db.query<{ quota: string; n: string }>(
    `SELECT COALESCE(sum(quota), 0) AS quota, count(*) AS n FROM ledger WHERE ${w.sql}`,
    w.params,
  );
  return { quota: Number(res.rows[0].quota), count: Number(res.rows[0].n) };
}
