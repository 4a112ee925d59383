import type { Pool } from 'pg';
import type { CallLogEntry, CallLogFilters, CallLogTotals } from '../domain/ports/usage';
import { listLedger, sumLedger } from './ledger';

/**
 * GET /api/log/ and /api/log/stat: an account's billed calls as one-api shows them, read through the ledger's
 * one reader (src/domain/billing/ledger.ts). Filters are exact (token name, model) and inclusive Unix-second
 * bounds on created_at; pages are newest first.
 */


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
      unit: e.unit,
      use_time: Math.round(e.latencyMs / 1000),
      latency_ms: e.latencyMs,
      is_stream: e.isStream,
      channel: e.channel,
      ...e.tokenDetails,
    })),
    total,
  };
}


export async function sumCalls(db: Pool, accountId: number, filters: CallLogFilters): Promise<CallLogTotals> {
  const t = await sumLedger(db, accountId, filters);
  return { quota: t.quota, count: t.count, prompt_tokens: t.promptTokens, completion_tokens: t.completionTokens, ...t.tokenDetails };
}
