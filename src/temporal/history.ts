import type { Client } from '@temporalio/client';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the CommonJS namespace object, as @temporalio/proto exports it
import proto = require('@temporalio/proto');
import type { ReplayWorkerOptions } from '@temporalio/worker';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleGatewayWorkflows, prebuiltWorkflowBundle } from '../worker/workflow-bundle';

// Audit of durable work: a workflow's history exported as JSON (every run of a continue-as-new chain), and
// replayed against the current workflow code. A replay that takes another path than the history recorded
// (another activity, timer or order) is a non-determinism: deploying that code would break running workflows.

export const HISTORY_FORMAT = 'ai-gateway/workflow-history@1';

/** One run, its history in Temporal's own JSON form (what `temporal workflow show --output json` writes). */
export interface ExportedRun {
  runId: string;
  history: { events: unknown[] };
}

/** The file an export writes: the runs of one workflow id, oldest first. */
export interface ExportedHistory {
  format: typeof HISTORY_FORMAT;
  workflowId: string;
  workflowType: string;
  runs: ExportedRun[];
}

type History = proto.temporal.api.history.v1.IHistory;
type Attributes = Record<string, unknown> | null | undefined;
type HistoryEvent = NonNullable<History['events']>[number];

/**
 * History <-> Temporal's JSON (proto3 JSON: camelCase fields, int64 as strings, RFC 3339 times, base64 bytes, enum
 * names), the form `temporal workflow show --output json` writes. The SDK's own historyToJSON/historyFromJSON
 * (@temporalio/common/lib/proto-utils) do the same, but they fail here with "type must be a Type": npm cannot
 * hoist protobufjs 8 over the protobufjs 7 that @grpc/proto-loader needs, so @temporalio/common and
 * @temporalio/proto each get their own copy and protojson rejects the other copy's types. This takes protojson
 * from the protobufjs that @temporalio/proto itself loads, so both sides are always the same copy. It reads the
 * canonical form only (the SDK's reader also takes the PascalCase enum names of old tctl and web UI exports).
 */
interface ProtoJson {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, opts: { ignoreUnknownFields: boolean }): unknown;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- resolved from @temporalio/proto's own copy of protobufjs (see above)
const protojson: ProtoJson = require(
  require.resolve('protobufjs/ext/protojson', { paths: [path.dirname(require.resolve('@temporalio/proto'))] }),
);
const HistoryMessage = proto.temporal.api.history.v1.History;
// The root itself (not an import-star copy, which would lose the prototype's lookupType).
const historyType = (proto as unknown as { lookupType(name: string): unknown }).lookupType('temporal.api.history.v1.History');

export function historyToJSON(history: History): { events: unknown[] } {
  return protojson.toJson(historyType, HistoryMessage.fromObject(history)) as { events: unknown[] };
}

export function historyFromJSON(json: unknown): History {
  const history = protojson.fromJson(historyType, json, { ignoreUnknownFields: true }) as History | null;
  if (!history?.events?.length) throw new TypeError('no history events');
  return history;
}

/** The `...EventAttributes` object of an event, whatever its type. */
function attributesOf(event: HistoryEvent | undefined): Attributes {
  if (!event) return undefined;
  const key = Object.keys(event).find((k) => k.endsWith('EventAttributes') && (event as Record<string, unknown>)[k]);
  return key ? ((event as Record<string, unknown>)[key] as Attributes) : undefined;
}

/** The run this one continues (continue-as-new, retry or cron), from its first event. */
function previousRunId(history: History): string | undefined {
  return history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
}

/** The run that continues this one, from its closing event (empty while the run is open or when it was the last). */
function nextRunId(history: History): string | undefined {
  const last = attributesOf(history.events?.[history.events.length - 1]);
  const next = last?.newExecutionRunId;
  return typeof next === 'string' && next ? next : undefined;
}

function workflowTypeOf(history: { events?: unknown[] | null }): string {
  const first = history.events?.[0] as { workflowExecutionStartedEventAttributes?: { workflowType?: { name?: string } } } | undefined;
  return first?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? 'unknown';
}

/**
 * The JSON text of a workflow's history: the run `runId` (default: the latest run) and, with `allRuns`, every
 * run of its chain (those it continues and those continuing it), oldest first, one history per run.
 */
export async function exportWorkflowHistory(
  client: Client,
  workflowId: string,
  runId?: string,
  opts: { allRuns?: boolean } = {},
): Promise<string> {
  const fetchRun = (id: string): Promise<History> => client.workflow.getHandle(workflowId, id).fetchHistory();
  const firstId = runId ?? (await client.workflow.getHandle(workflowId).describe()).runId;
  const runs: Array<{ runId: string; history: History }> = [{ runId: firstId, history: await fetchRun(firstId) }];
  if (opts.allRuns) {
    const seen = new Set([firstId]);
    for (let prev = previousRunId(runs[0].history); prev && !seen.has(prev); prev = previousRunId(runs[0].history)) {
      seen.add(prev);
      runs.unshift({ runId: prev, history: await fetchRun(prev) });
    }
    for (let next = nextRunId(runs[runs.length - 1].history); next && !seen.has(next); next = nextRunId(runs[runs.length - 1].history)) {
      seen.add(next);
      runs.push({ runId: next, history: await fetchRun(next) });
    }
  }
  const doc: ExportedHistory = {
    format: HISTORY_FORMAT,
    workflowId,
    workflowType: workflowTypeOf(runs[0].history),
    runs: runs.map((r) => ({ runId: r.runId, history: historyToJSON(r.history) })),
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/**
 * Reads an exported file; also takes a single history as Temporal's tools write it (`{"events": [...]}`),
 * named after `source`. Throws with `source` in the message when the text is neither.
 */
export function parseHistoryFile(text: string, source = 'history'): ExportedHistory {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(`${source}: not JSON (${(err as Error).message})`);
  }
  const isHistory = (h: unknown): h is { events: unknown[] } =>
    typeof h === 'object' && h !== null && Array.isArray((h as { events?: unknown }).events) && (h as { events: unknown[] }).events.length > 0;
  if (isHistory(doc)) {
    return { format: HISTORY_FORMAT, workflowId: source, workflowType: workflowTypeOf(doc), runs: [{ runId: 'unknown', history: doc }] };
  }
  const d = doc as Partial<ExportedHistory> | null;
  if (!d || d.format !== HISTORY_FORMAT || typeof d.workflowId !== 'string' || !Array.isArray(d.runs) || d.runs.length === 0) {
    throw new Error(`${source}: not a workflow history (expected "format": "${HISTORY_FORMAT}" with runs, or Temporal's {"events": [...]})`);
  }
  d.runs.forEach((r, i) => {
    if (!r || typeof r.runId !== 'string' || !isHistory(r.history)) throw new Error(`${source}: run ${i + 1} has no history events`);
  });
  return { format: HISTORY_FORMAT, workflowId: d.workflowId, workflowType: d.workflowType ?? workflowTypeOf(d.runs[0].history), runs: d.runs };
}

export interface ReplayReport {
  /** Position of the history in the list given to replayHistories. */
  index: number;
  workflowId: string;
  workflowType: string;
  runId: string;
  /** 1-based position of the run in its chain. */
  run: number;
  ok: boolean;
  /** The code took another path than the history: the change is not safe for workflows in flight. */
  nonDeterministic: boolean;
  error?: string;
}

export interface ReplayOptions {
  /** A pre-built bundle; default: the workflows in src/workflows, bundled now. */
  workflowBundle?: ReplayWorkerOptions['workflowBundle'];
  workflowsPath?: string;
}

/** Replays every run of every history against the current workflow code, one report per run, in order. */
export async function replayHistories(histories: ExportedHistory[], opts: ReplayOptions = {}): Promise<ReplayReport[]> {
  const reports: ReplayReport[] = [];
  const queued: Array<{ report: ReplayReport; history: History }> = [];
  histories.forEach((h, index) => {
    h.runs.forEach((r, i) => {
      const report: ReplayReport = {
        index, workflowId: h.workflowId, workflowType: workflowTypeOf(r.history), runId: r.runId, run: i + 1, ok: false, nonDeterministic: false,
      };
      reports.push(report);
      try {
        queued.push({ report, history: historyFromJSON(r.history) });
      } catch (err) {
        report.error = `unreadable history: ${(err as Error).message}`;
      }
    });
  });
  if (queued.length === 0) return reports;

  // Loaded here, not at the top: the api process exports histories but never replays one, and the worker SDK (its
  // native core) is megabytes of resident memory it would otherwise carry.
  const [{ Worker }, { DeterminismViolationError }, { WORKFLOWS_PATH }] = await Promise.all([
    import('@temporalio/worker'),
    import('@temporalio/workflow'),
    import('../worker/worker'),
  ]);
  const options: ReplayWorkerOptions = opts.workflowBundle
    ? { workflowBundle: opts.workflowBundle, replayName: 'history-replay' }
    : { workflowsPath: opts.workflowsPath ?? WORKFLOWS_PATH, replayName: 'history-replay' };
  let i = 0;
  for await (const result of Worker.runReplayHistories(options, queued.map((q) => ({ workflowId: q.report.workflowId, history: q.history })))) {
    const { report } = queued[i++];
    report.ok = !result.error;
    report.nonDeterministic = result.error instanceof DeterminismViolationError;
    if (result.error) report.error = result.error.message;
  }
  for (const { report } of queued.slice(i)) report.error = 'not replayed: the replay worker stopped early';
  return reports;
}

let replayBundle: Promise<{ code: string }> | null = null;

/**
 * The workflow code this process would run, bundled once and kept: the replay check of the console (POST
 * /api/task/:id/replay) then costs a replay, not a bundling, per click.
 */
export function currentWorkflowBundle(): Promise<{ code: string }> {
  replayBundle ??= (async () => {
    const prebuilt = prebuiltWorkflowBundle();
    if (prebuilt) return { code: await readFile(prebuilt.codePath, 'utf8') };
    return bundleGatewayWorkflows();
  })();
  replayBundle.catch(() => {
    replayBundle = null;
  });
  return replayBundle;
}
