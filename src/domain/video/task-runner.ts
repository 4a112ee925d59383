import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChannelConfig } from '../../gateway-config/schema';
import type { ConfigStore } from '../../gateway-config/store';
import { UpstreamError, sanitizeUpstreamMessage } from '../ports/upstream-error';
import type { VideoAdapter, VideoAdapterLookup, VideoInputReference, VideoUpstreamStatus } from '../ports/video';
import type { BillingService } from '../billing/billing-service';
import type { Repositories } from '../ports/repositories';
import { nextPollWait, type PollTiming } from './poll-timing';
import type { ProgressWriter } from './progress-writer';
import { resultKey, type ObjectStore } from '../ports/object-store';
import type { VideoTask } from './tasks';

/**
 * Running a video task (the workflow's activities call these): submit upstream, wait for its end, end the task
 * exactly once. Inputs and results are ids, states and numbers; channel credentials are read from the gateway
 * config here, and the upstream's file URL is stored on the task row, never returned.
 */

export interface VideoPoll {
  state: 'queued' | 'processing' | 'completed' | 'failed';
  progress: number;
  retryAfterSeconds?: number;
  error?: { code: string; message: string };
}

export type VideoFinish = { status: 'completed' } | { status: 'failed'; code: string; message: string };

/** How a task's upstream part ended: its terminal state, or the deadline passed first. */
export type VideoRunEnd = { state: 'completed' } | { state: 'failed'; error: { code: string; message: string } } | { state: 'timeout' };

export interface RunTiming extends PollTiming {
  /** Epoch ms: no poll starts after it (the task then ends as timeout). */
  deadlineAtMs: number;
  /** How long the copy of the finished file is retried before the task keeps the upstream's link. */
  resultWindowMs: number;
}

/** The upstream refused for good (a 4xx other than 429, a task it does not know, a channel gone): no retry. */
export class VideoRejectedError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'VideoRejectedError';
  }
}

/** The copy of a finished file refused for good (not a video, too large, gone): the task keeps the upstream's link. */
export class VideoResultRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VideoResultRefusedError';
  }
}

/** What a stored copy may be: video/*, or bytes the upstream did not type. */
const STORABLE_TYPE = /^(video\/[a-z0-9.+-]+|application\/octet-stream|binary\/octet-stream)$/;

/** The body, cut off with `refusal` set once it passes `maxBytes` (the store may wrap the error it sees). */
async function* limited(body: AsyncIterable<Buffer>, maxBytes: number, state: { refusal?: VideoResultRefusedError }): AsyncGenerator<Buffer> {
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.length;
    if (bytes > maxBytes) throw (state.refusal = new VideoResultRefusedError(`the file is larger than ${maxBytes} bytes`));
    yield chunk;
  }
}

export interface VideoTaskRunner {
  /** Submits the task upstream once; a retry after a crash reuses the upstream id already recorded. */
  submitUpstream(taskId: string, signal: AbortSignal): Promise<string>;
  /** One poll: records progress (and, when completed, the file's upstream URL) on the task row. */
  pollOnce(taskId: string, upstreamId: string, signal: AbortSignal): Promise<VideoPoll>;
  /**
   * The whole upstream part of a task: submit (once), poll until its terminal state or the deadline (waiting
   * `minMs` first, then backing off), on completion keep the file (retried within `resultWindowMs`, then the
   * upstream's link with the reason recorded), and end the task (endTask) on the upstream's end; the deadline is
   * the workflow's to end. `beat` hears of every poll.
   */
  runUpstream(taskId: string, timing: RunTiming, signal: AbortSignal, beat: (progress: number) => void): Promise<VideoRunEnd>;
  /** Best effort: the upstream stops working on a task we gave up (cancel, timeout); `upstreamId` null: the row's. */
  cancelUpstream(taskId: string, upstreamId: string | null, signal: AbortSignal): Promise<void>;
  /** Deletes stored copies older than the retention; how many it deleted. */
  deleteExpiredResults(retentionSeconds: number, signal: AbortSignal): Promise<number>;
  /**
   * The end of a task, exactly once whatever the retries: completed settles the hold task:<id> into the ledger
   * (unique task_id) and records the result; anything else releases the hold and records why. One transaction.
   */
  endTask(taskId: string, outcome: VideoFinish): Promise<void>;
}

export const DEFAULT_MAX_RESULT_BYTES = 2 * 1024 ** 3;

export interface VideoTaskRunnerDeps {
  /** The tasks, in transactions with their bills. */
  repos: Pick<Repositories, 'videoTasks' | 'transactions'>;
  /** The one money API: a task's end settles or releases its hold through it. */
  billing: Pick<BillingService, 'settleInTransaction' | 'releaseInTransaction'>;
  config: ConfigStore;
  progress: ProgressWriter;
  store: ObjectStore;
  /** Largest file copied into the store (VIDEO_MAX_RESULT_BYTES). */
  maxResultBytes: number;
  /** The video adapters by channel type (the composition root's). */
  adapters: VideoAdapterLookup;
}

export function createVideoTaskRunner(deps: VideoTaskRunnerDeps): VideoTaskRunner {
  const { config, progress, store } = deps;
  const tasks = deps.repos.videoTasks;

  async function taskOf(taskId: string): Promise<VideoTask> {
    const task = await tasks.get(taskId);
    if (!task) throw new VideoRejectedError(`video task ${taskId} does not exist`, 'task_not_found');
    return task;
  }

  function channelOf(task: VideoTask): ChannelConfig {
    const channel = config.current().channels.find((c) => c.name === task.channel);
    if (!channel) throw new VideoRejectedError(`channel ${task.channel} is no longer configured`, 'channel_removed');
    return channel;
  }

  function adapterOf(channel: ChannelConfig): VideoAdapter {
    const adapter = deps.adapters(channel.type);
    if (!adapter) throw new VideoRejectedError(`channel ${channel.name} no longer serves video`, 'channel_removed');
    return adapter;
  }

  /** Transient upstream failures are thrown as they are (retried); permanent ones end the task. */
  function upstreamFailure(err: unknown, channel: ChannelConfig): unknown {
    if (err instanceof UpstreamError && !err.retryable) {
      const message = sanitizeUpstreamMessage(err.message, [channel.key, channel.base_url]) ?? 'the upstream refused the task';
      return new VideoRejectedError(message, err.upstreamCode ?? `upstream_${err.status ?? 'error'}`);
    }
    return err;
  }

  /** The upstream's state of the task, its failure sanitised; nothing is written. */
  async function pollUpstream(task: VideoTask, upstreamId: string, signal: AbortSignal): Promise<VideoUpstreamStatus> {
    const channel = channelOf(task);
    try {
      const s = await adapterOf(channel).poll(channel, upstreamId, signal);
      if (s.state !== 'failed') return s;
      const message = sanitizeUpstreamMessage(s.error?.message, [channel.key, channel.base_url]) ?? 'The video generation failed upstream.';
      return { ...s, error: { code: s.error?.code ?? 'generation_failed', message } };
    } catch (err) {
      throw upstreamFailure(err, channel);
    }
  }

  const pollView = (s: VideoUpstreamStatus): VideoPoll =>
    s.state === 'queued' || s.state === 'processing' ? { state: s.state, progress: s.progress, retryAfterSeconds: s.retryAfterSeconds } : s.state === 'completed' ? { state: 'completed', progress: 100 } : { state: 'failed', progress: s.progress, error: s.error };

  /** Submits the task upstream once (a retry after a crash reuses the upstream id already recorded); the task as read. */
  async function submitOnce(taskId: string, signal: AbortSignal): Promise<{ upstreamId: string; task: VideoTask }> {
    const task = await taskOf(taskId);
    if (task.upstreamId) return { upstreamId: task.upstreamId, task };
    const channel = channelOf(task);
    const body = { ...task.request };
    if (channel.model_mapping?.[task.model]) body.model = channel.model_mapping[task.model];
    try {
      // The task id as the submit's Idempotency-Key: a submit repeated after a crash between the upstream's answer and
      // the record below starts no second task where the upstream honours it.
      const upstreamId = await adapterOf(channel).submit(channel, body, signal, await inputOf(task), `video:${taskId}`);
      await tasks.recordProgress(taskId, { status: 'queued', progress: 0, upstreamId });
      return { upstreamId, task };
    } catch (err) {
      throw upstreamFailure(err, channel);
    }
  }

  /**
   * Copies the finished file at `assetUrl` into the object store. Transient failures throw as they are;
   * VideoResultRefusedError when retrying cannot help.
   */
  async function copyResult(task: VideoTask, assetUrl: string, signal: AbortSignal): Promise<{ key: string; bytes: number; contentType: string }> {
    const channel = channelOf(task);
    const res = await adapterOf(channel).fetchAsset(channel, assetUrl, signal);
    if (res.status !== 200) {
      res.destroy();
      if (res.status === 429 || res.status >= 500) throw new Error(`the upstream answered ${res.status} for the file`);
      throw new VideoResultRefusedError(`the upstream answered ${res.status} for the file`);
    }
    const contentType = String(res.headers['content-type'] ?? 'application/octet-stream').split(';')[0].trim().toLowerCase();
    const declared = Number(res.headers['content-length']);
    if (!STORABLE_TYPE.test(contentType) || declared > deps.maxResultBytes) {
      res.destroy();
      throw new VideoResultRefusedError(STORABLE_TYPE.test(contentType) ? `the file is larger than ${deps.maxResultBytes} bytes` : `the file is not a video (${contentType.slice(0, 60)})`);
    }
    const key = resultKey(task.id);
    const state: { refusal?: VideoResultRefusedError } = {};
    let bytes: number;
    try {
      bytes = await store.put(key, Readable.from(limited(res.body, deps.maxResultBytes, state)), { contentType, size: declared || undefined }, signal);
    } catch (err) {
      throw state.refusal ?? err;
    }
    if (Number.isFinite(declared) && declared > 0 && bytes !== declared) {
      await store.delete(key);
      throw new Error(`the file was cut short (${bytes} of ${declared} bytes)`);
    }
    return { key, bytes, contentType };
  }

  /**
   * copyResult, retried (1 s doubling to 30 s) until `windowMs` has passed; then, or at once when it is refused, the
   * task keeps the upstream's link. What the upstream finished and where its copy is are one write.
   */
  async function keepResult(task: VideoTask, done: VideoUpstreamStatus, windowMs: number, signal: AbortSignal): Promise<void> {
    const result = { assetUrl: done.assetUrl!, duration: done.duration ?? null, resolution: done.resolution ?? null };
    const until = Date.now() + windowMs;
    let backoffMs = 1000;
    for (;;) {
      try {
        return await tasks.recordResult(task.id, { ...result, stored: await copyResult(task, result.assetUrl, signal) });
      } catch (err) {
        if (signal.aborted) throw err;
        if (err instanceof VideoResultRefusedError) return tasks.recordResult(task.id, { ...result, fallback: err.message });
        if (Date.now() + backoffMs >= until) return tasks.recordResult(task.id, { ...result, fallback: 'the copy did not complete within its window' });
        await sleep(backoffMs, undefined, { signal });
        backoffMs = Math.min(30_000, backoffMs * 2);
      }
    }
  }

  /** The first frame uploaded with the task, read back from the store. */
  async function inputOf(task: VideoTask): Promise<VideoInputReference | undefined> {
    const input = task.input;
    if (!input) return undefined;
    const body = await store.get(input.key);
    if (!body) throw new VideoRejectedError('the first frame of this task is no longer stored', 'input_reference_missing');
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    return { bytes: Buffer.concat(chunks), contentType: input.contentType, filename: input.filename };
  }

  /**
   * The end of a task, exactly once whatever the retries: completed settles the hold task:<id> into the ledger
   * (unique task_id) and records the result; anything else releases the hold and records why. One transaction.
   */
  async function endTask(taskId: string, outcome: VideoFinish): Promise<void> {
    const task = await taskOf(taskId);
    const hold = `task:${taskId}`;
    // The bill and the task's end commit together: a task never reads completed unbilled, nor billed unfinished.
    await deps.repos.transactions.run(async (tx) => {
      if (outcome.status === 'completed') {
        const result = await deps.billing.settleInTransaction(tx, hold, {
          actualAmount: task.quota,
          requestId: task.requestId,
          taskId,
          model: task.model,
          tokenName: task.tokenName,
          channel: task.channel,
          units: 1,
          unit: 'videos',
          latencyMs: Date.now() - task.createdAt.getTime(),
        });
        const billed = result.status === 'settled' ? result.billed : (task.billed ?? task.quota);
        await tasks.finish(taskId, { status: 'completed', duration: task.duration, resolution: task.resolution, billed }, tx);
      } else {
        await deps.billing.releaseInTransaction(tx, hold);
        await tasks.finish(taskId, { status: 'failed', errorCode: outcome.code, errorMessage: outcome.message }, tx);
      }
    });
    // The first frame served its purpose; a failure to delete it leaves a small orphan, not a wrong task.
    if (task.input) await store.delete(task.input.key).catch(() => undefined);
  }

  return {
    submitUpstream: async (taskId, signal) => (await submitOnce(taskId, signal)).upstreamId,

    /** One poll (the polling loop of older histories): progress, or the finished file's upstream URL, written. */
    async pollOnce(taskId, upstreamId, signal) {
      const task = await taskOf(taskId);
      const s = await pollUpstream(task, upstreamId, signal);
      if (s.state === 'queued' || s.state === 'processing') await tasks.recordProgress(taskId, { status: s.state, progress: s.progress });
      if (s.state === 'completed') await tasks.recordResult(taskId, { assetUrl: s.assetUrl!, duration: s.duration ?? null, resolution: s.resolution ?? null });
      return pollView(s);
    },

    async runUpstream(taskId, timing, signal, beat) {
      const { upstreamId, task } = await submitOnce(taskId, signal);
      // A retry after the task ended here (the activity's completion was lost): the end as the row has it.
      if (task.finishedAt) {
        return task.status === 'completed' ? { state: 'completed' } : { state: 'failed', error: { code: task.errorCode ?? 'generation_failed', message: task.errorMessage ?? '' } };
      }
      let waitMs = timing.minMs;
      for (;;) {
        const left = timing.deadlineAtMs - Date.now();
        if (left <= 0) return { state: 'timeout' };
        await sleep(Math.min(waitMs, left), undefined, { signal });
        if (Date.now() >= timing.deadlineAtMs) return { state: 'timeout' };
        const s = await pollUpstream(task, upstreamId, signal);
        beat(s.progress);
        // The upstream's end is the task's end, written here: a task reads finished as soon as the worker knows,
        // whatever the workflow engine's backlog (the workflow's own end of it is then a no-op).
        if (s.state === 'failed') {
          await endTask(taskId, { status: 'failed', code: s.error!.code, message: s.error!.message });
          return { state: 'failed', error: s.error! };
        }
        if (s.state === 'completed') {
          await keepResult(task, s, timing.resultWindowMs, signal);
          await endTask(taskId, { status: 'completed' });
          return { state: 'completed' };
        }
        progress.record(taskId, s.state, s.progress);
        waitMs = nextPollWait(waitMs, timing, s.retryAfterSeconds);
      }
    },

    async cancelUpstream(taskId, givenUpstreamId, signal) {
      const task = await taskOf(taskId);
      const upstreamId = givenUpstreamId ?? task.upstreamId;
      if (!upstreamId) return;
      const channel = config.current().channels.find((c) => c.name === task.channel);
      const adapter = channel && deps.adapters(channel.type);
      if (channel && adapter) await adapter.cancel(channel, upstreamId, signal);
    },

    async deleteExpiredResults(retentionSeconds, signal) {
      let deleted = 0;
      while (!signal.aborted) {
        const batch = await tasks.expiredResults(retentionSeconds, 200);
        if (batch.length === 0) break;
        for (const r of batch) await store.delete(r.key);
        await tasks.markResultsDeleted(batch.map((r) => r.taskId));
        deleted += batch.length;
      }
      return deleted;
    },

    endTask,
  };
}
