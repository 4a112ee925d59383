// A gateway worker as its own process, so a test can SIGKILL it. Run with `node --import tsx` (not the tsx
// binary, which would put a supervisor process in between). Configured by environment:
// GATEWAY_TEST_DATABASE_URL, GATEWAY_TEST_TEMPORAL_ADDRESS, GATEWAY_TEST_TEMPORAL_NAMESPACE,
// GATEWAY_TEST_WORKFLOW_BUNDLE, WORKER_TASK_QUEUE, WORKER_SECRET, WORKER_APP_NAME, WORKER_STORE_DIR, BATCH_CONCURRENCY
// (the last three optional).
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createPool } from '../../src/db/pool';
import { createServices } from '../../src/runtime/services';
import { ConfigStore } from '../../src/gateway-config/store';
import { createParkedActivities } from '../../src/temporal/parked-activities';
import { createGatewayWorker } from '../../src/worker/worker';
import { createLocalObjectStore } from '../../src/stores/local-store';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const env = (name: string) => {
    const v = process.env[name];
    if (!v) throw new Error(`${name} is unset`);
    return v;
  };
  // application_name lets a test find this process's connections in pg_stat_activity.
  const url = new URL(env('GATEWAY_TEST_DATABASE_URL'));
  url.searchParams.set('application_name', process.env.WORKER_APP_NAME ?? 'gateway-test-worker');
  const db = createPool(url.toString(), 5);
  // Issuance changes no key's status, so the in-process bus (the default) is enough here.
  // A test's own gateway config (its upstream simulators), e.g. the video chaos test; else the built-in one.
  const configFile = process.env.WORKER_GATEWAY_CONFIG;
  const services = await createServices({
    db,
    secret: env('WORKER_SECRET'),
    gatewayConfig: configFile ? ConfigStore.fromFile(configFile, process.env) : undefined,
    inferenceBatches: { concurrency: Number(process.env.BATCH_CONCURRENCY ?? 64) },
    // The object store the test's gateway uses too (batch input files, video copies); else one of its own.
    videoStore: process.env.WORKER_STORE_DIR ? createLocalObjectStore(process.env.WORKER_STORE_DIR) : undefined,
  });
  // As `gateway worker` does: video waits run parked, completed through a client of this process.
  const clientConnection = await Connection.connect({ address: env('GATEWAY_TEST_TEMPORAL_ADDRESS') });
  const parkedActivities = createParkedActivities(new Client({ connection: clientConnection, namespace: env('GATEWAY_TEST_TEMPORAL_NAMESPACE') }).activity);
  const { worker } = await createGatewayWorker({
    address: env('GATEWAY_TEST_TEMPORAL_ADDRESS'),
    namespace: env('GATEWAY_TEST_TEMPORAL_NAMESPACE'),
    taskQueue: env('WORKER_TASK_QUEUE'),
    deps: { ...services.activities, video: { ...services.activities.video, parkedActivities } },
    workflowBundle: { codePath: env('GATEWAY_TEST_WORKFLOW_BUNDLE') },
    // A killed worker's sticky queue is given up on after 1 s instead of 10 s, so its workflows move on sooner.
    workerOptions: { stickyQueueScheduleToStartTimeout: '1 second' },
  });
  const running = worker.run();
  process.stdout.write('worker ready\n');
  await running;
  await parkedActivities.close();
  await services.close();
  await clientConnection.close();
  await db.end();
}

main().catch((err) => {
  process.stderr.write(`worker-main: ${err?.stack ?? err}\n`);
  process.exit(1);
});
