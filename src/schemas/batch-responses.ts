import { z } from 'zod';
import { anthropicErrors, openAiErrors } from './responses';

/** Response shapes of the Files API, the OpenAI Batch API and Anthropic Message Batches (for the OpenAPI document). */

const count = z.int();
const seconds = z.int().nullable();

export const fileObject = z
  .looseObject({
    id: z.string(),
    object: z.literal('file'),
    bytes: count,
    created_at: count,
    expires_at: seconds,
    filename: z.string(),
    purpose: z.string(),
    status: z.literal('processed'),
    status_details: z.null(),
  })
  .meta({ id: 'File' });

export const fileList = z.object({ object: z.literal('list'), data: z.array(fileObject), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean() });
export const fileDeleted = z.object({ id: z.string(), object: z.literal('file'), deleted: z.literal(true) });

export const batchObject = z
  .looseObject({
    id: z.string(),
    object: z.literal('batch'),
    endpoint: z.string(),
    errors: z.looseObject({ object: z.literal('list'), data: z.array(z.looseObject({ code: z.string(), message: z.string(), param: z.string().nullable(), line: z.int().nullable() })) }).nullable(),
    input_file_id: z.string(),
    completion_window: z.string(),
    status: z.enum(['validating', 'in_progress', 'finalizing', 'completed', 'failed', 'expired', 'cancelling', 'cancelled']),
    output_file_id: z.string().nullable(),
    error_file_id: z.string().nullable(),
    created_at: count,
    in_progress_at: seconds,
    expires_at: count,
    finalizing_at: seconds,
    completed_at: seconds,
    failed_at: seconds,
    expired_at: seconds,
    cancelling_at: seconds,
    cancelled_at: seconds,
    request_counts: z.object({ total: count, completed: count, failed: count }),
    usage: z.looseObject({ input_tokens: count, output_tokens: count, total_tokens: count }),
    metadata: z.record(z.string(), z.string()).nullable(),
  })
  .meta({ id: 'Batch' });

export const batchList = z.object({ object: z.literal('list'), data: z.array(batchObject), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean() });

export const messageBatch = z
  .looseObject({
    id: z.string(),
    type: z.literal('message_batch'),
    processing_status: z.enum(['in_progress', 'canceling', 'ended']),
    request_counts: z.object({ processing: count, succeeded: count, errored: count, canceled: count, expired: count }),
    ended_at: z.string().nullable(),
    created_at: z.string(),
    expires_at: z.string(),
    archived_at: z.null(),
    cancel_initiated_at: z.string().nullable(),
    results_url: z.string().nullable(),
  })
  .meta({ id: 'MessageBatch' });

export const messageBatchList = z.object({ data: z.array(messageBatch), has_more: z.boolean(), first_id: z.string().nullable(), last_id: z.string().nullable() });
export const messageBatchDeleted = z.object({ id: z.string(), type: z.literal('message_batch_deleted') });

const jsonl = (what: string) => ({ description: what, content: { 'application/jsonl': { schema: z.string().describe(what) } } });

export const openAi = (success: z.ZodType) => ({ 200: success, ...openAiErrors });
export const anthropic = (success: z.ZodType) => ({ 200: success, ...anthropicErrors });
export const fileContentResponse = { 200: jsonl('the file, JSON Lines'), ...openAiErrors };
export const messageBatchResultsResponse = {
  200: { description: 'the results, JSON Lines of {custom_id, result}', content: { 'application/binary': { schema: z.string().describe('JSON Lines of {custom_id, result}') } } },
  ...anthropicErrors,
};
