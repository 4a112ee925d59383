import { Client, Connection } from '@temporalio/client';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pingWorkflow } from '../../src/workflows';
import { http } from '../helpers/harness';
import { exitWithin, GatewayProcess, listening, removeTempDataDirs, runGateway, tempDataDir } from './runtime-process';

/** What `gateway start` prints once it is ready. */
/** A fresh start through tsx takes about 15 s on an idle 2-core machine; the whole suite running beside it doubles that. */
const START_TIMEOUT_MS = 90_000;

async function readBanner(p: GatewayProcess) {
  await p.waitFor(/Press Ctrl-C/, START_TIMEOUT_MS);
  const field = (label: string) => p.output().match(new RegExp(`^  ${label}:\\s+(.+)$`, 'm'))?.[1] ?? '';
  return {
    baseUrl: field('Base URL'),
    temporalAddress: field('Temporal').split(' ')[0],
    account: field('Account'),
    systemToken: field('System token'),
    apiKey: field('API key'),
    upstreams: field('Upstreams'),
  };
}

async function stop(p: GatewayProcess, banner: { baseUrl: string; temporalAddress: string }) {
  p.child.kill('SIGTERM');
  const status = await exitWithin(p, 20_000);
  expect(status).toEqual({ code: 0, signal: null });
  expect(p.output()).toContain('Stopped.');
  // Everything it started is gone: the HTTP listener and the Temporal dev server child.
  expect(await listening(new URL(banner.baseUrl).host)).toBe(false);
  expect(await listening(banner.temporalAddress)).toBe(false);
}

/**
 * Reads the stopped gateway's PGlite directory in a separate node process: PGlite's WebAssembly loader needs
 * dynamic import, which jest's module sandbox does not offer.
 */
function countRows(dataDir: string): { accounts: number; admins: number; keys: number } {
  const script = `
    const { PGlite } = require('@electric-sql/pglite');
    (async () => {
      const db = await PGlite.create(process.argv[1]);
      const n = async (sql) => (await db.query(sql)).rows[0].n;
      const out = {
        accounts: await n('SELECT count(*)::int AS n FROM accounts'),
        admins: await n("SELECT count(*)::int AS n FROM accounts WHERE username = 'admin'"),
        keys: await n('SELECT count(*)::int AS n FROM tokens'),
      };
      await db.close();
      process.stdout.write(JSON.stringify(out));
    })();`;
  const out = execFileSync(process.execPath, ['-e', script, path.join(dataDir, 'pg')], { cwd: path.resolve(__dirname, '../..') });
  return JSON.parse(out.toString());
}

describe('gateway start (embedded PGlite + Temporal dev server, api + worker in one process)', () => {
  afterAll(removeTempDataDirs);

  it('starts ready with a bootstrap account, stops cleanly, and restarts on the same data without a second account', async () => {
    const dataDir = tempDataDir();
    const env = { DATA_DIR: dataDir, PORT: '0' };

    const first = runGateway(['start'], env);
    const b1 = await readBanner(first);
    expect(b1.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(b1.account).toBe('admin (created now)');
    expect(b1.systemToken).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(b1.apiKey).toMatch(/^sk-[A-Za-z0-9]{48}$/);
    // Without GATEWAY_CONFIG the built-in upstream simulator serves, in this process.
    const simulatorUrl = b1.upstreams.match(/^built-in upstream simulator at (http:\/\/127\.0\.0\.1:\d+)$/)?.[1];
    expect(simulatorUrl).toBeDefined();
    expect((await fetch(`${simulatorUrl}/v1/models`)).status).toBe(200);

    expect((await http(b1.baseUrl, 'GET', '/readyz')).body).toEqual({ status: 'ready', checks: { database: 'ok', temporal: 'ok' } });
    const keys = await http(b1.baseUrl, 'GET', '/api/token/', { auth: b1.systemToken });
    expect(keys.status).toBe(200);
    expect(keys.body.data).toHaveLength(1);
    expect(keys.body.data[0]).toMatchObject({ name: 'bootstrap', unlimited_quota: true, status: 1 });
    expect(`sk-${keys.body.data[0].key}`).toBe(b1.apiKey);
    const models = await http(b1.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${b1.apiKey}` });
    expect(models.status).toBe(200);
    expect(models.body.data.length).toBeGreaterThan(0);

    const secretFile = path.join(dataDir, 'gateway-secret');
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    expect(existsSync(path.join(dataDir, 'gateway.pid'))).toBe(true);

    // The in-process worker runs workflows on the dev server.
    const workflowId = `runtime-ping-${Date.now()}`;
    const connection = await Connection.connect({ address: b1.temporalAddress });
    try {
      const result = await new Client({ connection }).workflow.execute(pingWorkflow, {
        taskQueue: 'gateway',
        workflowId,
        args: ['runtime'],
      });
      expect(result.greeting).toBe('pong runtime');
    } finally {
      await connection.close();
    }

    // A second process may not open the same DATA_DIR while the first holds it.
    const intruder = runGateway(['migrate'], env);
    expect((await exitWithin(intruder, 20_000)).code).toBe(1);
    expect(intruder.output()).toContain('in use by another gateway process');

    await stop(first, b1);
    expect(await listening(new URL(simulatorUrl!).host)).toBe(false);
    expect(existsSync(path.join(dataDir, 'gateway.pid'))).toBe(false);

    const second = runGateway(['start'], env);
    const b2 = await readBanner(second);
    expect(b2.account).toBe('admin (created at first start)');
    expect(b2.systemToken).toMatch(/printed at first start/);
    expect(b2.apiKey).toMatch(/printed at first start/);
    // Same token, same key (read back with the secret kept in DATA_DIR), same Temporal history.
    const again = await http(b2.baseUrl, 'GET', '/api/token/', { auth: b1.systemToken });
    expect(again.status).toBe(200);
    expect(again.body.data.map((k: { key: string }) => `sk-${k.key}`)).toEqual([b1.apiKey]);
    expect((await http(b2.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${b1.apiKey}` })).status).toBe(200);
    const connection2 = await Connection.connect({ address: b2.temporalAddress });
    try {
      const described = await new Client({ connection: connection2 }).workflow.getHandle(workflowId).describe();
      expect(described.status.name).toBe('COMPLETED');
    } finally {
      await connection2.close();
    }
    await stop(second, b2);

    expect(countRows(dataDir)).toEqual({ accounts: 1, admins: 1, keys: 1 });
  }, 4 * START_TIMEOUT_MS);

  it('makes GATEWAY_BOOTSTRAP_TOKEN the bootstrap system token, at first start and when it changes', async () => {
    const dataDir = tempDataDir();
    const tokenA = 'bootstrap-token-a-0123456789';
    const tokenB = 'bootstrap-token-b-0123456789';

    const first = runGateway(['start'], { DATA_DIR: dataDir, PORT: '0', GATEWAY_BOOTSTRAP_TOKEN: tokenA });
    const b1 = await readBanner(first);
    expect(b1.account).toBe('admin (created now)');
    expect(b1.systemToken).toBe('the value of GATEWAY_BOOTSTRAP_TOKEN');
    expect(first.output()).not.toContain(tokenA);
    expect(b1.apiKey).toMatch(/^sk-/);
    expect((await http(b1.baseUrl, 'GET', '/api/token/', { auth: tokenA })).status).toBe(200);
    await stop(first, b1);

    // This start serves a GATEWAY_CONFIG file, reloaded on SIGHUP.
    const configFile = path.join(dataDir, 'gateway.yaml');
    const writeConfig = (models: string) =>
      writeFileSync(
        configFile,
        `channels:\n  - {name: up, type: openai, base_url: 'https://upstream.invalid', key: '\${UP_KEY}', models: [${models}]}\n` +
          `models:\n  m-1: {input_per_1m: 1}\n  m-2: {per_unit: 0.5, owned_by: m-owner}\n`,
      );
    writeConfig('m-1');
    const upKey = 'upstream-secret-value-42';
    const second = runGateway(['start'], { DATA_DIR: dataDir, PORT: '0', GATEWAY_BOOTSTRAP_TOKEN: tokenB, GATEWAY_CONFIG: configFile, UP_KEY: upKey });
    const b2 = await readBanner(second);
    expect(b2.upstreams).toBe(`GATEWAY_CONFIG ${configFile}`);
    const modelIds = async () =>
      (await http(b2.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${b1.apiKey}` })).body.data.map((m: { id: string }) => m.id);
    expect(await modelIds()).toEqual(['m-1']);
    writeConfig('m-1, m-2');
    // To the pid the gateway writes to DATA_DIR/gateway.pid, the one its banner names.
    const gatewayPid = Number(readFileSync(path.join(dataDir, 'gateway.pid'), 'utf8').trim());
    expect(second.output()).toContain(`kill -HUP ${gatewayPid}`);
    process.kill(gatewayPid, 'SIGHUP');
    await second.waitFor(/gateway config reloaded from .*: 1 channels, 2 priced models/);
    expect(await modelIds()).toEqual(['m-1', 'm-2']);
    writeFileSync(configFile, 'channels: [{name: up, type: nope}]\n');
    process.kill(gatewayPid, 'SIGHUP');
    await second.waitFor(/gateway config reload failed, keeping the previous config/);
    expect(await modelIds()).toEqual(['m-1', 'm-2']);
    expect(second.output()).not.toContain(upKey);
    expect(b2.account).toBe('admin (created at first start)');
    expect(b2.systemToken).toBe('the value of GATEWAY_BOOTSTRAP_TOKEN (set now)');
    expect((await http(b2.baseUrl, 'GET', '/api/token/', { auth: tokenB })).status).toBe(200);
    expect((await http(b2.baseUrl, 'GET', '/api/token/', { auth: tokenA })).status).toBe(401);
    await stop(second, b2);

    expect(countRows(dataDir)).toEqual({ accounts: 1, admins: 1, keys: 1 });
  }, 4 * START_TIMEOUT_MS);

  it('refuses bad configuration with one clear line per problem and no stack trace', async () => {
    const bad = runGateway(['start'], { DATA_DIR: tempDataDir(), PORT: 'eighty', LOG_LEVEL: 'loud', DATABASE_URL: 'mysql://x' });
    expect((await exitWithin(bad, 20_000)).code).toBe(1);
    const out = bad.output();
    expect(out).toContain('Invalid configuration:');
    expect(out).toContain('  - PORT: must be a number');
    expect(out).toContain('  - LOG_LEVEL: must be one of');
    expect(out).toContain('  - DATABASE_URL: must be a postgres:// or postgresql:// URL');
    expect(out).not.toMatch(/^\s+at /m);

    const api = runGateway(['api'], { DATA_DIR: tempDataDir() });
    expect((await exitWithin(api, 20_000)).code).toBe(1);
    for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'GATEWAY_SECRET']) {
      expect(api.output()).toContain(`  - ${name}: required by \`gateway api\``);
    }
    expect(api.output()).not.toMatch(/^\s+at /m);

    // A bad GATEWAY_CONFIG stops the start with every problem, before the database or Temporal start.
    const dir = tempDataDir();
    const file = path.join(dir, 'bad.yaml');
    writeFileSync(file, 'channels:\n  - {name: a, type: openai, base_url: ftp://x, models: [m]}\nmodels: {m: {input_per_1M: 1}}\n');
    const badConfig = runGateway(['start'], { DATA_DIR: dir, PORT: '0', GATEWAY_CONFIG: file });
    expect((await exitWithin(badConfig, 20_000)).code).toBe(1);
    expect(badConfig.output()).toContain('channels[0].base_url: must be an http:// or https:// URL');
    expect(badConfig.output()).toMatch(/input_per_1M/);
    expect(badConfig.output()).not.toMatch(/^\s+at /m);
    expect(existsSync(path.join(dir, 'pg'))).toBe(false);
  });
});
