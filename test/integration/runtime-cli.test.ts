import { readdirSync } from 'node:fs';
import path from 'node:path';
import { http, startGateway, testEnv, TestGateway } from '../helpers/harness';
import { exitWithin, removeTempDataDirs, runGateway, tempDataDir } from './runtime-process';

const MIGRATIONS = readdirSync(path.resolve(__dirname, '../../src/db/migrations')).filter((f) => f.endsWith('.sql')).sort();

async function run(args: string[], env: Record<string, string>) {
  const p = runGateway(args, env);
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
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  it('creates an account and prints a system token that works on /api/*', async () => {
    const username = `cli_${Date.now()}`;
    const env = { DATABASE_URL: testEnv().databaseUrl };
    const created = await run(['account', 'create', '--username', username, '--password', 'correct horse battery'], env);
    expect(created.code).toBe(0);
    expect(created.output).toMatch(new RegExp(`^Created account ${username} \\(id \\d+\\)$`, 'm'));
    const token = created.output.match(/^System token: (\S+)$/m)?.[1] ?? '';
    expect(token).toMatch(/^[A-Za-z0-9]{32}$/);
    const keys = await http(gw.baseUrl, 'GET', '/api/token/', { auth: token });
    expect(keys.status).toBe(200);
    expect(keys.body).toMatchObject({ success: true, data: [] });

    const rotated = await run(['account', 'rotate-token', '--username', username, '--password', 'correct horse battery'], env);
    expect(rotated.code).toBe(0);
    const newToken = rotated.output.match(/^System token: (\S+)$/m)?.[1] ?? '';
    expect(newToken).toMatch(/^[A-Za-z0-9]{32}$/);
    expect((await http(gw.baseUrl, 'GET', '/api/token/', { auth: newToken })).status).toBe(200);
    expect((await http(gw.baseUrl, 'GET', '/api/token/', { auth: token })).status).toBe(401);

    const duplicate = await run(['account', 'create', '--username', username, '--password', 'another password'], env);
    expect(duplicate.code).toBe(1);
    expect(duplicate.output).toContain(`username ${username} is taken`);
    expect(duplicate.output).not.toMatch(/^\s+at /m);
  });
});
