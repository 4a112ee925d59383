import { readFileSync } from 'node:fs';
import os from 'node:os';

/**
 * The cgroup's CPU limit in whole cores (rounded up), or null where none is set: cgroup v2's `cpu.max`
 * (`<quota> <period>`, or `max`), else cgroup v1's cfs quota and period. A container given 2.5 CPUs gets 3.
 */
export function cgroupCpuLimit(read: (file: string) => string = (f) => readFileSync(f, 'utf8')): number | null {
  const attempt = (fn: () => number | null) => {
    try {
      return fn();
    } catch {
      return null;
    }
  };
  const ratio = (quota: number, period: number) => (quota > 0 && period > 0 ? Math.max(1, Math.ceil(quota / period)) : null);
  const v2 = attempt(() => {
    const [quota, period] = read('/sys/fs/cgroup/cpu.max').trim().split(/\s+/);
    return quota === 'max' ? null : ratio(Number(quota), Number(period));
  });
  if (v2 !== null) return v2;
  return attempt(() => ratio(Number(read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us').trim()), Number(read('/sys/fs/cgroup/cpu/cpu.cfs_period_us').trim())));
}

/**
 * The cores this process may use: the CPUs it may run on (`os.availableParallelism`, which follows `taskset` and
 * the scheduler's affinity), lowered to the cgroup's CPU limit when one is set. Node 20's libuv reads no cgroup.
 */
export function availableCores(limit = cgroupCpuLimit()): number {
  const cpus = os.availableParallelism();
  return Math.max(1, limit === null ? cpus : Math.min(cpus, limit));
}

/** GATEWAY_PROCESSES (or `--processes`) as a count: `auto` is availableCores(). */
export function processCount(setting: 'auto' | number): number {
  return setting === 'auto' ? availableCores() : setting;
}
