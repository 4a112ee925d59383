import { Pool } from 'pg';
import type { VideoWorkflowStarter } from '../../src/domain/video/video-service';
import { http } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';
import { billingOf, pollUntil, startVideoFixture, type VideoFixture } from '../helpers/video-fixture';
import { waitFor } from '../helpers/wait';

/**
 * Issue 8: a submit is answered once its task and hold are committed; the workflow starts after (the outbox). While
 * Temporal refuses starts, tasks are accepted and wait; the reconciler starts them when it answers again, and each
 * is billed once. `raw` reads the rows without the harness's billing barrier.
 */
describe('video: submit first, start after (outbox)', () => {
  let fx: VideoFixture;
  let raw: Pool;
  let refusing = true;
  const attempts: string[] = [];

  beforeAll(async () => {
    fx = await startVideoFixture({
      outbox: { reconcileMs: 200, graceMs: 300 },
      videoStarter: (real): VideoWorkflowStarter => ({
        taskQueue: real.taskQueue,
        async start(input) {
          attempts.push(input.taskId);
          if (refusing) throw new Error('temporal: connection refused');
          await real.start(input);
        },
        cancel: (id) => real.cancel(id),
      }),
    });
    raw = new Pool({ connectionString: fx.gw.databaseUrl, max: 2 });
  });
  afterAll(async () => {
    await raw.end();
    await fx.close();
  });

  it('a task submitted while starts fail is accepted, waits, and runs once the reconciler can start it', async () => {
    const { key, record } = await newKey(fx.gw);
    const created = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'outbox' } });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    expect(created.body.status).toBe('queued');

    // Held and recorded, not started: the reconciler keeps trying.
    await waitFor(() => attempts.filter((t) => t === id).length >= 2, { message: 'the reconciler to retry the start' });
    const row = await raw.query('SELECT workflow_started_at, task_queue FROM video_tasks WHERE id = $1', [id]);
    expect(row.rows[0].workflow_started_at).toBeNull();
    expect(row.rows[0].task_queue).toBe(fx.gw.taskQueue);
    expect((await billingOf(fx.gw, id, record.id)).holds).toBe(1);

    refusing = false;
    const done = await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'completed');
    expect(done.progress).toBe(100);
    const started = await raw.query('SELECT workflow_started_at FROM video_tasks WHERE id = $1', [id]);
    expect(started.rows[0].workflow_started_at).not.toBeNull();
    const billing = await billingOf(fx.gw, id, record.id);
    expect(billing.ledger).toHaveLength(1);
    expect(billing.holds).toBe(0);
    expect(billing.used).toBe(billing.ledger[0].quota);
  });

  it('cancelling a task whose workflow has not started yet starts it to deliver the cancel; nothing is billed', async () => {
    refusing = false;
    const { key, record } = await newKey(fx.gw);
    // Started in the background right after the answer; the cancel may arrive before or after that start.
    const created = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'cancel me' } });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    const cancelled = await http(fx.gw.baseUrl, 'DELETE', `/v1/videos/${id}`, { auth: key });
    expect(cancelled.status).toBe(200);
    await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'failed');
    const billing = await billingOf(fx.gw, id, record.id);
    expect(billing.ledger).toHaveLength(0);
    expect(billing.holds).toBe(0);
    expect(billing.used).toBe(0);
  });
});
