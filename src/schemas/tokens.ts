import { QUOTA_PERIODS } from '../domain/limits/period';
import { paginationQuery } from './pagination';
import { z } from 'zod';
import { storedText } from './text';
import { isExpired } from '../domain/keys/token-record';
import type { TokenSettings } from '../domain/keys/token-record';

/**
 * Request shapes of `/api/token/*` (spec "API key record", docs/api.md "Keys").
 *
 * Messages do not repeat the field name: the error handler answers `<field>: <message>`.
 *
 * Objects are `z.object` (unknown keys are stripped, not rejected): clients send back the whole record
 * as read, with read-only fields (key, user_id, used_quota, created_time, accessed_time, batch_id) and
 * fields the spec says are ignored. Those are accepted and never reach the service.
 *
 * `null` on a writable field reads as "omitted" (it takes the creation default), the way one-api's JSON
 * decoding treats it; a value of the wrong type is a 400.
 */

/** 9999-12-31T23:59:59Z: anything later is almost certainly milliseconds sent as seconds. */
const MAX_UNIX_SECONDS = 253_402_300_799;

const TEXT_MAX = 255;
const MODELS_MAX = 65_536;

const text = storedText;

/** Turns `null` into `undefined`, so `.optional()` fields treat it as omitted. */
export const nullable = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === null ? undefined : v), schema.optional());

export const tokenName = text(TEXT_MAX);
export const tokenGroup = text(TEXT_MAX);
/** Comma-separated allowlist of model ids; empty = no restriction. */
export const tokenModels = text(MODELS_MAX);

export const remainQuota = z
  .number({ error: 'must be an integer number of credits' })
  .int('must be a whole number of credits')
  .min(0, 'must not be negative')
  .max(Number.MAX_SAFE_INTEGER, 'is too large');

/** rpm_limit, tpm_limit, max_concurrency: 0 is no limit of the key's own. */
export const keyLimit = z
  .number({ error: 'must be a whole number, 0 for no limit' })
  .int('must be a whole number, 0 for no limit')
  .min(0, 'must not be negative')
  .max(1_000_000_000, 'must be at most 1000000000');

export const unlimitedQuota = z.boolean({ error: 'must be true or false' });

export const expiredTime = z
  .number({ error: 'must be an integer (Unix seconds, or -1 for never)' })
  .int('must be a whole number of Unix seconds, or -1 for never')
  .max(MAX_UNIX_SECONDS, 'must be Unix seconds, not milliseconds')
  .refine((v) => !isExpired(v), 'must be -1 (never) or a Unix time in the future');

/** A status that can be written: 1 enabled, 2 disabled. */
export const tokenStatus = z.union([z.literal(1), z.literal(2)], { error: 'must be 1 (enabled) or 2 (disabled)' });

/**
 * A status a record may read back with: besides 1 and 2, the derived 3 expired and 4 exhausted that
 * one-api/new-api clients know. Where `status` is accepted but not written (create,
 * whole-object PUT), any of these round-trips; anything else (7, '1') is a 400.
 */
export const tokenReadStatus = z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4)], {
  error: 'must be 1 (enabled) or 2 (disabled)',
});

/** A key id in a JSON body. */
export const tokenIdField = z
  .number({ error: 'must be an integer key id' })
  .int('must be an integer key id')
  .positive('must be a positive key id');

/** A key id in the path: digits only (no `1e3`, `0x10`, ` 7`), within the safe integer range. */
export const tokenIdParam = z.object({
  id: z
    .string()
    .regex(/^[0-9]{1,15}$/, 'must be a positive integer key id')
    .transform(Number)
    .refine((n) => n > 0, 'must be a positive integer key id'),
});

/**
 * Accepted in any shape and ignored (spec: "appear in the structure but are ignored"). Declared so the
 * contract is visible here; routes never pass them on, so they are not stored and read back unset.
 * `count` is ignored too: there is no server-side batch creation, one call creates one key.
 */
const ignoredFields = {
  model_limits: z.unknown().optional(),
  model_limits_enabled: z.unknown().optional(),
  allow_ips: z.unknown().optional(),
  count: z.unknown().optional(),
};

/** The writable settings; each optional, an omitted one takes its creation default (TOKEN_DEFAULTS). */
const settingsFields = {
  name: nullable(tokenName),
  remain_quota: nullable(remainQuota),
  unlimited_quota: nullable(unlimitedQuota),
  group: nullable(tokenGroup),
  models: nullable(tokenModels),
  expired_time: nullable(expiredTime),
  rpm_limit: nullable(keyLimit),
  tpm_limit: nullable(keyLimit),
  max_concurrency: nullable(keyLimit),
  period_quota: nullable(remainQuota),
  quota_period: z.enum(QUOTA_PERIODS, { error: 'must be day, week or month' }).nullable().optional(),
};

/**
 * POST /api/token/. `status` is not a create field: when present it must still be a valid status
 * (so `7` is a 400), but it is ignored and every key is created enabled, as one-api does. A client that
 * wants a disabled key follows up with `PUT ?status_only=true`.
 */
export const tokenCreateBody = z.object({
  ...settingsFields,
  status: nullable(tokenReadStatus),
  ...ignoredFields,
});

/**
 * PUT /api/token/ (whole-object update). `status` is validated like everywhere else but changes only
 * with `?status_only=true`; omitted writable fields go back to their creation defaults.
 */
export const tokenUpdateBody = z.object({
  id: tokenIdField,
  ...settingsFields,
  status: nullable(tokenReadStatus),
  ...ignoredFields,
});

/** PUT /api/token/?status_only=true: only `id` and `status` are read; everything else is ignored. */
export const tokenStatusBody = z.object({
  id: tokenIdField,
  status: tokenStatus,
});

/**
 * What the PUT route validates before it knows which of the two bodies applies: an object with an id.
 * The other keys are kept (loose) so the handler can check them against tokenUpdateBody or
 * tokenStatusBody according to `status_only`.
 */
export const tokenPutBody = z.looseObject({ id: tokenIdField });

export const tokenPutQuery = z.object({
  status_only: z
    .enum(['true', 'false', '1', '0', ''], { error: 'must be true or false' })
    .optional()
    .transform((v) => v === 'true' || v === '1'),
});

export type TokenCreateBody = z.infer<typeof tokenCreateBody>;
export type TokenUpdateBody = z.infer<typeof tokenUpdateBody>;

/** The writable settings a body actually carries (omitted and null ones left out for the service's defaults). */
export function settingsOf(body: TokenCreateBody | TokenUpdateBody): Partial<TokenSettings> {
  const out: Partial<TokenSettings> = {};
  if (body.name !== undefined) out.name = body.name;
  if (body.remain_quota !== undefined) out.remain_quota = body.remain_quota;
  if (body.unlimited_quota !== undefined) out.unlimited_quota = body.unlimited_quota;
  if (body.group !== undefined) out.group = body.group;
  if (body.models !== undefined) out.models = body.models;
  if (body.expired_time !== undefined) out.expired_time = body.expired_time;
  if (body.rpm_limit !== undefined) out.rpm_limit = body.rpm_limit;
  if (body.tpm_limit !== undefined) out.tpm_limit = body.tpm_limit;
  if (body.max_concurrency !== undefined) out.max_concurrency = body.max_concurrency;
  if (body.period_quota !== undefined) out.period_quota = body.period_quota;
  if (body.quota_period !== undefined) out.quota_period = body.quota_period;
  return out;
}

/** GET /api/token/: paging, and optional filters (the console's search): name substring, status, group. */
export const tokenListQuery = paginationQuery.extend({
  keyword: storedText(255).optional().describe('keys whose name contains it (case-insensitive)'),
  status: z.coerce.number({ error: 'must be a number' }).int().min(1).max(4).optional().describe('1 enabled, 2 disabled, 3 expired, 4 exhausted'),
  group: storedText(64).optional().describe("the key's group ('' or 'default' for the default group)"),
  after_id: z.coerce
    .number({ error: 'must be a key id' })
    .int('must be a whole key id')
    .min(1, 'must be a positive key id')
    .max(Number.MAX_SAFE_INTEGER, 'is too large')
    .optional()
    .describe('cursor for scripts that walk every key: the keys after this id in the list order (newest first), p is then ignored'),
});
