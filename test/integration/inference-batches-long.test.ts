import { toFile } from 'openai';
import { batchHistory } from '../helpers/batch-histories';
import { startGateway, startWorker, type TestGateway } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';
import { parseHistoryFile } from '../../src/temporal/history';

/**
 * A batch that runs long is many runs of lines; past a few hundred events its workflow continues as new, so no run's
 * history grows with the batch (here: runs of 20 ms against an upstream answering in 25 ms).
 */
describe('a long batch continues as new', () => {
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  beforeAll(async () => {
    gw = await startGateway({ simulator: { latencyMs: 25 }, inferenceBatches: { runMs: 20, concurrency: 2 } });
    worker = await startWorker(gw);
  });
  afterAll(async () => {
    await worker?.stop();
    await gw?.close();
  });

  it('every line once, every run small', async () => {
    const { client } = await newKey(gw);
    const lines = Array.from({ length: 160 }, (_, i) =>
      JSON.stringify({ custom_id: `x${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `long ${i}` }] } }),
    );
    const file = await client.files.create({ file: await toFile(Buffer.from(lines.join('\n')), 'long.jsonl'), purpose: 'batch' });
    let b = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    for (let i = 0; i < 1200 && b.status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      b = await client.batches.retrieve(b.id);
    }
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 160, completed: 160, failed: 0 } });
    await gw.temporal.workflow.getHandle(`batch:${b.id}`).result();
    const history = parseHistoryFile(await batchHistory(gw.temporal, b.id, 'batch-continued'));
    expect(history.runs.length).toBeGreaterThanOrEqual(2);
    for (const run of history.runs) expect(run.history.events.length).toBeLessThan(500);
    const ledger = await gw.db.query('SELECT count(*)::int AS n FROM ledger WHERE request_id LIKE $1', [`${b.id}:%`]);
    expect(ledger.rows[0].n).toBe(160);
  }, 180_000);
});
