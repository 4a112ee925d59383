import type { QuotaPeriod } from '../limits/period';
import type { KeyCipher } from './key-material';

/**
 * Whether a key with this expired_time (Unix seconds, -1 never) has expired at `nowMs`. The one definition of
 * the rule in code; billing/holds.ts repeats it in SQL (usableKey) for the row-locked re-check.
 */
export function isExpired(expiredTime: number, nowMs = Date.now()): boolean {
  return expiredTime !== -1 && expiredTime * 1000 <= nowMs;
}

/** The API key record of the spec, as the management API returns it. */
export interface TokenRecord {
  id: number;
  user_id: number;
  key: string;
  status: number;
  name: string;
  group: string;
  models: string;
  remain_quota: number;
  unlimited_quota: boolean;
  used_quota: number;
  expired_time: number;
  created_time: number;
  accessed_time: number;
  model_limits: string;
  model_limits_enabled: boolean;
  allow_ips: string;
  batch_id: number | null;
  rpm_limit: number;
  tpm_limit: number;
  max_concurrency: number;
  period_quota: number;
  quota_period: QuotaPeriod | null;
}

/** The writable fields of a key; what create and the whole-object update take. */
export interface TokenSettings {
  name: string;
  remain_quota: number;
  unlimited_quota: boolean;
  group: string;
  models: string;
  expired_time: number;
  /** Requests per minute, billed tokens per minute, requests in flight; 0 is no limit of the key's own. */
  rpm_limit: number;
  tpm_limit: number;
  max_concurrency: number;
  /** Credits the key may spend per `quota_period` (calendar day, week or month, UTC) on top of its quota; 0: none. */
  period_quota: number;
  quota_period: QuotaPeriod | null;
}

/** The limits of a key's record; batch issuance leaves them unset (0). */
export type LimitSettings = Pick<TokenSettings, 'rpm_limit' | 'tpm_limit' | 'max_concurrency' | 'period_quota' | 'quota_period'>;

/** The settings a batch issues its keys with: everything but the limits, which each key may then be given. */
export type IssuedSettings = Omit<TokenSettings, keyof LimitSettings> & Partial<LimitSettings>;

export const TOKEN_DEFAULTS: TokenSettings = {
  name: '',
  remain_quota: 0,
  unlimited_quota: false,
  group: '',
  models: '',
  expired_time: -1,
  rpm_limit: 0,
  tpm_limit: 0,
  max_concurrency: 0,
  period_quota: 0,
  quota_period: null,
};

export interface TokenRow {
  id: number;
  user_id: number;
  key_cipher: Buffer;
  status: number;
  name: string;
  group: string;
  models: string;
  remain_quota: number;
  unlimited_quota: boolean;
  used_quota: number;
  expired_time: number;
  created_time: number;
  accessed_time: number;
  batch_id: number | null;
  rpm_limit: number;
  tpm_limit: number;
  max_concurrency: number;
  period_quota: number;
  quota_period: QuotaPeriod | null;
}

export const TOKEN_COLUMNS = `id, user_id, key_cipher, status, name, "group", models, remain_quota, unlimited_quota,
  used_quota, expired_time, created_time, accessed_time, batch_id, rpm_limit, tpm_limit, max_concurrency, period_quota, quota_period`;

export function toTokenRecord(row: TokenRow, cipher: KeyCipher): TokenRecord {
  return {
    id: row.id,
    user_id: row.user_id,
    key: cipher.decrypt(row.key_cipher),
    status: row.status,
    name: row.name,
    group: row.group,
    models: row.models,
    remain_quota: row.remain_quota,
    unlimited_quota: row.unlimited_quota,
    used_quota: row.used_quota,
    expired_time: row.expired_time,
    created_time: row.created_time,
    accessed_time: row.accessed_time,
    // Accepted on write and never stored (spec): they always read back unset.
    model_limits: '',
    model_limits_enabled: false,
    allow_ips: '',
    batch_id: row.batch_id,
    rpm_limit: row.rpm_limit,
    tpm_limit: row.tpm_limit,
    max_concurrency: row.max_concurrency,
    period_quota: row.period_quota,
    quota_period: row.quota_period,
  };
}
