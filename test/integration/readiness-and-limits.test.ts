// test modes: postgres, embedded
import { Client, Connection } from '@temporalio/client';
import { buildApp } from '../../src/api/app';
import { formatError } from '../../src/schemas/error-families';
import { toWireError } from '../../src/schemas/wire-error';
import { createPool } from '../../src/db/pool';
import { freePort } from '../../src/net';
import { createServices } from '../../src/runtime/services';
import { http, LogCapture, newAccount, startGateway, TEST_SECRET, testEnv } from '../helpers/harness';
import { openTestPool } from '../helpers/test-database';

describe('/readyz names what is down', () => {
  async function gatewayWith(opts: { databaseUrl?: string; temporalAddress: string }) {
    const database = opts.databaseUrl
      ? (() => {
          const pool = createPool(opts.databaseUrl, 2);
          return { pool, close: () => pool.end() };
        })()
      : await openTestPool(2);
    const db = database.pool;
    // A lazy connection does not dial until first used, so an unreachable Temporal does not stop start-up.
    const connection = Connection.lazy({ address: opts.temporalAddress, connectTimeout: 500 });
    const services = await createServices({ db, secret: TEST_SECRET, temporal: { client: new Client({ connection }), taskQueue: 'readyz' } });
    const app = await buildApp(services.api, { logStream: new LogCapture() });
    const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
    return {
      baseUrl,
      close: async () => {
        await app.close();
        await services.close();
        await connection.close().catch(() => undefined);
        await database.close();
      },
    };
  }

  it('answers 503 naming Temporal when only Temporal is unreachable', async () => {
    const gw = await gatewayWith({ temporalAddress: `127.0.0.1:${await freePort()}` });
    try {
      const res = await http(gw.baseUrl, 'GET', '/readyz');
      expect(res.status).toBe(503);
      expect(res.headers.get('x-request-id')).toBeTruthy();
      expect(res.body.status).toBe('unavailable');
      expect(res.body.checks.database).toBe('ok');
      expect(res.body.checks.temporal).toMatch(/^down: /);
      // Liveness is not readiness: the process itself is up.
      expect((await http(gw.baseUrl, 'GET', '/healthz')).status).toBe(200);
    } finally {
      await gw.close();
    }
  });

  it('answers 503 naming the database when only the database is unreachable', async () => {
    const gw = await gatewayWith({
      databaseUrl: `postgres://postgres@127.0.0.1:${await freePort()}/none`,
      temporalAddress: testEnv().temporalAddress,
    });
    try {
      const res = await http(gw.baseUrl, 'GET', '/readyz');
      expect(res.status).toBe(503);
      expect(res.body.checks.database).toMatch(/^down: /);
      expect(res.body.checks.temporal).toBe('ok');
    } finally {
      await gw.close();
    }
  });
});

describe('request body limits', () => {
  it('answers an oversize management body with 413 in the management envelope, writing nothing', async () => {
    const gw = await startGateway({ bodyLimitBytes: 1024 });
    try {
      const acct = await newAccount(gw.db);
      const res = await http(gw.baseUrl, 'POST', '/api/token/', {
        auth: acct.systemToken,
        body: { name: 'big', models: 'x'.repeat(4096) },
      });
      expect(res.status).toBe(413);
      expect(res.body).toEqual({ success: false, message: expect.stringMatching(/too large/) });
      expect(res.headers.get('x-request-id')).toBeTruthy();
      const keys = await gw.db.query('SELECT 1 FROM tokens WHERE user_id = $1', [acct.id]);
      expect(keys.rowCount).toBe(0);
    } finally {
      await gw.close();
    }
  });

  it('formats the same failure for inference routes in the OpenAI error format', () => {
    const wire = toWireError(Object.assign(new Error('Request body is too large'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 }));
    expect(wire.status).toBe(413);
    expect(formatError('openai', wire)).toEqual({
      error: { message: 'The request body is too large', type: 'invalid_request_error', param: null, code: 'payload_too_large' },
    });
  });
});
