import type { Pool } from 'pg';

/**
 * Releases holds whose expiry passed (an api replica died mid-call, a workflow never finished) through
 * billing_release (billing_sweep, src/db/functions.sql), `batchSize` at a time; concurrent sweepers skip each
 * other's rows. Returns how many holds it released.
 */
export async function sweepExpiredHolds(db: Pool, opts: { batchSize?: number; maxBatches?: number } = {}): Promise<number> {
  const batchSize = opts.batchSize ?? 500;
  const maxBatches = opts.maxBatches ?? 100;
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    const res = await db.query<{ n: number }>('SELECT billing_sweep($1) AS n', [batchSize]);
    const n = res.rows[0].n;
    total += n;
    if (n < batchSize) break;
  }
  return total;
}

/** Runs sweepExpiredHolds every `intervalMs` until stopped; errors are reported and retried next tick. */
export function startHoldSweeper(
  db: Pool,
  opts: { intervalMs?: number; onError?: (err: unknown) => void; onSwept?: (n: number) => void } = {},
): { stop(): Promise<void> } {
  const intervalMs = opts.intervalMs ?? 30_000;
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    if (running) return;
    running = sweepExpiredHolds(db)
      .then((n) => {
        if (n > 0) opts.onSwept?.(n);
      })
      .catch((err) => opts.onError?.(err))
      .finally(() => {
        running = null;
      });
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
