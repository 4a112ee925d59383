import { z } from 'zod';
import { paginationQuery } from './pagination';

const timestamp = z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(0, 'must not be negative');

/** Filters of GET /api/log/ and /api/log/stat (timestamps in Unix seconds, inclusive). */
export const logFilterQuery = z.object({
  token_name: z.string().max(255, 'must be at most 255 characters').optional(),
  model_name: z.string().max(255, 'must be at most 255 characters').optional(),
  start_timestamp: timestamp.optional(),
  end_timestamp: timestamp.optional(),
});

export const logListQuery = paginationQuery.extend(logFilterQuery.shape);

export function filtersOf(q: z.infer<typeof logFilterQuery>) {
  return { tokenName: q.token_name, modelName: q.model_name, startTimestamp: q.start_timestamp, endTimestamp: q.end_timestamp };
}
