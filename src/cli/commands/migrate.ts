import type { Command } from 'commander';
import { loadConfig } from '../../config';

export function registerMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('apply pending database migrations (DATABASE_URL, else the embedded database in DATA_DIR)')
    .action(async () => {
      const config = loadConfig();
      const { withDatabase } = await import('../../runtime/database');
      await withDatabase(config, async (db) => {
        process.stdout.write(`Database: ${db.description}\n`);
        process.stdout.write(
          db.applied.length > 0 ? `Applied: ${db.applied.join(', ')}\n` : 'Schema is up to date; nothing to apply.\n',
        );
      });
    });
}
