import type { Command } from 'commander';
import { loadConfig } from '../../config';
import { createAccount, rotateSystemToken } from '../../domain/accounts/accounts';
import { withDatabase } from '../../runtime/database';
import { readSecret, SecretSpec } from '../secrets';

interface AccountOptions {
  username: string;
  password?: string;
  passwordFile?: string;
}

/** The password: --password (warns), --password-file, GATEWAY_ACCOUNT_PASSWORD, standard input, or a hidden prompt. */
const PASSWORD: SecretSpec = {
  what: 'password',
  argOption: '--password',
  fileOption: '--password-file',
  envVar: 'GATEWAY_ACCOUNT_PASSWORD',
  prompt: 'Password: ',
};

const withPassword = (cmd: Command, what: string) =>
  cmd
    .option('--password-file <file>', `read the ${what} from this file (- for standard input); default: `
      + '$GATEWAY_ACCOUNT_PASSWORD, else standard input when piped, else a prompt that does not echo')
    .option('--password <password>', 'the password itself: avoid, it ends up in shell history and npm\'s log (warns)');

/** `account create` and `account rotate-token`: print the new system token once; only its hash is kept. */
export function registerAccountCommands(program: Command): void {
  const account = program.command('account').description('manage accounts (DATABASE_URL, else the embedded database in DATA_DIR)');
  withPassword(
    account
      .command('create')
      .description('create an account and print its system token')
      .requiredOption('--username <name>', '1-64 letters, digits or _.@-'),
    'password (at least 8 characters)',
  ).action(async (opts: AccountOptions) => {
    // Asked for before the database opens: a prompt must not hold the embedded database (and its lock).
    const password = await readSecret({ ...PASSWORD, confirm: true }, { arg: opts.password, file: opts.passwordFile });
    await withDatabase(loadConfig(), async (db) => {
      const { account: created, systemToken } = await createAccount(db.pool, { username: opts.username, password });
      process.stdout.write(`Created account ${created.username} (id ${created.id})\nSystem token: ${systemToken}\n`);
    });
  });
  withPassword(
    account
      .command('rotate-token')
      .description('replace an account\'s system token (the old one stops working) and print the new one')
      .requiredOption('--username <name>', 'account name'),
    'account password',
  ).action(async (opts: AccountOptions) => {
    const password = await readSecret(PASSWORD, { arg: opts.password, file: opts.passwordFile });
    await withDatabase(loadConfig(), async (db) => {
      const { account: rotated, systemToken } = await rotateSystemToken(db.pool, { username: opts.username, password });
      process.stdout.write(`Rotated the system token of ${rotated.username} (id ${rotated.id})\nSystem token: ${systemToken}\n`);
    });
  });
}
