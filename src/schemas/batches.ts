import { z } from 'zod';
import { expiredTime, nullable, remainQuota, tokenGroup, tokenModels, unlimitedQuota } from './tokens';
import { MAX_BATCH_COUNT, MAX_GRACE_SECONDS } from '../domain/keys/batches';

/**
 * Request shapes of `/api/token/batch*`. Messages do not repeat the field name: the error handler
 * answers `<field>: <message>`. Unknown body fields are stripped, as on the single-key API.
 */

/** Bounds what one batch request can write: settings are copied into every key (100,000 x 64 KiB is 6.5 GB). */
const MAX_BATCH_SETTINGS_CHARS = 64 * 1024 * 1024;
/** Key names are at most 255 characters; the prefix leaves room for `-100000`. */
const PREFIX_MAX = 240;



export const batchCreateBody = z.object({
  count: z
    .number({ error: `is required: a whole number from 1 to ${MAX_BATCH_COUNT}` })
    .int(`must be a whole number from 1 to ${MAX_BATCH_COUNT}`)
    .min(1, `must be a whole number from 1 to ${MAX_BATCH_COUNT}`)
    .max(MAX_BATCH_COUNT, `must be a whole number from 1 to ${MAX_BATCH_COUNT}`),
  name: z
    .string({ error: 'is required: the name prefix of the keys (they are named <name>-00001, <name>-00002, ...)' })
    .min(1, 'must not be empty: it is the name prefix of the keys')
    .max(PREFIX_MAX, `must be at most ${PREFIX_MAX} characters`)
    // eslint-disable-next-line no-control-regex -- matching the NUL character is the point of this check
    .regex(/^[^\u0000]*$/, 'must not contain NUL characters'),
  remain_quota: nullable(remainQuota),
  unlimited_quota: nullable(unlimitedQuota),
  group: nullable(tokenGroup),
  models: nullable(tokenModels),
  expired_time: nullable(expiredTime),
}).refine((b) => b.count * ((b.models?.length ?? 0) + (b.group?.length ?? 0)) <= MAX_BATCH_SETTINGS_CHARS, {
  // Every key of the batch stores its own copy of these settings.
  path: ['models'],
  message: `with group, at most ${MAX_BATCH_SETTINGS_CHARS.toLocaleString('en')} characters over the whole batch (count x length); issue large allowlists in smaller batches`,
});

export type BatchCreateBody = z.infer<typeof batchCreateBody>;

/** The batch input with the single-key creation defaults filled in. */
export function issueInputOf(body: BatchCreateBody) {
  return {
    count: body.count,
    name: body.name,
    remain_quota: body.remain_quota ?? 0,
    unlimited_quota: body.unlimited_quota ?? false,
    group: body.group ?? '',
    models: body.models ?? '',
    expired_time: body.expired_time ?? -1,
  };
}

/** A batch id in the path: digits only, within the safe integer range. */
export const batchIdParam = z.object({
  id: z
    .string()
    .regex(/^[0-9]{1,15}$/, 'must be a positive integer batch id')
    .transform(Number)
    .refine((n) => n > 0, 'must be a positive integer batch id'),
});

/** `Idempotency-Key`: the same key and body from the same account always answer the same batch. */
export const idempotencyHeaders = z.looseObject({
  'idempotency-key': z
    .string()
    .min(1, 'must not be empty')
    .max(255, 'must be at most 255 characters')
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .optional(),
});

export const batchStatusQuery = z.object({
  status_only: z
    .enum(['true', 'false', '1', '0', ''], { error: 'must be true or false' })
    .optional()
    .transform((v) => v === 'true' || v === '1'),
});

export const batchStatusBody = z.object({
  status: z.union([z.literal(1), z.literal(2)], { error: 'must be 1 (enabled) or 2 (disabled)' }),
});

export const batchRotateBody = z.object({
  grace_seconds: z
    .number({ error: `is required: whole seconds from 0 to ${MAX_GRACE_SECONDS} (30 days)` })
    .int(`must be whole seconds from 0 to ${MAX_GRACE_SECONDS} (30 days)`)
    .min(0, 'must not be negative')
    .max(MAX_GRACE_SECONDS, `must be at most ${MAX_GRACE_SECONDS} seconds (30 days)`),
});
