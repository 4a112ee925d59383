import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { DefaultLogger, makeTelemetryFilterString, Runtime } from '@temporalio/worker';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadConfig } from '../../config';
import { Resources } from '../../runtime/resources';
import { installTemporalRuntime, openTemporal } from '../../runtime/temporal';
import { exportWorkflowHistory, parseHistoryFile, replayHistories } from '../../temporal/history';

/**
 * Audit commands over Temporal directly (not the HTTP API): export a workflow's history (every run) as JSON,
 * and replay exported histories against this checkout's workflow code. `keys batch-history` / `keys replay`
 * use them today; the video task commands will too.
 */

/**
 * Writes the history of `workflowId` (every continue-as-new run) to `opts.out`, or to stdout. Reads Temporal at
 * TEMPORAL_ADDRESS, else the dev server keeping its state in DATA_DIR (the gateway stopped).
 */
export async function exportHistoryToFile(workflowId: string, opts: { out?: string; force: boolean }): Promise<void> {
  // Checked before connecting, so a bad path costs nothing.
  if (opts.out && !opts.force && existsSync(opts.out)) throw new Error(`${opts.out} exists; choose another --out or pass --force to overwrite it`);
  const text = await withTemporalClient(async (client, where) => {
    try {
      return await exportWorkflowHistory(client, workflowId, undefined, { allRuns: true });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new Error(`no workflow ${workflowId} on Temporal ${where}`);
      throw err;
    }
  });
  if (!opts.out) {
    process.stdout.write(text);
    return;
  }
  writeFileSync(opts.out, text, { flag: opts.force ? 'w' : 'wx' });
  const runs = (JSON.parse(text) as { runs: unknown[] }).runs.length;
  process.stderr.write(`wrote the history of ${workflowId} (${runs} run${runs === 1 ? '' : 's'}) to ${opts.out}\n`);
}

/** Replays history files against the current workflow code (or a bundle); sets exit code 1 when any run fails. */
export async function replayHistoryFiles(files: string[], opts: { workflowBundle?: string }): Promise<void> {
  const { LOG_LEVEL } = loadConfig();
  if (LOG_LEVEL === 'debug' || LOG_LEVEL === 'trace') {
    await installTemporalRuntime(LOG_LEVEL);
  } else {
    // Each failure is reported below with its details: the SDK core's own warning about it would repeat them.
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      shutdownSignals: [],
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR', other: 'ERROR' }) } },
    });
  }
  const histories = files.map((f) => parseHistoryFile(readFileSync(f, 'utf8'), f));
  const reports = await replayHistories(histories, opts.workflowBundle ? { workflowBundle: { codePath: opts.workflowBundle } } : {});
  let failed = 0;
  for (const r of reports) {
    const runs = histories[r.index].runs.length;
    const what = `${files[r.index]}: ${r.workflowId} run ${r.run}/${runs} (${r.workflowType}, ${r.runId})`;
    if (r.ok) {
      process.stdout.write(`${what}: ok\n`);
    } else {
      failed++;
      process.stderr.write(`${what}: ${r.nonDeterministic ? 'NON-DETERMINISTIC' : 'FAILED'}: ${r.error}\n`);
    }
  }
  process.stdout.write(`${reports.length - failed} of ${reports.length} runs replayed against the current workflow code\n`);
  if (failed > 0) process.exitCode = 1;
}

/** A Temporal client for one command: TEMPORAL_ADDRESS, else the dev server keeping its state in DATA_DIR. */
export async function withTemporalClient<T>(fn: (client: Client, where: string) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const resources = new Resources();
  try {
    const target = await openTemporal(config, resources, (line) => process.stderr.write(`${line}\n`));
    const connection = await Connection.connect({ address: target.address });
    resources.add('the Temporal connection', () => connection.close());
    return await fn(new Client({ connection, namespace: target.namespace }), target.description);
  } finally {
    await resources.closeAll((line) => process.stderr.write(`${line}\n`));
  }
}
