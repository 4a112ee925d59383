import { randomUUID } from 'node:crypto';
import type { PeriodBudget } from '../billing/holds';
import type { ConfigStore } from '../../gateway-config/store';
import type { ChannelConfig } from '../../gateway-config/schema';
import { VIDEO_CHANNEL_TYPES } from '../ports/video';
import type { BillingService } from '../billing/billing-service';
import { ModelNotFoundError, UnavailableError } from '../errors';
import type { ApiKeyPrincipal } from '../keys/key-auth';
import { type ModelRoute, resolveModel } from '../relay/resolve';
import { costOfSeconds, costOfUnits, priceKind } from '../pricing/cost';
import { IdempotencyKeyReusedError, VideoModelUnavailableError, VideoNotCancellableError, VideoNotFoundError } from './errors';
import { Readable } from 'node:stream';
import type { VideoInputReference } from '../ports/video';
import { inputKey, type ObjectStore } from '../ports/object-store';
import type { VideoTaskRepository } from '../ports/video-tasks';
import { insertedVideoTask, type NewVideoTask, type VideoTask } from './tasks';
import { createVideoWorkflowOutbox, type OutboxOptions, type VideoWorkflowOutbox } from './workflow-outbox';
import type { VideoFamily } from './validation';

/** Timing of video workflows; production defaults follow the spec, tests shorten them. */
export interface VideoSettings {
  /** From submission to `timeout` (GATEWAY_VIDEO_DEADLINE_SECONDS, default 1200). */
  deadlineSeconds: number;
  /** Poll interval bounds per family, in ms (A 5-10 s, B 10 s, C 5-10 s; never under 3 s in production). */
  pollMs: Record<VideoFamily, { min: number; max: number }>;
  /** How long one upstream call may take before it is tried again (default 60 s); tests shorten it. */
  upstreamAttemptMs?: number;
  /** How long the copy of a finished file is retried before the task completes on the upstream's link. */
  resultWindowMs?: number;
  /** Webhook retry timing (default: 5 s doubling to 1 h, for 24 h); tests shorten it. */
  webhookRetry?: { initialIntervalMs: number; maximumIntervalMs: number; giveUpAfterMs?: number };
  /** How long a stored copy of a finished video is kept (VIDEO_RETENTION_DAYS, default 7 days). */
  retentionSeconds: number;
  /** The reconciler of workflow starts (./workflow-outbox). */
  outbox?: OutboxOptions;
}

export const DEFAULT_VIDEO_SETTINGS: VideoSettings = {
  deadlineSeconds: 1200,
  retentionSeconds: 7 * 86_400,
  pollMs: { A: { min: 5000, max: 10_000 }, B: { min: 10_000, max: 10_000 }, C: { min: 5000, max: 10_000 } },
};

/** Seconds billed for a per_second model of a family whose request has no duration (A and C). */
export const DEFAULT_BILLED_SECONDS = 8;

/** What the workflow starts with: ids and timings only, never credentials. */
export interface VideoWorkflowInput {
  taskId: string;
  family: VideoFamily;
  /** Epoch ms after which the task ends as `timeout`. */
  deadlineAtMs: number;
  pollMs: { min: number; max: number };
  /** The task has an X-Callback-Url: a terminal state is delivered as a webhook (workflow webhook:<task id>). */
  webhook?: boolean;
  webhookRetry?: VideoSettings['webhookRetry'];
  upstreamAttemptMs?: number;
  /** How long the copy of the finished file into the object store is retried (default 10 minutes). */
  resultWindowMs?: number;
}

/** The port onto Temporal: workflow video:<task id>, started at most once; cancel is a signal. */
export interface VideoWorkflowStarter {
  /** The task queue its workflows run on (recorded on each task, for the reconciler). */
  readonly taskQueue: string;
  start(input: VideoWorkflowInput): Promise<void>;
  cancel(taskId: string): Promise<void>;
}

export interface SubmitOptions {
  requestId: string;
  idempotencyKey?: string | null;
  callbackUrl?: string | null;
  /** The origin the client called (for the links a webhook carries). */
  publicOrigin?: string | null;
  /** The key's periodic budget in force and the current period: the task's hold is counted in it. */
  period?: PeriodBudget;
}

export interface VideoService {
  /** Validated request in, task out (queued); `replayed` when an Idempotency-Key returned an earlier task. */
  submit(
    family: VideoFamily,
    key: ApiKeyPrincipal,
    req: { model: string; prompt: string; duration?: number; body: Record<string, unknown>; input?: VideoInputReference },
    opts: SubmitOptions,
  ): Promise<{ task: VideoTask; replayed: boolean }>;
  get(accountId: number, id: string, family?: VideoFamily): Promise<VideoTask>;
  cancel(accountId: number, id: string, family?: VideoFamily): Promise<VideoTask>;
  readonly settings: VideoSettings;
  /** Workflow starts still queued after submits (null without a workflow engine). */
  readonly outbox: VideoWorkflowOutbox | null;
  close(): Promise<void>;
}

export function videoTaskId(family: VideoFamily, model: string): string {
  const uuid = randomUUID();
  if (family === 'A') return `video_${uuid.replace(/-/g, '')}`;
  if (family === 'C') return `${model}:${uuid}`;
  return uuid;
}

export function createVideoService(deps: {
  tasks: VideoTaskRepository;
  /** The process's group-commit queue (the relay's): the submit's hold goes through it. */
  billing: BillingService;
  config: ConfigStore;
  starter: VideoWorkflowStarter | null;
  /** Where a submit's first frame is kept until the worker sends it upstream. */
  store: ObjectStore;
  settings?: Partial<VideoSettings>;
}): VideoService {
  const { tasks, config } = deps;
  const settings: VideoSettings = { ...DEFAULT_VIDEO_SETTINGS, ...deps.settings };

  /**
   * The task's channel and price, from the relay's own routing (resolveModel: the key's allowlist, the channels
   * serving the model to its group, the price and the group's multiplier), narrowed to the family's channel type.
   */
  function route(family: VideoFamily, key: ApiKeyPrincipal, model: string, duration: number | undefined): { channel: ChannelConfig; quota: number } {
    let r: ModelRoute;
    try {
      r = resolveModel(config.current(), { group: key.group || 'default', models: key.models }, model);
    } catch (err) {
      if (err instanceof ModelNotFoundError) throw new VideoModelUnavailableError(model);
      throw err;
    }
    const channels = r.channels.filter((c) => (VIDEO_CHANNEL_TYPES[family] as readonly string[]).includes(c.type));
    if (channels.length === 0) throw new VideoModelUnavailableError(model);
    // Highest priority first; weights matter little for tasks that last minutes.
    const channel = [...channels].sort((a, b) => b.priority - a.priority)[0];
    const quota = priceKind(r.price) === 'second'
      ? costOfSeconds(r.price, duration ?? DEFAULT_BILLED_SECONDS, r.multiplier)
      : costOfUnits(r.price, 1, r.multiplier);
    return { channel, quota };
  }

  const starter = deps.starter;
  function startWorkflow(t: VideoTask): Promise<void> {
    if (!starter) throw new UnavailableError('video generation needs the workflow engine, which this process has no connection to');
    return starter.start({
      taskId: t.id,
      family: t.family,
      deadlineAtMs: t.createdAt.getTime() + settings.deadlineSeconds * 1000,
      pollMs: settings.pollMs[t.family],
      ...(settings.upstreamAttemptMs ? { upstreamAttemptMs: settings.upstreamAttemptMs } : {}),
      ...(settings.resultWindowMs ? { resultWindowMs: settings.resultWindowMs } : {}),
      ...(t.callbackUrl ? { webhook: true, webhookRetry: settings.webhookRetry } : {}),
    });
  }

  const outbox = starter
    ? createVideoWorkflowOutbox({ tasks, taskQueue: starter.taskQueue, start: startWorkflow, options: settings.outbox })
    : null;

  return {
    settings,
    outbox,

    async close() {
      await outbox?.close();
    },

    async submit(family, key, req, opts) {
      const { channel, quota } = route(family, key, req.model, req.duration);
      if (!starter || !outbox) throw new UnavailableError('video generation needs the workflow engine, which this process has no connection to');
      const id = videoTaskId(family, req.model);
      const hold = `task:${id}`;
      // The hold and the task row are one operation of the billing group commit: concurrent submits share one
      // statement, whose commit is synchronous when it holds a submit (migration 014), so both are durable before
      // the answer. The workflow is started right after (the outbox), so a submit waits for no Temporal round trip
      // and a task is never lost between the two. The hold outlives the deadline: the workflow settles or releases
      // it well before the sweeper would.
      const row: NewVideoTask = {
        id,
        family,
        account: key.accountId,
        token: key.tokenId,
        token_name: key.name,
        model: req.model,
        prompt: req.prompt,
        request: req.body,
        channel: channel.name,
        amount: quota,
        callback_url: opts.callbackUrl ?? null,
        idempotency_key: opts.idempotencyKey ?? null,
        request_id: opts.requestId,
        public_origin: opts.publicOrigin ?? null,
        task_queue: starter.taskQueue,
      };
      // The first frame is stored before the task exists (the worker may read it at once), and dropped again when
      // the submit is refused or was a replay.
      const input = req.input;
      if (input) await deps.store.put(inputKey(id), Readable.from([input.bytes]), { contentType: input.contentType, size: input.bytes.length });
      let out;
      let inputKept = false;
      try {
        out = await deps.billing.reserveVideoTask(
          { businessKey: hold, tokenId: key.tokenId, accountId: key.accountId, amount: quota, reason: 'video', ttlSeconds: settings.deadlineSeconds + 3600, period: opts.period },
          row,
        );
        if (input && out.status === 'created') {
          await tasks.recordInput(id, { key: inputKey(id), contentType: input.contentType, filename: input.filename });
          inputKept = true;
        }
      } finally {
        if (input && !inputKept) await deps.store.delete(inputKey(id)).catch(() => undefined);
      }
      if (out.status === 'created') {
        const task = insertedVideoTask(row, new Date(out.task.created_at as string));
        outbox.kick(task);
        return { task, replayed: false };
      }
      const task = tasks.fromSubmitted(out.task);
      if (task.family !== family) throw new IdempotencyKeyReusedError(task.id);
      // An earlier submit whose start has not happened yet: starting is idempotent.
      if (!task.finishedAt && !task.workflowStartedAt) outbox.kick(task);
      return { task, replayed: true };
    },

    async get(accountId, id, family) {
      const task = await tasks.find(accountId, id);
      if (!task || (family !== undefined && task.family !== family)) throw new VideoNotFoundError(id);
      return task;
    },

    async cancel(accountId, id, family) {
      const task = await tasks.find(accountId, id);
      if (!task || (family !== undefined && task.family !== family)) throw new VideoNotFoundError(id);
      if (task.finishedAt) throw new VideoNotCancellableError(id);
      if (!starter || !outbox) throw new UnavailableError('cancelling needs the workflow engine, which this process has no connection to');
      // The cancel is a signal to the task's workflow, which may still be waiting in the outbox.
      if (!task.workflowStartedAt) await outbox.startNow(task);
      await starter.cancel(task.id);
      return task;
    },
  };
}
