import type { HoldRepository } from '../ports/billing';
import { repeatInBackground } from '../../repeat-in-background';

/**
 * Releases holds whose expiry passed (an api replica died mid-call, a workflow never finished), each through
 * billing_release in a transaction of its own: one release takes its rows in the lock order every billing
 * operation keeps, so a sweep never deadlocks with a settle or another sweeper (several releases in one
 * transaction would hold one key's and account's locks while waiting for the next). Two sweepers that pick the
 * same hold release it once (the second finds it gone). Returns how many holds it released.
 */
export async function sweepExpiredHolds(holds: HoldRepository, opts: { batchSize?: number; maxBatches?: number } = {}): Promise<number> {
  const batchSize = opts.batchSize ?? 500;
  const maxBatches = opts.maxBatches ?? 100;
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    const expired = await holds.expired(batchSize);
    for (const businessKey of expired) {
      const r = await holds.release(businessKey);
      if (r?.o_status === 'released') total++;
    }
    if (expired.length < batchSize) break;
  }
  return total;
}

/** Runs sweepExpiredHolds every `intervalMs` until stopped; errors are reported and retried next tick. */
export function startHoldSweeper(
  holds: HoldRepository,
  opts: { intervalMs?: number; onError?: (err: unknown) => void; onSwept?: (n: number) => void } = {},
): { stop(): Promise<void> } {
  const { stop } = repeatInBackground(() => sweepExpiredHolds(holds), { intervalMs: opts.intervalMs ?? 30_000, onError: opts.onError, onDone: opts.onSwept });
  return { stop };
}
