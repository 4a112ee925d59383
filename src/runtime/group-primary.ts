import type { Config } from '../config';
import { runProcessGroup } from './process-group';
import { Resources } from './resources';
import { openTemporal } from './temporal';
import { bannerRow, mib } from './banner-row';

/**
 * The primary of `gateway api --processes N` (or `gateway start` on PostgreSQL): forks the members and prints the
 * group's banner. Under `start`, process 0 runs the api and the one Temporal worker, the others the api alone;
 * without TEMPORAL_ADDRESS the primary runs the Temporal dev server they all use. Resolves with the exit code.
 */
export async function runGroupPrimary(
  kind: 'start' | 'api',
  config: Config,
  size: number,
  io: { say(line: string): void; warn(line: string): void },
): Promise<number> {
  const resources = new Resources();
  let temporalEnv: Record<string, string> = {};
  try {
    if (kind === 'start' && !config.TEMPORAL_ADDRESS) {
      const temporal = await openTemporal(config, resources, io.warn);
      temporalEnv = { TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace };
    }
    return await runProcessGroup({
      size,
      memberEnv: (index) => ({ ...temporalEnv, GATEWAY_PROCESS_ROLE: kind === 'start' && index === 0 ? 'start' : 'api' }),
      say: io.say,
      warn: io.warn,
      bannerRows: (members) => {
        const total = members.reduce((s, m) => s + m.rssBytes, 0) + process.memoryUsage.rss();
        const setting = config.GATEWAY_PROCESSES === 'auto' ? `auto: ${size} cores` : `GATEWAY_PROCESSES=${size}`;
        return [
          bannerRow('Processes', `${size} on one port (${setting}), pids ${members.map((m) => m.pid).join(', ')}; primary ${process.pid}`),
          bannerRow('Memory', `RSS ${members.map((m) => mib(m.rssBytes)).join(' + ')} MiB, ${mib(total)} MiB in all with the primary`),
        ];
      },
    });
  } finally {
    await resources.closeAll(io.warn);
  }
}
