import { z } from 'zod';
import { paginationQuery } from './pagination';

const timestamp = z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(0, 'must not be negative');

/** Filters of GET /api/task/ (created time in Unix seconds, inclusive), with paging as for keys. */
export const taskListQuery = paginationQuery.extend({
  status: z.enum(['queued', 'processing', 'completed', 'failed'], { error: 'must be queued, processing, completed or failed' }).optional(),
  model: z.string().max(255, 'must be at most 255 characters').optional(),
  family: z.enum(['A', 'B', 'C'], { error: 'must be A, B or C' }).optional(),
  start_timestamp: timestamp.optional(),
  end_timestamp: timestamp.optional(),
});

export const taskIdParam = z.object({ id: z.string().min(1).max(200) });

export const taskRecord = z
  .object({
    id: z.string(),
    family: z.enum(['A', 'B', 'C']),
    model: z.string(),
    status: z.enum(['queued', 'processing', 'completed', 'failed']),
    progress: z.int(),
    token_name: z.string(),
    channel: z.string(),
    quota: z.int().describe('credits held at submit'),
    billed: z.int().nullable().describe('credits in the ledger (completed tasks only)'),
    error_code: z.string().nullable(),
    error_message: z.string().nullable(),
    duration: z.int().nullable(),
    resolution: z.string().nullable(),
    request_id: z.string(),
    workflow_id: z.string(),
    created_at: z.int(),
    updated_at: z.int(),
    finished_at: z.int().nullable(),
    result: z
      .object({
        stored: z.boolean().describe("a copy is in the gateway's object store: links serve it"),
        expires_at: z.int().nullable().describe('when retention deletes the copy (Unix seconds)'),
        fallback: z.string().nullable().describe("why the copy gave up: links serve the upstream's file"),
        deleted_at: z.int().nullable().describe('when retention deleted the copy'),
      })
      .nullable()
      .describe('completed tasks: where the finished file is kept'),
  })
  .meta({ id: 'TaskRecord' });

export const videoRetention = z
  .object({
    retention_days: z.number(),
    store: z.string().describe('where finished videos are kept: local <dir> or s3://bucket/prefix'),
    schedule: z
      .object({ id: z.string(), next_run_at: z.int().nullable(), last_run_at: z.int().nullable(), runs: z.int() })
      .nullable()
      .describe('the Temporal schedule of retention passes; null until a worker created it'),
    results: z.object({ stored: z.int(), fallback: z.int(), deleted: z.int(), stored_bytes: z.int() }),
  })
  .meta({ id: 'VideoRetention' });
