import type { Command } from 'commander';
import { loadConfig } from '../../config';
import { createAccount, rotateSystemToken } from '../../domain/accounts/accounts';
import { withDatabase } from '../../runtime/database';

/** `account create` and `account rotate-token`: print the new system token once; only its hash is kept. */
export function registerAccountCommands(program: Command): void {
  const account = program.command('account').description('manage accounts (DATABASE_URL, else the embedded database in DATA_DIR)');
  account
    .command('create')
    .description('create an account and print its system token')
    .requiredOption('--username <name>', '1-64 letters, digits or _.@-')
    .requiredOption('--password <password>', 'at least 8 characters')
    .action(async (opts: { username: string; password: string }) => {
      await withDatabase(loadConfig(), async (db) => {
        const { account: created, systemToken } = await createAccount(db.pool, opts);
        process.stdout.write(`Created account ${created.username} (id ${created.id})\nSystem token: ${systemToken}\n`);
      });
    });
  account
    .command('rotate-token')
    .description('replace an account\'s system token (the old one stops working) and print the new one')
    .requiredOption('--username <name>', 'account name')
    .requiredOption('--password <password>', 'account password')
    .action(async (opts: { username: string; password: string }) => {
      await withDatabase(loadConfig(), async (db) => {
        const { account: rotated, systemToken } = await rotateSystemToken(db.pool, opts);
        process.stdout.write(`Rotated the system token of ${rotated.username} (id ${rotated.id})\nSystem token: ${systemToken}\n`);
      });
    });
}
