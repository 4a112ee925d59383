import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrate } from '../../src/db/migrate';
import { startDevServer } from '../../src/temporal/dev-server';
import { bundleGatewayWorkflows } from '../../src/worker/workflow-bundle';
import { resolveTestDatabase } from './test-database';

/** One database and one Temporal dev server for the whole run; test files isolate by account. */
export default async function globalSetup(): Promise<void> {
  const database = await resolveTestDatabase();
  await migrate(database.url);
  process.stdout.write(`\n[test] database: ${database.kind}\n`);

  const temporal = await startDevServer({ log: (l) => process.stdout.write(`[test] ${l}\n`) });
  process.stdout.write(`[test] temporal dev server: ${temporal.address}\n`);

  const { code } = await bundleGatewayWorkflows();
  const bundlePath = path.join(mkdtempSync(path.join(os.tmpdir(), 'gateway-wf-')), 'workflows.js');
  writeFileSync(bundlePath, code);

  process.env.GATEWAY_TEST_DATABASE_URL = database.url;
  process.env.GATEWAY_TEST_TEMPORAL_ADDRESS = temporal.address;
  process.env.GATEWAY_TEST_TEMPORAL_NAMESPACE = temporal.namespace;
  process.env.GATEWAY_TEST_WORKFLOW_BUNDLE = bundlePath;
  (globalThis as Record<string, unknown>).__gatewayTest = { database, temporal };
}
