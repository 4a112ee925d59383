import type { Pool } from 'pg';
import { type LedgerFilters, listLedger, sumLedger } from '../billing/ledger';

/**
 * GET /api/log/ and /api/log/stat: an account's billed calls as one-api shows them, read through the ledger's
 * one reader (src/domain/billing/ledger.ts). Filters are exact (token name, model) and inclusive Unix-second
 * bounds on created_at; pages are newest first.
 */
export type CallLogFilters = LedgerFilters;

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

export async function listCalls(
  db: Pool,
  accountId: number,
  filters: CallLogFilters,
  page: { offset: number; limit: number },
): Promise<{ items: CallLogEntry[]; total: number }> {
  const { items, total } = await listLedger(db, accountId, filters, page);
  return {
    items: items.map((e) => ({
      id: e.id,
      created_at: e.createdAt,
      request_id: e.requestId,
      token_name: e.tokenName,
      model_name: e.model,
      quota: e.quota,
      prompt_tokens: e.promptTokens,
      completion_tokens: e.completionTokens,
      units: e.units,
      use_time: Math.round(e.latencyMs / 1000),
      latency_ms: e.latencyMs,
      is_stream: e.isStream,
      channel: e.channel,
    })),
    total,
  };
}

export async function sumCalls(db: Pool, accountId: number, filters: CallLogFilters): Promise<{ quota: number; count: number }> {
  const t = await sumLedger(db, accountId, filters);
  return { quota: t.quota, count: t.count };
}
