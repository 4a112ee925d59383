import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ExportedHistory, exportWorkflowHistory, parseHistoryFile, replayHistories } from '../../src/temporal/history';
import { gatewayCli } from '../helpers/gateway-cli';
import { http, newAccount, startGateway, startWorker, testEnv, TestGateway } from '../helpers/harness';
import { waitForBatch } from '../helpers/worker-batches';

// The workflow histories committed under test/histories (recorded by test/histories/record.ts) replayed against
// the workflow code of this checkout: a change that would break workflows in flight fails here.

const ROOT = path.resolve(__dirname, '..', '..');
const HISTORIES = path.join(ROOT, 'test', 'histories');

const bundle = () => ({ workflowBundle: { codePath: testEnv().workflowBundle } });

function committed(): Array<{ file: string; history: ExportedHistory }> {
  return readdirSync(HISTORIES)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, history: parseHistoryFile(readFileSync(path.join(HISTORIES, file), 'utf8'), file) }));
}

const eventTypes = (h: ExportedHistory, run: number): string[] =>
  h.runs[run].history.events.map((e) => String((e as { eventType: string }).eventType));

describe('committed workflow histories replay against the current workflow code', () => {
  it('replays every run of every history under test/histories without non-determinism', async () => {
    const files = committed();
    const byName = new Map(files.map((f) => [f.file, f.history]));
    // What the recording covers; re-record (npx tsx test/histories/record.ts) if one of these changes on purpose.
    expect([...byName.keys()]).toEqual(
      expect.arrayContaining(['issue-continue-as-new.json', 'status.json', 'rotate-grace.json', 'issue-cancelled.json', 'ping.json']),
    );
    expect(byName.get('issue-continue-as-new.json')!.runs.length).toBeGreaterThanOrEqual(2);
    expect(eventTypes(byName.get('issue-continue-as-new.json')!, 0)).toContain('EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
    const rotate = byName.get('rotate-grace.json')!;
    expect(rotate.runs.flatMap((_, i) => eventTypes(rotate, i))).toEqual(expect.arrayContaining(['EVENT_TYPE_TIMER_STARTED', 'EVENT_TYPE_TIMER_FIRED']));
    expect(eventTypes(rotate, rotate.runs.length - 1).at(-1)).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
    expect(eventTypes(byName.get('issue-cancelled.json')!, 0).at(-1)).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED');
    // Batch inference (RECORD_HISTORIES=1, test/helpers/batch-histories.ts): completed, cancelled, Anthropic's, one
    // whose worker was killed mid-run and resumed on another (recorded before the provider-batches patch), one sent to a
    // provider's own batch API, and one long enough to continue as new.
    for (const name of ['batch-completed.json', 'batch-cancelled.json', 'batch-anthropic.json', 'batch-crashed-resumed.json', 'batch-provider.json', 'batch-continued.json']) {
      const h = byName.get(name);
      expect([name, h?.workflowType]).toEqual([name, 'inferenceBatchWorkflow']);
      expect([name, eventTypes(h!, h!.runs.length - 1).at(-1)]).toEqual([name, 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED']);
    }
    expect(JSON.stringify(byName.get('batch-crashed-resumed.json'))).toContain('activity Heartbeat timeout');
    expect(JSON.stringify(byName.get('batch-provider.json'))).toContain('collectProviderBatch');
    expect(byName.get('batch-continued.json')!.runs.length).toBeGreaterThanOrEqual(2);
    expect(eventTypes(byName.get('batch-continued.json')!, 0)).toContain('EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
    // Video tasks (npx tsx test/histories/record-video.ts): each family, each way a task ends; `video-polling-*`
    // were recorded before the upstream part became one activity, and replay through the polling loop.
    for (const family of ['a', 'b', 'c']) {
      for (const outcome of ['completed', 'failed', 'timeout', 'cancelled']) {
        for (const polling of [false, true]) {
          const name = `video-${polling ? 'polling-' : ''}${family}-${outcome}.json`;
          const h = byName.get(name);
          expect([name, h?.workflowId.startsWith('video:')]).toEqual([name, true]);
          const types = eventTypes(h!, 0);
          expect(types.at(-1)).toBe('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
          if (outcome === 'cancelled') expect(types).toContain('EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED');
          if (polling && outcome === 'timeout') expect(types).toContain('EVENT_TYPE_TIMER_FIRED');
          if (!polling) {
            // The patch marker and the end's local activity; one activity task for the whole upstream part.
            expect([name, types.filter((t) => t === 'EVENT_TYPE_MARKER_RECORDED').length >= 2]).toEqual([name, true]);
            expect([name, types.length < 20]).toEqual([name, true]);
          }
        }
      }
    }

    const reports = await replayHistories(files.map((f) => f.history), bundle());
    const failures = reports.filter((r) => !r.ok).map((r) => `${files[r.index].file} run ${r.run}: ${r.error}`);
    expect(failures).toEqual([]);
    expect(reports).toHaveLength(files.reduce((n, f) => n + f.history.runs.length, 0));
  });

  it('no history carries a credential or a signed link; video histories carry no upstream address either', () => {
    for (const { file } of committed()) {
      const text = readFileSync(path.join(HISTORIES, file), 'utf8');
      expect([file, /Bearer |authorization|whsec_|sk-[A-Za-z0-9]{8}|sig=|\/v1\/files\/video\//i.test(text)]).toEqual([file, false]);
      if (file.startsWith('video-')) expect([file, /video-upstream-key|127\.0\.0\.1|localhost/i.test(text)]).toEqual([file, false]);
    }
  });

  it('would catch a change: a history whose first chunk ran another activity fails as non-deterministic', async () => {
    const original = committed().find((f) => f.file === 'issue-continue-as-new.json')!.history;
    const tampered: ExportedHistory = JSON.parse(JSON.stringify(original));
    const scheduled = tampered.runs[0].history.events
      .map((e) => (e as { activityTaskScheduledEventAttributes?: { activityType: { name: string } } }).activityTaskScheduledEventAttributes)
      .find(Boolean)!;
    expect(scheduled.activityType.name).toBe('issueKeyChunk');
    scheduled.activityType.name = 'setKeyStatusChunk';

    const [first, second] = await replayHistories([tampered], bundle());
    expect(first).toMatchObject({ ok: false, nonDeterministic: true, run: 1, workflowId: original.workflowId });
    expect(first.error).toContain('setKeyStatusChunk');
    // The untouched second run still replays: each run is judged on its own.
    expect(second).toMatchObject({ ok: true, run: 2 });
  });
});

describe('export and replay of a live batch', () => {
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let auth: string;
  let batchId: number;
  let dir: string;

  beforeAll(async () => {
    gw = await startGateway();
    // Three chunks of 4 and a new run after every 2 chunks: the batch continues as new once.
    Object.assign(gw.deps.batches.settings, { chunkSize: 4, continueAsNewAfterChunks: 2 });
    worker = await startWorker(gw);
    auth = (await newAccount(gw.db)).systemToken;
    dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-history-'));
    const res = await http(gw.baseUrl, 'POST', '/api/token/batch', { auth, body: { count: 12, name: 'replay' } });
    expect(res.status).toBe(202);
    batchId = res.body.data.id;
    expect(await waitForBatch(gw.baseUrl, auth, batchId)).toMatchObject({ status: 'completed', created: 12 });
    await gw.temporal.workflow.getHandle(`keys:${batchId}`).result();
  });
  afterAll(async () => {
    await worker.stop();
    await gw.close();
  });

  it('exports every run of the chain, oldest first, and the export replays', async () => {
    const text = await exportWorkflowHistory(gw.temporal, `keys:${batchId}`, undefined, { allRuns: true });
    const exported = parseHistoryFile(text);
    expect(exported).toMatchObject({ workflowId: `keys:${batchId}`, workflowType: 'keysIssueWorkflow' });
    expect(exported.runs).toHaveLength(2);
    const started = (i: number) =>
      (exported.runs[i].history.events[0] as { workflowExecutionStartedEventAttributes: { continuedExecutionRunId?: string } })
        .workflowExecutionStartedEventAttributes;
    expect(started(0).continuedExecutionRunId).toBeUndefined();
    expect(started(1).continuedExecutionRunId).toBe(exported.runs[0].runId);
    expect(exported.runs[1].runId).toBe((await gw.temporal.workflow.getHandle(`keys:${batchId}`).describe()).runId);

    const reports = await replayHistories([exported], bundle());
    expect(reports.map((r) => [r.run, r.ok, r.error])).toEqual([[1, true, undefined], [2, true, undefined]]);

    // From any run the chain is the same; without allRuns, just that run.
    const fromFirst = parseHistoryFile(await exportWorkflowHistory(gw.temporal, `keys:${batchId}`, exported.runs[0].runId, { allRuns: true }));
    expect(fromFirst.runs.map((r) => r.runId)).toEqual(exported.runs.map((r) => r.runId));
    const single = parseHistoryFile(await exportWorkflowHistory(gw.temporal, `keys:${batchId}`, exported.runs[0].runId));
    expect(single.runs.map((r) => r.runId)).toEqual([exported.runs[0].runId]);
    expect(single.runs[0].history).toEqual(exported.runs[0].history);
  });

  /** The real CLI, as an auditor runs it, with Temporal from the environment. */
  const cli = (args: string[]) => gatewayCli(['keys', ...args]);


  it('CLI: keys batch-history writes the JSON file, keys replay replays it (exit 0) and fails a tampered one (exit 1)', async () => {
    const out = path.join(dir, 'history.json');
    const exported = await cli(['batch-history', String(batchId), '--out', out]);
    expect(exported).toMatchObject({ code: 0 });
    expect(exported.stderr).toContain(`wrote the history of keys:${batchId} (2 runs) to ${out}`);
    const file = parseHistoryFile(readFileSync(out, 'utf8'));
    expect(file.runs).toHaveLength(2);
    expect(file.workflowId).toBe(`keys:${batchId}`);

    // An existing file is kept unless --force; an unknown batch is named.
    expect(await cli(['batch-history', String(batchId), '--out', out])).toMatchObject({ code: 1, stderr: expect.stringContaining('exists') });
    const missing = await cli(['batch-history', '999999999', '--out', path.join(dir, 'none.json')]);
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringContaining('no workflow keys:999999999') });
    expect(existsSync(path.join(dir, 'none.json'))).toBe(false);

    // Replayed against src/workflows, bundled by the command.
    const replayed = await cli(['replay', out]);
    expect(replayed).toMatchObject({ code: 0, stdout: expect.stringContaining('2 of 2 runs replayed') });

    const tampered = JSON.parse(readFileSync(out, 'utf8')) as ExportedHistory;
    const scheduled = tampered.runs[1].history.events.find((e) => (e as { activityTaskScheduledEventAttributes?: unknown }).activityTaskScheduledEventAttributes) as {
      activityTaskScheduledEventAttributes: { activityType: { name: string } };
    };
    scheduled.activityTaskScheduledEventAttributes.activityType.name = 'rotateKeyChunk';
    const bad = path.join(dir, 'tampered.json');
    writeFileSync(bad, JSON.stringify(tampered));
    const failed = await cli(['replay', '--workflow-bundle', testEnv().workflowBundle, out, bad]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain('3 of 4 runs replayed');
    expect(failed.stderr).toMatch(new RegExp(`tampered\\.json: keys:${batchId} run 2/2 .*NON-DETERMINISTIC`));
  }, 120_000);
});
