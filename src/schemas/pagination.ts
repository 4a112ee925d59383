import { z } from 'zod';

/** `p` is 1-based (0 reads as 1); `page_size` 1..100, default 10 (docs/api.md, "Pagination"). */
export const paginationQuery = z.object({
  p: z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(0, 'must not be negative').default(1),
  page_size: z.coerce
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be between 1 and 100')
    .max(100, 'must be between 1 and 100')
    .default(10),
});

export type PaginationQuery = z.infer<typeof paginationQuery>;

export function toPage(q: PaginationQuery): { offset: number; limit: number } {
  const page = Math.max(q.p, 1);
  return { offset: (page - 1) * q.page_size, limit: q.page_size };
}
