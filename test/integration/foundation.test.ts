// test modes: postgres, embedded
import { pingWorkflow } from '../../src/workflows';
import { http, startGateway, startWorker, TestGateway } from '../helpers/harness';

describe('foundation', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  it('runs a workflow end to end on the real Temporal dev server, reaching Postgres from an activity', async () => {
    const worker = await startWorker(gw);
    try {
      const result = await gw.temporal.workflow.execute(pingWorkflow, {
        taskQueue: gw.taskQueue,
        workflowId: `ping-${Date.now()}`,
        args: ['ci'],
      });
      expect(result.greeting).toBe('pong ci');
      expect(Date.parse(result.databaseTime)).not.toBeNaN();
    } finally {
      await worker.stop();
    }
  });

  it('answers /healthz and /readyz with x-request-id', async () => {
    const health = await http(gw.baseUrl, 'GET', '/healthz');
    expect(health.status).toBe(200);
    expect(health.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    const ready = await http(gw.baseUrl, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready', checks: { database: 'ok', temporal: 'ok' } });
  });

  it('gives unknown routes a 404 in the family format, with x-request-id', async () => {
    const mgmt = await http(gw.baseUrl, 'GET', '/api/nope');
    expect(mgmt.status).toBe(404);
    expect(mgmt.body).toEqual({ success: false, message: expect.stringContaining('/api/nope') });
    expect(mgmt.headers.get('x-request-id')).toBeTruthy();
    const inference = await http(gw.baseUrl, 'GET', '/v1/nope');
    expect(inference.status).toBe(404);
    expect(inference.body.error).toEqual({ message: expect.any(String), type: 'invalid_request_error', param: null, code: 'not_found' });
    expect(inference.headers.get('x-request-id')).toBeTruthy();
  });
});
