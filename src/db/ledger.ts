import type { Pool, PoolClient } from 'pg';
import { TOKEN_DETAIL_COLUMNS, type LedgerFilters, type TokenDetails } from '../domain/ports/usage';

/**
 * The billing ledger: one row per billed call or task (the "console log"); failures never get a row.
 * Written only by the settles of src/db/functions.sql (billing_ledger_insert), inside the transaction that deletes the
 * hold; unique `request_id` and `task_id` make a second write of the same call a no-op. This is the one
 * reader of the ledger; `GET /api/log/` and `/api/log/stat` present it (src/db/call-log.ts).
 */

export type Db = Pool | PoolClient;


/** A ledger row as the code sees it. `quota` is in credits (500,000 = 1 USD); `createdAt` in Unix seconds. */
export interface LedgerEntry {
  id: number;
  requestId: string;
  taskId: string | null;
  accountId: number;
  tokenId: number | null;
  tokenName: string;
  model: string;
  channelId: number | null;
  promptTokens: number;
  completionTokens: number;
  units: number;
  /** What `units` counts ('characters', 'milliseconds', 'search_units', 'images', 'videos'); '' for tokens. */
  unit: string;
  quota: number;
  latencyMs: number;
  createdAt: number;
  /** Relayed calls: streamed chat, and the gateway-config channel that served it. */
  isStream: boolean;
  channel: string;
  /** Credits the cost exceeded what the balances could pay (not billed; see decisions.md). */
  shortfall: number;
  tokenDetails: TokenDetails;
}


export interface LedgerPage {
  offset: number;
  limit: number;
}

export interface LedgerTotals {
  /** Billed calls matching the filters. */
  count: number;
  /** Credits. */
  quota: number;
  promptTokens: number;
  completionTokens: number;
  units: number;
  tokenDetails: TokenDetails;
}

interface LedgerRow extends TokenDetails {
  id: number;
  request_id: string;
  task_id: string | null;
  account_id: number;
  token_id: number | null;
  token_name: string;
  model: string;
  channel_id: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  units: number;
  unit: string;
  quota: number;
  latency_ms: number;
  created_at: number;
  is_stream: boolean;
  channel: string;
  shortfall: number;
}

const LEDGER_COLUMNS = `id, request_id, task_id, account_id, token_id, token_name, model, channel_id, prompt_tokens, completion_tokens,
  units, unit, quota, latency_ms, created_at, is_stream, channel, shortfall, ${TOKEN_DETAIL_COLUMNS.join(', ')}`;

const SUM_DETAILS = TOKEN_DETAIL_COLUMNS.map((c) => `COALESCE(sum(${c}), 0)::bigint AS ${c}`).join(', ');

function detailsOf(r: TokenDetails): TokenDetails {
  return Object.fromEntries(TOKEN_DETAIL_COLUMNS.map((c) => [c, Number(r[c])])) as TokenDetails;
}

function toEntry(r: LedgerRow): LedgerEntry {
  return {
    id: r.id,
    requestId: r.request_id,
    taskId: r.task_id,
    accountId: r.account_id,
    tokenId: r.token_id,
    tokenName: r.token_name,
    model: r.model,
    channelId: r.channel_id,
    promptTokens: r.prompt_tokens,
    completionTokens: r.completion_tokens,
    units: r.units,
    unit: r.unit,
    quota: r.quota,
    latencyMs: r.latency_ms,
    createdAt: r.created_at,
    isStream: r.is_stream,
    channel: r.channel,
    shortfall: r.shortfall,
    tokenDetails: detailsOf(r),
  };
}

/** The WHERE clause and parameters for one account's rows matching `filters`. */
function whereOf(accountId: number, filters: LedgerFilters): { where: string; params: unknown[] } {
  const params: unknown[] = [accountId];
  const conds = ['account_id = $1'];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    conds.push(sql.replace('?', `$${params.length}`));
  };
  if (filters.tokenName !== undefined && filters.tokenName !== '') add('token_name = ?', filters.tokenName);
  if (filters.modelName !== undefined && filters.modelName !== '') add('model = ?', filters.modelName);
  if (filters.startTimestamp !== undefined) add('created_at >= ?', filters.startTimestamp);
  if (filters.endTimestamp !== undefined) add('created_at <= ?', filters.endTimestamp);
  return { where: conds.join(' AND '), params };
}

/** One page of an account's ledger, newest first, and how many rows match in all. */
export async function listLedger(
  db: Db,
  accountId: number,
  filters: LedgerFilters = {},
  paging: LedgerPage = { offset: 0, limit: 10 },
): Promise<{ items: LedgerEntry[]; total: number }> {
  const { where, params } = whereOf(accountId, filters);
  const limit = Math.max(0, Math.floor(paging.limit));
  const offset = Math.max(0, Math.floor(paging.offset));
  // One after the other: `db` may be a single client (a transaction), which runs one query at a time.
  const rows = await db.query<LedgerRow>(
    `SELECT ${LEDGER_COLUMNS} FROM ledger WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`,
    params,
  );
  const count = await db.query<{ n: number }>(`SELECT count(*)::bigint AS n FROM ledger WHERE ${where}`, params);
  return { items: rows.rows.map(toEntry), total: count.rows[0]?.n ?? 0 };
}

/** Totals of an account's ledger rows matching `filters` (for `GET /api/log/stat`). */
export async function sumLedger(db: Db, accountId: number, filters: LedgerFilters = {}): Promise<LedgerTotals> {
  const { where, params } = whereOf(accountId, filters);
  const res = await db.query<{ count: number; quota: number; prompt: number; completion: number; units: number } & TokenDetails>(
    `SELECT count(*)::bigint AS count, COALESCE(sum(quota), 0)::bigint AS quota,
       COALESCE(sum(prompt_tokens), 0)::bigint AS prompt, COALESCE(sum(completion_tokens), 0)::bigint AS completion,
       COALESCE(sum(units), 0)::bigint AS units, ${SUM_DETAILS}
     FROM ledger WHERE ${where}`,
    params,
  );
  const r = res.rows[0];
  return { count: r.count, quota: r.quota, promptTokens: r.prompt, completionTokens: r.completion, units: r.units, tokenDetails: detailsOf(r) };
}

/** Credits and calls per UTC day and model, oldest day first (the console's usage chart). */
export async function ledgerByDay(
  db: Db,
  accountId: number,
  filters: LedgerFilters = {},
): Promise<Array<{ day: string; model: string; quota: number; count: number; prompt_tokens: number; completion_tokens: number } & TokenDetails>> {
  const { where, params } = whereOf(accountId, filters);
  const res = await db.query<{ day: string; model: string; quota: number; count: number; prompt_tokens: number; completion_tokens: number } & TokenDetails>(
    `SELECT to_char(to_timestamp(created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, model,
       COALESCE(sum(quota), 0)::bigint AS quota, count(*)::bigint AS count,
       COALESCE(sum(prompt_tokens), 0)::bigint AS prompt_tokens, COALESCE(sum(completion_tokens), 0)::bigint AS completion_tokens,
       ${SUM_DETAILS}
     FROM ledger WHERE ${where} GROUP BY 1, 2 ORDER BY 1, 2 LIMIT 5000`,
    params,
  );
  return res.rows;
}
