import { http } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';
import { billingOf, pollUntil, startVideoFixture, type VideoFixture } from '../helpers/video-fixture';
import { videoWorkflowId } from '../../src/temporal/video-starter';

/**
 * A video task's wait runs parked in the worker process (src/temporal/parked-activities.ts): the activity
 * completes asynchronously, so the SDK holds nothing for it while it waits; heartbeats, the result and a shutdown
 * go through the Temporal client.
 */
describe('video tasks: the wait runs parked, outside the SDK', () => {
  let fx: VideoFixture;
  beforeAll(async () => {
    fx = await startVideoFixture({ generationMs: 3000 });
  });
  afterAll(async () => {
    await fx?.close();
  });

  const parked = () => fx.gw.services.activities.video.parkedActivities!;

  async function until(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it('while it waits the SDK runs no activity for it; it completes, billed once, no activity failure counted', async () => {
    const { key, record } = await newKey(fx.gw);
    const created = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'parked' } });
    expect(created.status).toBe(200);
    const id = created.body.id;
    await until('the wait to be parked', () => parked().size === 1);
    expect(fx.worker.getStatus().numInFlightActivities).toBe(0);

    await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'completed');
    await until('the parked run to end', () => parked().size === 0);
    expect(await billingOf(fx.gw, id, record.id)).toEqual({ ledger: [{ quota: 250_000, model: 'video-3.1', units: 1 }], holds: 0, used: 250_000 });
    // The asynchronous completion is not a failure of the activity.
    const failures = await fx.gw.deps.metrics.activityFailures.get();
    expect(failures.values.filter((v) => v.labels.activity === 'runVideoUpstream')).toEqual([]);
  });

  it('closing hands a waiting task back to Temporal at once: failed as "the worker shut down", retried, completed and billed once', async () => {
    const { key, record } = await newKey(fx.gw);
    const created = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'handed back' } });
    const id = created.body.id;
    await until('the wait to be parked', () => parked().size === 1);
    const closedAt = Date.now();
    await parked().close();
    expect(parked().size).toBe(0);

    // The retry runs in the SDK (a closed process parks nothing) well before the 60 s heartbeat timeout.
    await pollUntil(fx.gw, `/v1/videos/${id}`, key, (b) => b.status === 'completed', 30_000);
    expect(Date.now() - closedAt).toBeLessThan(30_000);
    const history = await fx.gw.temporal.workflow.getHandle(videoWorkflowId(id)).fetchHistory();
    // A retried attempt is recorded once, when it completes: its started event names the attempt and why the one
    // before it ended.
    const started = (history.events ?? []).map((e) => e.activityTaskStartedEventAttributes).filter((a) => a);
    expect(started.map((a) => [a!.attempt, a!.lastFailure?.message])).toEqual([[2, 'the worker shut down']]);
    expect(await billingOf(fx.gw, id, record.id)).toEqual({ ledger: [{ quota: 250_000, model: 'video-3.1', units: 1 }], holds: 0, used: 250_000 });
  });
});
