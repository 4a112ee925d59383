import { z } from 'zod';

/** `/api/batches/`: the console's view of the account's inference batches (both APIs). */

export const inferenceBatchListQuery = z.object({
  p: z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(0, 'must not be negative').default(1),
  page_size: z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(1, 'must be between 1 and 100').max(100, 'must be between 1 and 100').default(10),
  status: z.enum(['validating', 'in_progress', 'finalizing', 'completed', 'failed', 'expired', 'cancelling', 'cancelled'], { error: 'must be a batch status' }).optional(),
});

export const inferenceBatchIdParam = z.object({ id: z.string().min(1).max(128) });
export const inferenceBatchFileParam = z.object({ id: z.string().min(1).max(128), kind: z.enum(['output', 'errors'], { error: "must be 'output' or 'errors'" }) });

export const inferenceBatchRecord = z
  .object({
    id: z.string(),
    api: z.enum(['openai', 'anthropic']),
    endpoint: z.string(),
    status: z.string(),
    token_name: z.string(),
    total: z.int(),
    succeeded: z.int(),
    failed: z.int(),
    canceled: z.int(),
    expired: z.int(),
    input_tokens: z.int(),
    output_tokens: z.int(),
    has_output: z.boolean(),
    has_errors: z.boolean(),
    created_at: z.int(),
    ended_at: z.int().nullable(),
    expires_at: z.int(),
  })
  .meta({ id: 'InferenceBatchRecord' });
