// Records the workflow histories committed in this directory, which test/integration/workflow-replay.test.ts
// replays against the current workflow code. Re-record after an intended change to a workflow:
//
//   npx tsx test/histories/record.ts
//
// Starts everything it needs and stops it again: a fresh database on 127.0.0.1:5432 (as the tests do;
// embedded PGlite without one), a Temporal dev server, a worker on the workflows of this checkout, and the
// batch service. Small batches with small chunks keep the files short. Histories hold ids and counts only:
// no key material ever enters a workflow history (test/integration/batch-history.test.ts).
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { createAccount } from '../../src/domain/accounts/accounts';
import { createRepositories } from '../../src/db/repositories';
import { batchWorkflowId } from '../../src/domain/keys/batch-plan';
import { createServices } from '../../src/runtime/services';
import { startDevServer } from '../../src/temporal/dev-server';
import { exportWorkflowHistory, parseHistoryFile, replayHistories } from '../../src/temporal/history';
import { createGatewayWorker } from '../../src/worker/worker';
import { pingWorkflow } from '../../src/workflows';
import { resolveTestDatabase } from '../helpers/test-database';

const DIR = __dirname;
const TASK_QUEUE = 'history-recorder';
/** Written into the histories instead of the default pid@hostname, which would differ on every machine. */
const IDENTITY = 'history-recorder';

const log = (line: string) => process.stdout.write(`[record] ${line}\n`);

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const database = await resolveTestDatabase();
  const closing: Array<() => Promise<unknown>> = [() => database.close()];
  try {
    await migrate(database.url);
    log(`database: ${database.kind}`);
    const temporal = await startDevServer({ log });
    closing.unshift(() => temporal.shutdown());
    log(`temporal dev server: ${temporal.address}`);

    const db = createPool(database.url, 5);
    closing.unshift(() => db.end());
    const connection = await Connection.connect({ address: temporal.address });
    closing.unshift(() => connection.close());
    const client = new Client({ connection, namespace: temporal.namespace, identity: IDENTITY });
    const services = await createServices({
      db,
      secret: 'history-recorder-secret-history-recorder-secret',
      temporal: { client, taskQueue: TASK_QUEUE },
      // Five keys a chunk, two chunks a run: twelve keys take three chunks and continue as new once.
      batches: { chunkSize: 5, continueAsNewAfterChunks: 2 },
    });
    closing.unshift(() => services.close());
    const deps = services.api;
    const { worker, connection: workerConnection } = await createGatewayWorker({
      address: temporal.address,
      namespace: temporal.namespace,
      taskQueue: TASK_QUEUE,
      deps: services.activities,
      workerOptions: { identity: IDENTITY },
    });
    const running = worker.run();
    closing.unshift(async () => {
      worker.shutdown();
      await running;
      await workerConnection.close();
    });

    const { account } = await createAccount(createRepositories(db), { username: 'auditor', password: 'history-recorder' });
    const keySettings = { name: 'audit', remain_quota: 1000, unlimited_quota: false, group: '', models: '', expired_time: -1 };

    /** Waits until the batch's workflow (its last run) has closed. */
    const closed = async (batchId: number): Promise<void> => {
      try {
        await client.workflow.getHandle(batchWorkflowId(batchId)).result();
      } catch (err) {
        if (!(err instanceof WorkflowFailedError)) throw err;
      }
      const batch = await deps.batches.get(account.id, batchId);
      log(`batch ${batchId} (${batch.kind}): ${batch.status}, created ${batch.created}, changed ${batch.changed}`);
    };
    const recorded: Array<{ name: string; workflowId: string }> = [];

    // An issue batch that continues as new (12 keys: 2 chunks, then 1 in the next run).
    const issue = (await deps.batches.issue(account.id, { count: 12, ...keySettings })).batch.id;
    await closed(issue);
    recorded.push({ name: 'issue-continue-as-new', workflowId: batchWorkflowId(issue) });

    // A rotation of it with a one-second grace timer that runs out: issuing, grace, then disabling the old
    // keys, across three runs.
    const rotate = (await deps.batches.rotate(account.id, issue, 1)).batch.id;
    await closed(rotate);
    recorded.push({ name: 'rotate-grace', workflowId: batchWorkflowId(rotate) });

    // A status batch over the replacements (disables them; continues as new as well).
    const status = (await deps.batches.setStatus(account.id, rotate, 2)).batch.id;
    await closed(status);
    recorded.push({ name: 'status', workflowId: batchWorkflowId(status) });

    // An issue batch cancelled mid-way: bigger chunks so one is likely in flight when the cancel lands.
    Object.assign(deps.batches.settings, { chunkSize: 50, continueAsNewAfterChunks: 100 });
    const cancelled = (await deps.batches.issue(account.id, { count: 5000, ...keySettings, name: 'cancelled' })).batch.id;
    for (let b = await deps.batches.get(account.id, cancelled); b.created < 50; b = await deps.batches.get(account.id, cancelled)) {
      if (b.status !== 'running') throw new Error(`batch ${cancelled} ended before it could be cancelled: ${b.status}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const afterCancel = await deps.batches.cancel(account.id, cancelled);
    if (afterCancel.status !== 'cancelled') throw new Error(`batch ${cancelled} is ${afterCancel.status} after the cancel`);
    await closed(cancelled);
    recorded.push({ name: 'issue-cancelled', workflowId: batchWorkflowId(cancelled) });

    // The smoke workflow.
    await client.workflow.execute(pingWorkflow, { taskQueue: TASK_QUEUE, workflowId: 'ping:history', args: ['auditor'] });
    recorded.push({ name: 'ping', workflowId: 'ping:history' });

    const texts = await Promise.all(recorded.map((r) => exportWorkflowHistory(client, r.workflowId, undefined, { allRuns: true })));
    // Never commit a history the code it was recorded with does not replay.
    const reports = await replayHistories(texts.map((t, i) => parseHistoryFile(t, recorded[i].name)));
    const bad = reports.filter((r) => !r.ok);
    if (bad.length > 0) throw new Error(`recorded histories do not replay:\n${bad.map((r) => `${r.workflowId} run ${r.run}: ${r.error}`).join('\n')}`);
    recorded.forEach((r, i) => {
      const file = path.join(DIR, `${r.name}.json`);
      writeFileSync(file, texts[i]);
      const runs = parseHistoryFile(texts[i]).runs;
      const events = runs.reduce((n, run) => n + run.history.events.length, 0);
      log(`${path.relative(process.cwd(), file)}: ${r.workflowId}, ${runs.length} run(s), ${events} events, ${texts[i].length} bytes`);
    });
  } finally {
    for (const close of closing) await close().catch((err) => log(`clean-up: ${(err as Error).message}`));
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
