import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { http, newAccount, startGateway, testEnv, TestGateway } from '../helpers/harness';
import { canRunOnTty, exitWithin, removeTempDataDirs, runGateway, RunOptions, tempDataDir } from './runtime-process';

const MIGRATIONS = readdirSync(path.resolve(__dirname, '../../src/db/migrations')).filter((f) => f.endsWith('.sql')).sort();

async function run(args: string[], env: Record<string, string>, opts: RunOptions = {}) {
  const p = runGateway(args, env, opts);
  const { code } = await exitWithin(p, 30_000);
  return { code, output: p.output() };
}

describe('gateway migrate', () => {
  afterAll(removeTempDataDirs);

  it('has nothing left to apply on the test database, which global setup migrated', async () => {
    const { code, output } = await run(['migrate'], { DATABASE_URL: testEnv().databaseUrl });
    expect(output).toContain('Schema is up to date');
    expect(code).toBe(0);
  });

  it('applies the same SQL to a fresh embedded database in DATA_DIR, once', async () => {
    const dataDir = tempDataDir();
    const first = await run(['migrate'], { DATA_DIR: dataDir });
    expect(first.output).toContain(`Database: embedded PGlite in ${path.join(dataDir, 'pg')}`);
    expect(first.output).toContain(`Applied: ${MIGRATIONS.join(', ')}`);
    expect(first.code).toBe(0);
    const second = await run(['migrate'], { DATA_DIR: dataDir });
    expect(second.output).toContain('Schema is up to date');
    expect(second.code).toBe(0);
  });
});

describe('gateway account', () => {
  afterAll(removeTempDataDirs);
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  const env = () => ({ DATABASE_URL: testEnv().databaseUrl });
  const tokenOf = (output: string) => output.match(/^System token: (\S+)$/m)?.[1] ?? '';

  it('creates an account and prints a system token that works on /api/*; the password comes on standard input', async () => {
    const username = `cli_${Date.now()}`;
    const created = await run(['account', 'create', '--username', username], env(), { stdin: 'correct horse battery\n' });
    expect(created.code).toBe(0);
    expect(created.output).not.toContain('warning');
    expect(created.output).toMatch(new RegExp(`^Created account ${username} \\(id \\d+\\)$`, 'm'));
    const token = tokenOf(created.output);
    expect(token).toMatch(/^[A-Za-z0-9]{32}$/);
    const keys = await http(gw.baseUrl, 'GET', '/api/token/', { auth: token });
    expect(keys.status).toBe(200);
    expect(keys.body).toMatchObject({ success: true, data: [] });

    const rotated = await run(['account', 'rotate-token', '--username', username, '--password-file', '-'], env(), { stdin: 'correct horse battery' });
    expect(rotated.code).toBe(0);
    const newToken = tokenOf(rotated.output);
    expect(newToken).toMatch(/^[A-Za-z0-9]{32}$/);
    expect((await http(gw.baseUrl, 'GET', '/api/token/', { auth: newToken })).status).toBe(200);
    expect((await http(gw.baseUrl, 'GET', '/api/token/', { auth: token })).status).toBe(401);

    const duplicate = await run(['account', 'create', '--username', username], env(), { stdin: 'another password\n' });
    expect(duplicate.code).toBe(1);
    expect(duplicate.output).toContain(`username ${username} is taken`);
    expect(duplicate.output).not.toMatch(/^\s+at /m);
  });

  it('takes the password from --password-file and from GATEWAY_ACCOUNT_PASSWORD; with none given it fails, naming the safe ways', async () => {
    const username = `cli_f_${Date.now()}`;
    const file = path.join(tempDataDir(), 'password');
    writeFileSync(file, 'from a file 123\n', { mode: 0o600 });
    const created = await run(['account', 'create', '--username', username, '--password-file', file], env());
    expect(created.code).toBe(0);
    expect(created.output).not.toContain('warning');

    const rotated = await run(['account', 'rotate-token', '--username', username], { ...env(), GATEWAY_ACCOUNT_PASSWORD: 'from a file 123' });
    expect(rotated.code).toBe(0);
    expect(tokenOf(rotated.output)).toMatch(/^[A-Za-z0-9]{32}$/);

    const wrong = await run(['account', 'rotate-token', '--username', username], { ...env(), GATEWAY_ACCOUNT_PASSWORD: 'not the password' });
    expect(wrong.code).toBe(1);

    const none = await run(['account', 'create', '--username', `${username}_x`], env());
    expect(none.code).toBe(1);
    expect(none.output).toContain('a password is needed: set GATEWAY_ACCOUNT_PASSWORD, pass --password-file FILE');
  });

  it('changes a password (current from the environment, new on standard input), refuses a weak one, and grants the admin role', async () => {
    const acct = await newAccount(gw.db);
    const weak = await run(['account', 'create', '--username', `cli_w_${Date.now()}`], env(), { stdin: 'password1\n' });
    expect([weak.code, weak.output]).toEqual([1, expect.stringContaining('password: must be at least 12 characters')]);

    const changed = await run(['account', 'password', '--username', acct.username, '--new-password-file', '-'], { ...env(), GATEWAY_ACCOUNT_PASSWORD: acct.password }, { stdin: 'a fresh long passphrase\n' });
    expect(changed.code).toBe(0);
    expect(changed.output).toContain(`Changed the password of ${acct.username} (id ${acct.id}); its console sessions have ended`);
    const signIn = (password: string) => http(gw.baseUrl, 'POST', '/console/session', { body: { username: acct.username, password } });
    expect((await signIn(acct.password)).status).toBe(401);
    expect((await signIn('a fresh long passphrase')).status).toBe(200);

    expect((await http(gw.baseUrl, 'GET', '/api/channel/', { auth: acct.systemToken })).status).toBe(403);
    const granted = await run(['account', 'set-admin', '--username', acct.username], env());
    expect([granted.code, granted.output]).toEqual([0, expect.stringContaining(`${acct.username} (id ${acct.id}) has the operator's role`)]);
    expect((await http(gw.baseUrl, 'GET', '/api/channel/', { auth: acct.systemToken })).status).toBe(200);
    const revoked = await run(['account', 'set-admin', '--username', acct.username, '--revoke'], env());
    expect(revoked.code).toBe(0);
    expect((await http(gw.baseUrl, 'GET', '/api/channel/', { auth: acct.systemToken })).status).toBe(403);
  });

  it('still takes --password P, with a warning on stderr', async () => {
    const username = `cli_a_${Date.now()}`;
    const p = runGateway(['account', 'create', '--username', username, '--password', 'on the command line'], env());
    let stderr = '';
    p.child.stderr!.on('data', (c) => (stderr += c.toString()));
    expect((await exitWithin(p, 30_000)).code).toBe(0);
    expect(stderr).toContain("warning: --password puts the password in your shell history, the process list and npm's debug log");
    expect(p.output()).toMatch(new RegExp(`^Created account ${username} `, 'm'));
  });

  (canRunOnTty() ? it : it.skip)('asks for the password on a terminal, twice, without echoing it', async () => {
    const username = `cli_t_${Date.now()}`;
    const p = runGateway(['account', 'create', '--username', username], env(), { tty: true });
    await p.waitFor(/Password: $/);
    p.child.stdin!.write('typed at a terminal\r');
    await p.waitFor(/Repeat password: $/);
    p.child.stdin!.write('typed at a terminal\r');
    expect((await exitWithin(p, 30_000)).code).toBe(0);
    expect(p.output()).toMatch(new RegExp(`Created account ${username} `));
    expect(p.output()).not.toContain('typed at a terminal');
    expect(tokenOf(p.output().replace(/\r/g, ''))).toMatch(/^[A-Za-z0-9]{32}$/);
  });
});

describe('gateway keys: the system token', () => {
  afterAll(removeTempDataDirs);
  let gw: TestGateway;
  let token: string;
  beforeAll(async () => {
    gw = await startGateway();
    token = (await newAccount(gw.db)).systemToken;
  });
  afterAll(async () => {
    await gw.close();
  });

  // Batch 999999999 does not exist: HTTP 404 proves the token was accepted (a bad one gets 401).
  const status = (env: Record<string, string>, args: string[] = [], opts: RunOptions = {}) =>
    run(['keys', 'batch-status', '999999999', ...args], { GATEWAY_URL: gw.baseUrl, ...env }, opts);

  it('comes from GATEWAY_SYSTEM_TOKEN, --token-file, --token-file - or piped standard input, silently', async () => {
    const file = path.join(tempDataDir(), 'token');
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    for (const r of [
      await status({ GATEWAY_SYSTEM_TOKEN: token }),
      await status({}, ['--token-file', file]),
      await status({}, ['--token-file', '-'], { stdin: `${token}\n` }),
      await status({}, [], { stdin: `${token}\n` }),
    ]) {
      expect(r.output).toContain('HTTP 404');
      expect(r.output).not.toContain('warning');
    }
    const bad = await status({ GATEWAY_SYSTEM_TOKEN: 'not-a-token' });
    expect(bad.output).toContain('HTTP 401');
  });

  it('--token T still works, with a warning on stderr; none at all fails, naming the safe ways', async () => {
    const p = runGateway(['keys', 'batch-status', '999999999', '--token', token], { GATEWAY_URL: gw.baseUrl });
    let stderr = '';
    p.child.stderr!.on('data', (c) => (stderr += c.toString()));
    await exitWithin(p, 30_000);
    expect(stderr).toContain("warning: --token puts the system token in your shell history, the process list and npm's debug log");
    expect(p.output()).toContain('HTTP 404');

    const none = await status({});
    expect(none.code).toBe(1);
    expect(none.output).toContain('a system token is needed: set GATEWAY_SYSTEM_TOKEN, pass --token-file FILE');
  });
});
