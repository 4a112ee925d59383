// A task's workflow history (GET /api/task/:id/history) as the steps an operator reads: submitted, sent upstream,
// each poll with its progress, waits, failures and retries, cancel, settle or release, webhook start, close.
// Pure: no DOM, so the tests run it against the committed histories.

export interface TimelineStep {
  at: string;
  kind: 'start' | 'upstream' | 'poll' | 'wait' | 'retry' | 'cancel' | 'settle' | 'release' | 'webhook' | 'end' | 'error';
  title: string;
  detail?: string;
}

interface Payloads {
  payloads?: Array<{ metadata?: Record<string, string>; data?: string }>;
}

interface HistoryEvent {
  eventId: string;
  eventTime: string;
  eventType: string;
  [attributes: string]: unknown;
}

export interface ExportedHistory {
  workflowId: string;
  workflowType: string;
  runs: Array<{ runId: string; history: { events: HistoryEvent[] } }>;
}

function b64(s: string): string {
  const bin = atob(s);
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

/** The first JSON payload of a list, decoded; undefined for none or another encoding. */
export function firstPayload(p: Payloads | undefined): unknown {
  const first = p?.payloads?.[0];
  if (!first?.data) return undefined;
  const encoding = first.metadata?.encoding ? b64(first.metadata.encoding) : '';
  if (encoding !== 'json/plain') return undefined;
  try {
    return JSON.parse(b64(first.data));
  } catch {
    return undefined;
  }
}

const NAMES: Record<string, string> = {
  submitVideoUpstream: 'Sent upstream',
  runVideoUpstream: 'Upstream part',
  pollVideoUpstream: 'Polled upstream',
  cancelVideoUpstream: 'Cancelled upstream',
  endVideoTask: 'Finished the task',
  videoWebhook: 'Prepared the webhook',
};

function attr<T>(e: HistoryEvent, name: string): T {
  return (e[name] ?? {}) as T;
}

function seconds(d: string | undefined): string {
  if (!d) return '';
  const n = Number(d.replace(/s$/, ''));
  return Number.isFinite(n) ? `${n} s` : d;
}

/** How the task ended as far as the history has said (the end's local activity carries no input to read it from). */
type Outcome = { status: 'completed' } | { status: 'failed'; code: string; message?: string };

function endStep(at: string, outcome: Outcome | null): TimelineStep {
  if (outcome?.status === 'completed') return { at, kind: 'settle', title: 'Settled: billed once into the ledger' };
  return { at, kind: 'release', title: `Released the hold: ${outcome?.code ?? 'failed'}`, detail: outcome?.message };
}

/** A local activity's type and attempt, from its marker (`core_local_activity`). */
function localActivityOf(e: HistoryEvent): { name: string; attempt: number } | null {
  const a = attr<{ markerName?: string; details?: Record<string, Payloads> }>(e, 'markerRecordedEventAttributes');
  if (a.markerName !== 'core_local_activity') return null;
  const data = firstPayload(a.details?.data) as { activity_type?: string; attempt?: number } | undefined;
  return data?.activity_type ? { name: data.activity_type, attempt: data.attempt ?? 1 } : null;
}

export function timelineOf(history: ExportedHistory): TimelineStep[] {
  const steps: TimelineStep[] = [];
  const scheduled = new Map<string, { name: string; input: unknown }>();
  let outcome: Outcome | null = null;
  for (const run of history.runs) {
    for (const e of run.history.events) {
      const at = e.eventTime;
      switch (e.eventType) {
        case 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED':
          steps.push({ at, kind: 'start', title: 'Submitted', detail: `workflow ${history.workflowId}` });
          break;
        case 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED': {
          const a = attr<{ activityType?: { name?: string }; input?: Payloads }>(e, 'activityTaskScheduledEventAttributes');
          const name = a.activityType?.name ?? 'activity';
          const inputs = a.input?.payloads ?? [];
          const last = inputs.length ? firstPayload({ payloads: [inputs[inputs.length - 1]] }) : undefined;
          scheduled.set(e.eventId, { name, input: last });
          break;
        }
        case 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED': {
          const a = attr<{ scheduledEventId?: string; result?: Payloads }>(e, 'activityTaskCompletedEventAttributes');
          const s = scheduled.get(a.scheduledEventId ?? '');
          const name = s?.name ?? 'activity';
          const result = firstPayload(a.result) as Record<string, unknown> | undefined;
          if (name === 'runVideoUpstream') {
            // One activity submitted, polled until the upstream's end and kept the file.
            const state = String(result?.state ?? 'unknown');
            if (state === 'completed') outcome = { status: 'completed' };
            else if (state === 'timeout') outcome = { status: 'failed', code: 'timeout', message: 'The task did not finish within its deadline.' };
            else {
              const error = (result?.error ?? {}) as { code?: string; message?: string };
              outcome = { status: 'failed', code: error.code ?? 'generation_failed', message: error.message };
            }
            steps.push({ at, kind: 'poll', title: state === 'completed' ? 'Poll: completed 100%' : state === 'timeout' ? 'Deadline reached' : `Poll: ${state}` });
          } else if (name === 'pollVideoUpstream') {
            const state = String(result?.state ?? 'unknown');
            const progress = typeof result?.progress === 'number' ? ` ${result.progress}%` : '';
            steps.push({ at, kind: 'poll', title: `Poll: ${state}${progress}` });
          } else if (name === 'endVideoTask') {
            const outcome = (s?.input ?? {}) as { status?: string; code?: string; message?: string };
            if (outcome.status === 'completed') steps.push({ at, kind: 'settle', title: 'Settled: billed once into the ledger' });
            else steps.push({ at, kind: 'release', title: `Released the hold: ${outcome.code ?? 'failed'}`, detail: outcome.message });
          } else if (name === 'submitVideoUpstream') {
            steps.push({ at, kind: 'upstream', title: NAMES[name] });
          } else {
            steps.push({ at, kind: 'upstream', title: NAMES[name] ?? name });
          }
          break;
        }
        case 'EVENT_TYPE_ACTIVITY_TASK_FAILED':
        case 'EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT': {
          const key = e.eventType.endsWith('FAILED') ? 'activityTaskFailedEventAttributes' : 'activityTaskTimedOutEventAttributes';
          const a = attr<{ scheduledEventId?: string; failure?: { message?: string } }>(e, key);
          const name = scheduled.get(a.scheduledEventId ?? '')?.name ?? 'activity';
          steps.push({ at, kind: 'error', title: `${NAMES[name] ?? name}: gave up`, detail: a.failure?.message });
          break;
        }
        case 'EVENT_TYPE_ACTIVITY_TASK_STARTED': {
          const a = attr<{ scheduledEventId?: string; attempt?: number; lastFailure?: { message?: string } }>(e, 'activityTaskStartedEventAttributes');
          if ((a.attempt ?? 1) > 1) steps.push({ at, kind: 'retry', title: `Retried (attempt ${a.attempt})`, detail: a.lastFailure?.message });
          if (scheduled.get(a.scheduledEventId ?? '')?.name === 'runVideoUpstream') {
            steps.push({ at, kind: 'upstream', title: 'Sent upstream', detail: 'then polled until its end, and the finished file copied into the store' });
          }
          break;
        }
        case 'EVENT_TYPE_MARKER_RECORDED': {
          const la = localActivityOf(e);
          if (!la) break;
          if (la.name === 'endVideoTask') steps.push(endStep(at, outcome));
          else steps.push({ at, kind: 'upstream', title: NAMES[la.name] ?? la.name });
          break;
        }
        case 'EVENT_TYPE_TIMER_STARTED': {
          const a = attr<{ startToFireTimeout?: string }>(e, 'timerStartedEventAttributes');
          steps.push({ at, kind: 'wait', title: `Waited ${seconds(a.startToFireTimeout)} before the next poll` });
          break;
        }
        case 'EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED': {
          const a = attr<{ signalName?: string }>(e, 'workflowExecutionSignaledEventAttributes');
          if (a.signalName === 'cancelVideo') outcome = { status: 'failed', code: 'cancelled', message: 'The task was cancelled.' };
          steps.push({ at, kind: 'cancel', title: a.signalName === 'cancelVideo' ? 'Cancel requested' : `Signal ${a.signalName}` });
          break;
        }
        case 'EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED': {
          const a = attr<{ workflowId?: string }>(e, 'startChildWorkflowExecutionInitiatedEventAttributes');
          steps.push({ at, kind: 'webhook', title: 'Webhook delivery started', detail: a.workflowId });
          break;
        }
        case 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED':
          steps.push({ at, kind: 'end', title: 'Workflow completed' });
          break;
        case 'EVENT_TYPE_WORKFLOW_EXECUTION_FAILED':
        case 'EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT':
        case 'EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED':
        case 'EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED':
          steps.push({ at, kind: 'error', title: `Workflow ${e.eventType.replace('EVENT_TYPE_WORKFLOW_EXECUTION_', '').toLowerCase().replace('_', ' ')}` });
          break;
        default:
          break;
      }
    }
  }
  return steps;
}
