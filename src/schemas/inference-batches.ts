import { z } from 'zod';
import { OPENAI_BATCH_ENDPOINTS } from '../domain/batches/batch-record';

/** Request shapes of the Files API, the OpenAI Batch API and Anthropic Message Batches. */

export const fileIdParams = z.object({ file_id: z.string().min(1).max(128) });
export const batchIdParams = z.object({ batch_id: z.string().min(1).max(128) });
export const messageBatchIdParams = z.object({ message_batch_id: z.string().min(1).max(128) });

export const fileListQuery = z.object({
  purpose: z.string().max(64).optional(),
  limit: z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(1, 'must be between 1 and 10000').max(10_000, 'must be between 1 and 10000').default(10_000),
  after: z.string().max(128).optional(),
  order: z.enum(['asc', 'desc'], { error: "must be 'asc' or 'desc'" }).default('desc'),
});

/** OpenAI's bounds on metadata: at most 16 pairs, keys up to 64 characters, values up to 512. */
const metadata = z
  .record(z.string().max(64, 'keys must be at most 64 characters'), z.string({ error: 'values must be strings' }).max(512, 'values must be at most 512 characters'))
  .refine((m) => Object.keys(m).length <= 16, 'must have at most 16 keys')
  .nullable()
  .optional();

export const batchCreateBody = z.looseObject({
  input_file_id: z.string({ error: 'is required: the id of a file uploaded with purpose batch' }).min(1, 'must not be empty').max(128),
  endpoint: z.enum(OPENAI_BATCH_ENDPOINTS, { error: `must be one of: ${OPENAI_BATCH_ENDPOINTS.join(', ')}` }),
  completion_window: z.literal('24h', { error: "must be '24h'" }),
  metadata,
});

export const batchListQuery = z.object({
  limit: z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(1, 'must be between 1 and 100').max(100, 'must be between 1 and 100').default(20),
  after: z.string().max(128).optional(),
});

/** Anthropic's bounds: at most 100,000 requests, custom ids of 1 to 64 letters, digits, `_` and `-`. */
export const MAX_MESSAGE_BATCH_REQUESTS = 100_000;
export const MAX_MESSAGE_BATCH_BYTES = 256 * 1024 * 1024;

export const messageBatchCreateBody = z.looseObject({
  requests: z
    .array(
      z.looseObject({
        custom_id: z.string({ error: 'is required' }).regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, underscores or hyphens'),
        params: z.looseObject({
          model: z.string({ error: 'is required' }).min(1, 'is required'),
          max_tokens: z.number({ error: 'is required: a whole number' }).int('must be a whole number').min(1, 'must be at least 1'),
          messages: z.array(z.unknown(), { error: 'is required: an array' }),
        }),
      }),
      { error: 'is required: an array of {custom_id, params}' },
    )
    .min(1, 'must hold at least one request')
    .max(MAX_MESSAGE_BATCH_REQUESTS, `must hold at most ${MAX_MESSAGE_BATCH_REQUESTS} requests`),
});

export const messageBatchListQuery = z.object({
  limit: z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(1, 'must be between 1 and 1000').max(1000, 'must be between 1 and 1000').default(20),
  before_id: z.string().max(128).optional(),
  after_id: z.string().max(128).optional(),
});
