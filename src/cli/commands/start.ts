import type { Command } from 'commander';
import { runService } from '../../runtime/service';

const PROCESSES_HELP =
  'serve from N processes sharing one port: auto (default: the cores available, cgroup limits respected) or a ' +
  'number; overrides GATEWAY_PROCESSES';

/** `--processes` sets GATEWAY_PROCESSES, so it is checked as the variable is and the group's processes inherit it. */
function withProcesses(opts: { processes?: string }): void {
  if (opts.processes !== undefined) process.env.GATEWAY_PROCESSES = opts.processes;
}

/** `start` (everything, embedded defaults), `api` and `worker` (production entry points). */
export function registerStartCommands(program: Command): void {
  program
    .command('start')
    .description(
      'run api + worker in one process; without DATABASE_URL an embedded PostgreSQL (PGlite) and without ' +
        'TEMPORAL_ADDRESS a local Temporal dev server, both keeping their data in DATA_DIR; on PostgreSQL the api ' +
        'serves from --processes processes (one of them runs the worker)',
    )
    .option('--processes <n>', `${PROCESSES_HELP} (on PostgreSQL only: the embedded database is one process)`)
    .action((opts: { processes?: string }) => {
      withProcesses(opts);
      return runService('start');
    });
  program
    .command('api')
    .description('run the HTTP api only (needs DATABASE_URL, TEMPORAL_ADDRESS and GATEWAY_SECRET)')
    .option('--processes <n>', PROCESSES_HELP)
    .action((opts: { processes?: string }) => {
      withProcesses(opts);
      return runService('api');
    });
  program
    .command('worker')
    .description('run the Temporal worker only (needs DATABASE_URL, TEMPORAL_ADDRESS and GATEWAY_SECRET)')
    .action(() => runService('worker'));
}
