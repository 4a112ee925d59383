import os from 'node:os';
import { availableCores, cgroupCpuLimit, processCount } from '../../src/runtime/cores';
import { loadConfig } from '../../src/config';

/** GATEWAY_PROCESSES=auto: the cores this process may use, a container's CPU limit respected. */
describe('cores: what GATEWAY_PROCESSES=auto means', () => {
  const files = (entries: Record<string, string>) => (file: string) => {
    if (!(file in entries)) throw new Error(`ENOENT: ${file}`);
    return entries[file];
  };

  it('reads cgroup v2 cpu.max, rounding a fractional limit up', () => {
    expect(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': '250000 100000\n' }))).toBe(3);
    expect(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': '50000 100000\n' }))).toBe(1);
    expect(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }))).toBeNull();
  });

  it('falls back to cgroup v1 cfs quota and period; -1 or no files is no limit', () => {
    expect(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '400000', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000' }))).toBe(4);
    expect(cgroupCpuLimit(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000' }))).toBeNull();
    expect(cgroupCpuLimit(files({}))).toBeNull();
  });

  it('is the CPUs the process may run on, lowered to the cgroup limit, at least 1', () => {
    const cpus = os.availableParallelism();
    expect(availableCores(null)).toBe(cpus);
    expect(availableCores(1)).toBe(1);
    expect(availableCores(cpus + 8)).toBe(cpus);
    expect(processCount(5)).toBe(5);
    expect(processCount('auto')).toBeGreaterThanOrEqual(1);
  });

  it('GATEWAY_PROCESSES takes auto or a whole number from 1 to 999, and says so otherwise', () => {
    expect(loadConfig({}).GATEWAY_PROCESSES).toBe('auto');
    expect(loadConfig({ GATEWAY_PROCESSES: '4' }).GATEWAY_PROCESSES).toBe(4);
    for (const bad of ['0', '-1', 'two', '1.5', '1000']) {
      expect(() => loadConfig({ GATEWAY_PROCESSES: bad })).toThrow(/GATEWAY_PROCESSES: must be auto or a whole number from 1 to 999/);
    }
  });
});
