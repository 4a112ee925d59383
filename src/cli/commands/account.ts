import type { Command } from 'commander';
import { loadConfig } from '../../config';
import { MIN_PASSWORD_LENGTH } from '../../domain/accounts/password-policy';
import type * as Accounts from '../../domain/accounts/accounts';
import type { Repositories } from '../../domain/ports/repositories';
import { readSecret, SecretSpec } from '../secrets';

/** The database and the accounts' rules, loaded when an account command runs (not by `gateway api`, which shares the CLI). */
async function withAccounts<T>(fn: (repos: Repositories, accounts: typeof Accounts) => Promise<T>): Promise<T> {
  const [{ withDatabase }, { createRepositories }, accounts] = await Promise.all([
    import('../../runtime/database'),
    import('../../db/repositories/index'),
    import('../../domain/accounts/accounts'),
  ]);
  return withDatabase(loadConfig(), (db) => fn(createRepositories(db.pool), accounts));
}

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

/** The new password of `account password`: --new-password-file, GATEWAY_ACCOUNT_NEW_PASSWORD, or a confirmed prompt. */
const NEW_PASSWORD: SecretSpec = {
  what: 'new password',
  argOption: '--new-password',
  fileOption: '--new-password-file',
  envVar: 'GATEWAY_ACCOUNT_NEW_PASSWORD',
  prompt: 'New password: ',
  confirm: true,
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
    `password (at least ${MIN_PASSWORD_LENGTH} characters, not a common one, not containing the username)`,
  ).action(async (opts: AccountOptions) => {
    // Asked for before the database opens: a prompt must not hold the embedded database (and its lock).
    const password = await readSecret({ ...PASSWORD, confirm: true }, { arg: opts.password, file: opts.passwordFile });
    await withAccounts(async (repos, { createAccount }) => {
      const { account: created, systemToken } = await createAccount(repos, { username: opts.username, password });
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
    await withAccounts(async (repos, { rotateSystemToken }) => {
      const { account: rotated, systemToken } = await rotateSystemToken(repos, { username: opts.username, password }, { via: 'cli' });
      process.stdout.write(`Rotated the system token of ${rotated.username} (id ${rotated.id})\nSystem token: ${systemToken}\n`);
    });
  });
  withPassword(
    account
      .command('password')
      .description('change an account\'s password (asks for the current one, then the new one twice); ends its console sessions')
      .requiredOption('--username <name>', 'account name')
      .option('--new-password-file <file>', 'read the new password from this file (- for standard input); default: '
        + '$GATEWAY_ACCOUNT_NEW_PASSWORD, else a prompt that does not echo'),
    'current password',
  ).action(async (opts: AccountOptions & { newPasswordFile?: string }) => {
    const current = await readSecret(PASSWORD, { arg: opts.password, file: opts.passwordFile });
    const next = await readSecret(NEW_PASSWORD, { file: opts.newPasswordFile });
    await withAccounts(async (repos, { changePassword }) => {
      const changed = await changePassword(repos, { username: opts.username, currentPassword: current, newPassword: next }, { via: 'cli' });
      process.stdout.write(`Changed the password of ${changed.username} (id ${changed.id}); its console sessions have ended\n`);
    });
  });
  account
    .command('set-admin')
    .description('give an account the operator\'s role (channel health, global metrics), or take it with --revoke')
    .requiredOption('--username <name>', 'account name')
    .option('--revoke', 'take the role away')
    .action(async (opts: { username: string; revoke?: boolean }) => {
      await withAccounts(async (repos, { setAdmin }) => {
        const a = await setAdmin(repos, opts.username, !opts.revoke);
        process.stdout.write(`${a.username} (id ${a.id}) ${a.isAdmin ? 'has' : 'no longer has'} the operator's role\n`);
      });
    });
}
