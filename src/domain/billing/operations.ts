import { ledgerTokensOf, type LedgerTokens, NO_TOKENS, type TokenUsage } from '../pricing/usage';
import type { PeriodBudget } from './holds';

/**
 * The operations of billing_batch (src/db/functions.sql) as one discriminated union, and their wire encoding in
 * one place: `encodeOperation` is the only code that names the keys the SQL reads. billing_batch checks that every
 * key it needs is present, so a key renamed on one side fails loudly instead of arriving as NULL.
 */

/** What a ledger row records of a call besides money (src/db/functions.sql: billing_ledger_insert). */
export interface LedgerEntryInput {
  requestId: string;
  taskId?: string | null;
  model: string;
  tokenName?: string;
  channelId?: number | null;
  /** Gateway-config channel name (relayed calls). */
  channel?: string;
  isStream?: boolean;
  latencyMs?: number;
  /** Token dimensions (token-priced calls). */
  usage?: TokenUsage;
  /** Images or videos (unit-priced calls), or the quantity a quantity price billed. */
  units?: number;
  /** What `units` counts ('characters', 'milliseconds', 'search_units', 'images', 'videos'); '' for tokens. */
  unit?: string;
}

export type BillingOperation =
  | { op: 'reserve'; key: string; account: number; token: number | null; amount: number; reason: string; ttlSeconds: number; period?: PeriodBudget }
  | {
      op: 'video_submit';
      key: string;
      account: number;
      token: number | null;
      amount: number;
      reason: string;
      ttlSeconds: number;
      period?: PeriodBudget;
      /** The task row (video_task_insert). */
      task: object;
    }
  | { op: 'settle'; key: string; actual: number; chargeExcess: boolean; entry: LedgerEntryInput }
  | { op: 'release'; key: string }
  | { op: 'lease'; key: string; account: number; token: number; amount: number; ttlSeconds: number }
  | { op: 'renew'; key: string; ttlSeconds: number }
  | { op: 'settle_lease'; key: string; portion: number; actual: number; account: number; token: number; entry: LedgerEntryInput };

export type BillingOperationKind = BillingOperation['op'];

/** The ledger entry as billing_ledger_insert reads it: ledger column names. */
export type EncodedEntry = {
  request_id: string;
  task_id: string | null;
  model: string;
  token_name: string;
  channel_id: number | null;
  channel: string;
  is_stream: boolean;
  latency_ms: number;
  units: number;
  unit: string;
} & LedgerTokens;

const NO_LEDGER_TOKENS: LedgerTokens = ledgerTokensOf(NO_TOKENS);

/**
 * The ledger's count columns are PostgreSQL `integer`s. A count past their range (no real call has one; an upstream
 * may still report it) is recorded as the largest they hold: the settle must never fail on a column's range, since
 * a journaled settle's answer has already left. The credits charged are computed from the reported count, not from
 * this record of it.
 */
export const LEDGER_COUNT_MAX = 2_147_483_647;
const ledgerCount = (v: number) => Math.min(v, LEDGER_COUNT_MAX);

function ledgerTokens(u: TokenUsage): LedgerTokens {
  const t = ledgerTokensOf(u);
  for (const k of Object.keys(t) as Array<keyof LedgerTokens>) t[k] = ledgerCount(t[k]);
  return t;
}

export function encodeEntry(e: LedgerEntryInput): EncodedEntry {
  return {
    request_id: e.requestId,
    task_id: e.taskId ?? null,
    model: e.model,
    token_name: e.tokenName ?? '',
    channel_id: e.channelId ?? null,
    channel: e.channel ?? '',
    is_stream: e.isStream === true,
    latency_ms: ledgerCount(Math.max(0, Math.round(e.latencyMs ?? 0))),
    units: ledgerCount(e.units ?? 0),
    unit: e.unit ?? '',
    ...(e.usage ? ledgerTokens(e.usage) : NO_LEDGER_TOKENS),
  };
}

/** A reserve's period keys, only when the key has a periodic budget (billing_batch reads them as optional). */
const periodOf = (p: PeriodBudget | undefined) => (p && p.quota > 0 ? { period_quota: p.quota, period_start: p.start } : {});

/** One operation as billing_batch reads it, in JSON: what the group commit sends and the settle journal keeps. */
export function operationJson(o: BillingOperation): string {
  return JSON.stringify(encodeOperation(o));
}

/** The JSON object billing_batch reads for one operation. */
export function encodeOperation(o: BillingOperation): Record<string, unknown> {
  switch (o.op) {
    case 'reserve':
      return { op: o.op, key: o.key, account: o.account, token: o.token, amount: o.amount, reason: o.reason, ttl: o.ttlSeconds, ...periodOf(o.period) };
    case 'video_submit':
      return { op: o.op, key: o.key, account: o.account, token: o.token, amount: o.amount, reason: o.reason, ttl: o.ttlSeconds, task: o.task, ...periodOf(o.period) };
    case 'settle':
      return { op: o.op, key: o.key, actual: o.actual, excess: o.chargeExcess, entry: encodeEntry(o.entry) };
    case 'release':
      return { op: o.op, key: o.key };
    case 'lease':
      return { op: o.op, key: o.key, account: o.account, token: o.token, amount: o.amount, ttl: o.ttlSeconds };
    case 'renew':
      return { op: o.op, key: o.key, ttl: o.ttlSeconds };
    case 'settle_lease':
      return { op: o.op, key: o.key, portion: o.portion, actual: o.actual, account: o.account, token: o.token, entry: encodeEntry(o.entry) };
  }
}

/** Result rows, by operation (the OUT columns of the SQL functions, as JSON). */
export interface ReserveRow {
  o_status: string;
  o_id: number | null;
  o_budget: number | null;
  /** Timestamps are strings when they came through billing_batch's JSON. */
  o_created: Date | string | null;
  o_expires: Date | string | null;
}

export interface SettleRow {
  o_status: string;
  o_ledger_id: number | null;
  o_billed: number;
  o_refunded: number;
  o_shortfall: number;
  o_held: number | null;
}

export interface ReleaseRow {
  o_status: string;
  o_refunded: number;
}

export interface StatusRow {
  o_status: string;
}

export interface SettleLeaseRow {
  o_status: string;
  o_ledger_id: number | null;
  o_billed: number;
  o_shortfall: number;
  o_from_lease: number;
}

export interface VideoSubmitRow extends ReserveRow {
  video?: { status: 'created' | 'replayed'; task: Record<string, unknown> };
}

export interface ResultOf {
  reserve: ReserveRow;
  video_submit: VideoSubmitRow;
  settle: SettleRow;
  release: ReleaseRow;
  lease: StatusRow;
  renew: StatusRow;
  settle_lease: SettleLeaseRow;
}
