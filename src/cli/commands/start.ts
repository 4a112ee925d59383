import type { Command } from 'commander';
import { runService } from '../../runtime/service';

/** `start` (everything, embedded defaults), `api` and `worker` (production entry points). */
export function registerStartCommands(program: Command): void {
  program
    .command('start')
    .description(
      'run api + worker in one process; without DATABASE_URL an embedded PostgreSQL (PGlite) and without ' +
        'TEMPORAL_ADDRESS a local Temporal dev server, both keeping their data in DATA_DIR',
    )
    .action(() => runService('start'));
  program
    .command('api')
    .description('run the HTTP api only (needs DATABASE_URL, TEMPORAL_ADDRESS and GATEWAY_SECRET)')
    .action(() => runService('api'));
  program
    .command('worker')
    .description('run the Temporal worker only (needs DATABASE_URL, TEMPORAL_ADDRESS and GATEWAY_SECRET)')
    .action(() => runService('worker'));
}
