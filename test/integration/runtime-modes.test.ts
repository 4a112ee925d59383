import { existsSync, readdirSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { http, TEST_SECRET, testEnv } from '../helpers/harness';
import { exitWithin, removeTempDataDirs, runGateway, tempDataDir, SHARED_DATABASE_BOOTSTRAP_TOKEN } from './runtime-process';

afterAll(() => removeTempDataDirs());

describe('`gateway start` against a real database and Temporal', () => {
  it('embeds nothing when DATABASE_URL and TEMPORAL_ADDRESS are set, honours GATEWAY_BODY_LIMIT_BYTES, and stops on SIGINT', async () => {
    const env = testEnv();
    const dataDir = `${tempDataDir()}/unused`;
    const token = SHARED_DATABASE_BOOTSTRAP_TOKEN;
    const p = runGateway(['start'], {
      DATABASE_URL: env.databaseUrl,
      TEMPORAL_ADDRESS: env.temporalAddress,
      TEMPORAL_NAMESPACE: env.temporalNamespace,
      TEMPORAL_TASK_QUEUE: `modes-${randomUUID()}`,
      GATEWAY_SECRET: TEST_SECRET,
      GATEWAY_BOOTSTRAP_TOKEN: token,
      GATEWAY_BODY_LIMIT_BYTES: '2048',
      DATA_DIR: dataDir,
      PORT: '0',
    });
    const baseUrl = (await p.waitFor(/^ {2}Base URL:\s+(\S+)$/m))[1];
    await p.waitFor(/Press Ctrl-C/);
    expect(p.output()).toMatch(/^AI gateway is ready \(api \+ worker\)$/m);
    expect(p.output()).not.toMatch(/embedded/);
    // Nothing embedded means nothing written under DATA_DIR: no PGlite, no SQLite, no generated secret.
    expect(existsSync(dataDir) ? readdirSync(dataDir) : []).toEqual([]);

    const big = await http(baseUrl, 'POST', '/api/token/', { auth: token, body: { name: 'x'.repeat(4096) } });
    expect(big.status).toBe(413);
    expect(big.body).toEqual({ success: false, message: 'The request body is too large' });

    p.child.kill('SIGINT');
    expect(await exitWithin(p, 20_000)).toEqual({ code: 0, signal: null });
    expect(p.output()).toMatch(/Stopping \(SIGINT\)[\s\S]*Stopped\./);
  });

  it('refuses to start against a real database without GATEWAY_SECRET, naming it', async () => {
    const p = runGateway(['start'], { DATABASE_URL: testEnv().databaseUrl, DATA_DIR: tempDataDir() });
    expect(await exitWithin(p, 20_000)).toEqual({ code: 1, signal: null });
    expect(p.output()).toContain('GATEWAY_SECRET: required when DATABASE_URL is set');
    expect(p.output()).not.toMatch(/^\s+at /m);
  });
});
