import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Pool } from 'pg';
import { inTransaction } from '../db/pool';
import type { ConfigStore } from '../gateway-config/store';
import type { ChannelConfig } from '../gateway-config/schema';
import { release, settle } from '../domain/billing/holds';
import { finishVideoTask, getVideoTask, recordVideoProgress, recordVideoResult, type VideoTask } from '../domain/video/tasks';
import { UpstreamError, sanitizeUpstreamMessage } from '../upstream/errors';
import { VIDEO_ADAPTERS } from '../upstream/video';

/**
 * Activities of workflow video:<task id>. Inputs and results are ids, states and numbers: channel credentials are
 * read from the gateway config here, and the upstream's file URL is stored on the task row, never returned.
 */

export interface VideoPoll {
  state: 'queued' | 'processing' | 'completed' | 'failed';
  progress: number;
  retryAfterSeconds?: number;
  error?: { code: string; message: string };
}

export type VideoFinish = { status: 'completed' } | { status: 'failed'; code: string; message: string };

/** The upstream refused for good (a 4xx other than 429, or a task the upstream does not know): no retry. */
const PERMANENT = 'VideoUpstreamRejected';

async function taskOf(db: Pool, taskId: string): Promise<VideoTask> {
  const task = await getVideoTask(db, taskId);
  if (!task) throw ApplicationFailure.nonRetryable(`video task ${taskId} does not exist`, PERMANENT);
  return task;
}

function channelOf(config: ConfigStore, task: VideoTask): ChannelConfig {
  const channel = config.current().channels.find((c) => c.name === task.channel);
  if (!channel) throw ApplicationFailure.nonRetryable(`channel ${task.channel} is no longer configured`, PERMANENT);
  return channel;
}

/** Transient upstream failures are thrown as they are (the activity is retried); permanent ones end the task. */
function upstreamFailure(err: unknown, channel: ChannelConfig): unknown {
  if (err instanceof UpstreamError && !err.retryable) {
    const message = sanitizeUpstreamMessage(err.message, [channel.key, channel.base_url]) ?? 'the upstream refused the task';
    return ApplicationFailure.nonRetryable(message, PERMANENT, { code: err.upstreamCode ?? `upstream_${err.status ?? 'error'}` });
  }
  return err;
}

/** The running activity's cancellation: an upstream call in flight stops when the workflow cancels the activity. */
const cancelled = (): AbortSignal => Context.current().cancellationSignal;

export function createVideoActivities(deps: { db: Pool; config: ConfigStore }) {
  const { db, config } = deps;
  return {
    /** Submits the task upstream once; a retry after a crash reuses the upstream id already recorded. */
    async submitVideoUpstream(taskId: string): Promise<string> {
      const task = await taskOf(db, taskId);
      if (task.upstreamId) return task.upstreamId;
      const channel = channelOf(config, task);
      const body = { ...task.request };
      if (channel.model_mapping?.[task.model]) body.model = channel.model_mapping[task.model];
      try {
        const upstreamId = await VIDEO_ADAPTERS[task.family].submit(channel, body, cancelled());
        await recordVideoProgress(db, taskId, { status: 'queued', progress: 0, upstreamId });
        return upstreamId;
      } catch (err) {
        throw upstreamFailure(err, channel);
      }
    },

    /** One poll: records progress (and, when completed, the file's upstream URL) on the task row. */
    async pollVideoUpstream(taskId: string, upstreamId: string): Promise<VideoPoll> {
      const task = await taskOf(db, taskId);
      const channel = channelOf(config, task);
      try {
        const s = await VIDEO_ADAPTERS[task.family].poll(channel, upstreamId, cancelled());
        if (s.state === 'queued' || s.state === 'processing') {
          await recordVideoProgress(db, taskId, { status: s.state, progress: s.progress });
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
    },

    /** Best effort: the upstream stops working on a task we gave up (cancel, timeout). */
    async cancelVideoUpstream(taskId: string, upstreamId: string): Promise<void> {
      const task = await taskOf(db, taskId);
      const channel = config.current().channels.find((c) => c.name === task.channel);
      if (channel) await VIDEO_ADAPTERS[task.family].cancel(channel, upstreamId, cancelled());
    },

    /**
     * The end of a task, exactly once whatever the retries: completed settles the hold task:<id> into the ledger
     * (unique task_id) and records the result; anything else releases the hold and records why.
     */
    async endVideoTask(taskId: string, outcome: VideoFinish): Promise<void> {
      const task = await taskOf(db, taskId);
      const hold = `task:${taskId}`;
      if (outcome.status === 'completed') {
        // The bill and the task's end commit together: a task never reads completed unbilled, nor billed unfinished.
        await inTransaction(db, async (tx) => {
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
        });
        return;
      }
      await inTransaction(db, async (tx) => {
        await release(tx, hold);
        await finishVideoTask(tx, taskId, { status: 'failed', errorCode: outcome.code, errorMessage: outcome.message });
      });
    },
  };
}
