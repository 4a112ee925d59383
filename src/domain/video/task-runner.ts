import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'pg';
import { inTransaction } from '../../db/pool';
import type { ChannelConfig } from '../../gateway-config/schema';
import type { ConfigStore } from '../../gateway-config/store';
import { UpstreamError, sanitizeUpstreamMessage } from '../../upstream/errors';
import { fetchVideoAsset, videoAdapterOf, type VideoAdapter, type VideoInputReference } from '../../upstream/video';
import { release, settle } from '../billing/holds';
import type { ProgressWriter } from './progress-writer';
import { expiredResults, markResultsDeleted, recordResultFallback, recordStoredResult, videoInputOf, videoResultSource } from './results';
import { resultKey, type VideoObjectStore } from './store';
import { finishVideoTask, getVideoTask, recordVideoProgress, recordVideoResult, type VideoTask } from './tasks';

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

/** Poll interval bounds, ms. */
export interface PollTiming {
  minMs: number;
  maxMs: number;
}

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

/** The next wait: the upstream's hint within our bounds, otherwise backing off towards the longest interval. */
export function nextPollWait(waitMs: number, timing: PollTiming, retryAfterSeconds?: number): number {
  const hinted = retryAfterSeconds !== undefined ? retryAfterSeconds * 1000 : Math.round(waitMs * 1.5);
  return Math.min(Math.max(timing.minMs, timing.maxMs), Math.max(timing.minMs, hinted));
}

export interface VideoTaskRunner {
  /** Submits the task upstream once; a retry after a crash reuses the upstream id already recorded. */
  submitUpstream(taskId: string, signal: AbortSignal): Promise<string>;
  /** One poll: records progress (and, when completed, the file's upstream URL) on the task row. */
  pollOnce(taskId: string, upstreamId: string, signal: AbortSignal): Promise<VideoPoll>;
  /**
   * The whole upstream part of a task: submit (once), poll until its terminal state or the deadline (waiting
   * `minMs` first, then backing off), and on completion keep the file (retried within `resultWindowMs`, then the
   * upstream's link with the reason recorded). `beat` hears of every poll.
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
  db: Pool;
  config: ConfigStore;
  progress: ProgressWriter;
  store: VideoObjectStore;
  /** Largest file copied into the store (VIDEO_MAX_RESULT_BYTES). */
  maxResultBytes: number;
}

export function createVideoTaskRunner(deps: VideoTaskRunnerDeps): VideoTaskRunner {
  const { db, config, progress, store } = deps;

  async function taskOf(taskId: string): Promise<VideoTask> {
    const task = await getVideoTask(db, taskId);
    if (!task) throw new VideoRejectedError(`video task ${taskId} does not exist`, 'task_not_found');
    return task;
  }

  function channelOf(task: VideoTask): ChannelConfig {
    const channel = config.current().channels.find((c) => c.name === task.channel);
    if (!channel) throw new VideoRejectedError(`channel ${task.channel} is no longer configured`, 'channel_removed');
    return channel;
  }

  function adapterOf(channel: ChannelConfig): VideoAdapter {
    const adapter = videoAdapterOf(channel.type);
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

  async function pollOnce(taskId: string, upstreamId: string, signal: AbortSignal, batched = false): Promise<VideoPoll> {
    const task = await taskOf(taskId);
    const channel = channelOf(task);
    try {
      const s = await adapterOf(channel).poll(channel, upstreamId, signal);
      if (s.state === 'queued' || s.state === 'processing') {
        if (batched) progress.record(taskId, s.state, s.progress);
        else await recordVideoProgress(db, taskId, { status: s.state, progress: s.progress });
        return { state: s.state, progress: s.progress, retryAfterSeconds: s.retryAfterSeconds };
      }
      if (s.state === 'completed') {
        await recordVideoResult(db, taskId, { assetUrl: s.assetUrl!, duration: s.duration ?? null, resolution: s.resolution ?? null });
        return { state: 'completed', progress: 100 };
      }
      const message = sanitizeUpstreamMessage(s.error?.message, [channel.key, channel.base_url]) ?? 'The video generation failed upstream.';
      return { state: 'failed', progress: s.progress, error: { code: s.error?.code ?? 'generation_failed', message } };
    } catch (err) {
      throw upstreamFailure(err, channel);
    }
  }

  /** Submits the task upstream once; a retry after a crash reuses the upstream id already recorded. */
  async function submitUpstream(taskId: string, signal: AbortSignal): Promise<string> {
    const task = await taskOf(taskId);
    if (task.upstreamId) return task.upstreamId;
    const channel = channelOf(task);
    const body = { ...task.request };
    if (channel.model_mapping?.[task.model]) body.model = channel.model_mapping[task.model];
    try {
      const upstreamId = await adapterOf(channel).submit(channel, body, signal, await inputOf(taskId));
      await recordVideoProgress(db, taskId, { status: 'queued', progress: 0, upstreamId });
      return upstreamId;
    } catch (err) {
      throw upstreamFailure(err, channel);
    }
  }

  /**
   * Copies the finished file into the object store. Transient failures throw as they are; VideoResultRefusedError
   * when retrying cannot help.
   */
  async function keepResult(taskId: string, signal: AbortSignal): Promise<void> {
    const source = await videoResultSource(db, taskId);
    if (!source) throw new VideoRejectedError(`video task ${taskId} does not exist`, 'task_not_found');
    if (source.stored) return;
    if (!source.assetUrl) throw new VideoResultRefusedError('the upstream gave no file');
    const task = await taskOf(taskId);
    const channel = channelOf(task);
    const res = await fetchVideoAsset(adapterOf(channel), channel, source.assetUrl, signal);
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
    const key = resultKey(taskId);
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
    await recordStoredResult(db, taskId, { key, bytes, contentType });
  }

  /**
   * keepResult, retried (1 s doubling to 30 s) until `windowMs` has passed; then, or at once when it is refused, the
   * task keeps the upstream's link and the reason is recorded.
   */
  async function keepOrFallBack(taskId: string, windowMs: number, signal: AbortSignal): Promise<void> {
    const until = Date.now() + windowMs;
    let backoffMs = 1000;
    for (;;) {
      try {
        await keepResult(taskId, signal);
        return;
      } catch (err) {
        if (signal.aborted) throw err;
        if (err instanceof VideoResultRefusedError) return recordResultFallback(db, taskId, err.message);
        if (Date.now() + backoffMs >= until) return recordResultFallback(db, taskId, 'the copy did not complete within its window');
        await sleep(backoffMs, undefined, { signal });
        backoffMs = Math.min(30_000, backoffMs * 2);
      }
    }
  }

  /** The first frame uploaded with the task, read back from the store. */
  async function inputOf(taskId: string): Promise<VideoInputReference | undefined> {
    const input = await videoInputOf(db, taskId);
    if (!input) return undefined;
    const body = await store.get(input.key);
    if (!body) throw new VideoRejectedError('the first frame of this task is no longer stored', 'input_reference_missing');
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    return { bytes: Buffer.concat(chunks), contentType: input.contentType, filename: input.filename };
  }

  return {
    submitUpstream,

    pollOnce: (taskId, upstreamId, signal) => pollOnce(taskId, upstreamId, signal),

    async runUpstream(taskId, timing, signal, beat) {
      const upstreamId = await submitUpstream(taskId, signal);
      let waitMs = timing.minMs;
      for (;;) {
        const left = timing.deadlineAtMs - Date.now();
        if (left <= 0) return { state: 'timeout' };
        await sleep(Math.min(waitMs, left), undefined, { signal });
        if (Date.now() >= timing.deadlineAtMs) return { state: 'timeout' };
        const s = await pollOnce(taskId, upstreamId, signal, true);
        beat(s.progress);
        if (s.state === 'failed') return { state: 'failed', error: s.error! };
        if (s.state === 'completed') {
          await keepOrFallBack(taskId, timing.resultWindowMs, signal);
          return { state: 'completed' };
        }
        waitMs = nextPollWait(waitMs, timing, s.retryAfterSeconds);
      }
    },

    async cancelUpstream(taskId, givenUpstreamId, signal) {
      const task = await taskOf(taskId);
      const upstreamId = givenUpstreamId ?? task.upstreamId;
      if (!upstreamId) return;
      const channel = config.current().channels.find((c) => c.name === task.channel);
      const adapter = channel && videoAdapterOf(channel.type);
      if (channel && adapter) await adapter.cancel(channel, upstreamId, signal);
    },

    async deleteExpiredResults(retentionSeconds, signal) {
      let deleted = 0;
      while (!signal.aborted) {
        const batch = await expiredResults(db, retentionSeconds, 200);
        if (batch.length === 0) break;
        for (const r of batch) await store.delete(r.key);
        await markResultsDeleted(db, batch.map((r) => r.taskId));
        deleted += batch.length;
      }
      return deleted;
    },

    async endTask(taskId, outcome) {
      const task = await taskOf(taskId);
      const hold = `task:${taskId}`;
      // The bill and the task's end commit together: a task never reads completed unbilled, nor billed unfinished.
      await inTransaction(db, async (tx) => {
        if (outcome.status === 'completed') {
          const result = await settle(tx, hold, {
            actualAmount: task.quota,
            requestId: task.requestId,
            taskId,
            model: task.model,
            tokenName: task.tokenName,
            channel: task.channel,
            units: 1,
            latencyMs: Date.now() - task.createdAt.getTime(),
          });
          const billed = result.status === 'settled' ? result.billed : (task.billed ?? task.quota);
          await finishVideoTask(tx, taskId, { status: 'completed', duration: task.duration, resolution: task.resolution, billed });
        } else {
          await release(tx, hold);
          await finishVideoTask(tx, taskId, { status: 'failed', errorCode: outcome.code, errorMessage: outcome.message });
        }
      });
      // The first frame served its purpose; a failure to delete it leaves a small orphan, not a wrong task.
      const input = await videoInputOf(db, taskId);
      if (input) await store.delete(input.key).catch(() => undefined);
    },
  };
}
