import { readdirSync } from 'node:fs';
import os from 'node:os';

/**
 * Lowers the CPU priority of a whole process (this one by default) to `nice` (WORKER_NICE): every thread it has
 * now, and through them every thread it starts later (Linux gives a new thread its creator's nice value). For a
 * worker-only process on a host it shares with an api and its database: workflow steps are throughput work that can
 * wait a few milliseconds, a client waiting for its answer cannot (docs/decisions/0035-worker-priority.md).
 */
export function lowerProcessPriority(nice: number, pid: number | 'self' = 'self'): void {
  let threads: number[];
  try {
    threads = readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    threads = [pid === 'self' ? 0 : pid]; // no /proc (not Linux): there a pid names the whole process
  }
  for (const tid of threads) {
    try {
      os.setPriority(tid, nice);
    } catch {
      // a thread that ended meanwhile
    }
  }
}
