import type { Pool } from 'pg';
import type { UsageReports, VideoChannelDay } from '../../domain/ports/usage';
import { listCalls, sumCalls } from '../call-log';
import { ledgerByDay } from '../ledger';

export function createUsageReports(db: Pool): UsageReports {
  return {
    calls: (accountId, filters, page) => listCalls(db, accountId, filters, page),
    callTotals: (accountId, filters) => sumCalls(db, accountId, filters),
    byDay: (accountId, filters) => ledgerByDay(db, accountId, filters),
    async videoChannelsDay() {
      const res = await db.query<VideoChannelDay>(
        `SELECT channel, count(*)::int AS done, count(*) FILTER (WHERE status = 'completed')::int AS ok,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at) * 1000) AS p50,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at) * 1000) AS p95,
           (extract(epoch FROM max(finished_at)) * 1000)::float8 AS last
         FROM video_tasks WHERE finished_at > now() - interval '24 hours' AND coalesce(error_code, '') <> 'cancelled'
         GROUP BY channel`,
      );
      return res.rows;
    },
  };
}
