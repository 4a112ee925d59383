import { Readable } from 'node:stream';
import { toFile } from 'openai';
import type { ObjectStore } from '../../src/domain/ports/object-store';
import { startGateway, startWorker, type TestGateway } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';
import { waitFor } from '../helpers/wait';

/**
 * A workflow whose activity meets a fault no retry can fix ends at once in a state its user can read, with the
 * reason: the worker makes such faults non-retryable (src/worker/permanent-faults.ts) and the batch workflow records
 * the failure. A fault that passes is retried as before.
 */
describe('workflow faults: permanent ones end the work with a reason, passing ones are retried', () => {
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  /** What the next reads of an input file do: fail permanently, fail once as a network fault would, or read. */
  let reads: Array<'permanent' | 'passing'> = [];
  let readCount = 0;

  beforeAll(async () => {
    gw = await startGateway();
    const real = gw.services.activities.inferenceBatches!;
    const store: ObjectStore = {
      ...real.store,
      description: real.store.description,
      async get(key, range) {
        readCount++;
        const fault = reads.shift();
        if (fault === 'permanent') {
          // What a line nested beyond the stack's reach did before lines were bounded.
          return new Readable({ read() { this.destroy(new RangeError('Maximum call stack size exceeded')); } });
        }
        if (fault === 'passing') throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
        return real.store.get(key, range);
      },
    };
    worker = await startWorker({ taskQueue: gw.taskQueue, services: { ...gw.services, activities: { ...gw.services.activities, inferenceBatches: { ...real, store } } } });
  });
  afterAll(async () => {
    await worker?.stop();
    await gw?.close();
  });

  const input = () => toFile(Buffer.from(`${JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } })}\n`), 'in.jsonl');

  it('a permanent fault while validating: failed after one attempt, errors.data names the reason', async () => {
    const { client } = await newKey(gw);
    const file = await client.files.create({ file: await input(), purpose: 'batch' });
    reads = ['permanent'];
    readCount = 0;
    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const b = await waitFor(async () => {
      const r = await client.batches.retrieve(created.id);
      return r.status === 'failed' ? r : null;
    }, { timeoutMs: 20_000 });
    expect(b.errors?.data).toEqual([expect.objectContaining({ code: 'batch_failed', message: expect.stringContaining('Maximum call stack size exceeded') })]);
    expect(readCount).toBe(1);
  });

  it('a passing fault is retried and the batch completes', async () => {
    const { client } = await newKey(gw);
    const file = await client.files.create({ file: await input(), purpose: 'batch' });
    reads = ['passing'];
    readCount = 0;
    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const b = await waitFor(async () => {
      const r = await client.batches.retrieve(created.id);
      return ['completed', 'failed'].includes(r.status) ? r : null;
    }, { timeoutMs: 30_000 });
    expect(b.status).toBe('completed');
    expect(readCount).toBe(2);
  });
});
