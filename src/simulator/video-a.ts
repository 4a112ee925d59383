import { checkVideoA } from './video-rules';
import { videoAError } from './errors';
import { json } from './reply';
import type { HandlerContext, Reply } from './types';
import { CANCELLED, retryAfterSeconds, videoFileUrl, type VideoTask } from './video-store';

/**
 * Video family A (spec "Video, family A"): POST /v1/videos, GET /v1/videos/{id}, GET /v1/videos/{id}/content,
 * and DELETE /v1/videos/{id} to cancel. States queued -> processing -> completed | failed.
 *
 * Simulator choices the spec leaves open: status reads carry `progress` and, when failed, `error:{code, message}`;
 * a content read before completion (or of a failed task) is 409 `video_not_ready`; DELETE of a task still
 * queued or processing cancels it (it reads back `failed`, error code `cancelled`) and answers the record;
 * DELETE of a finished task is 409 `video_not_cancellable`.
 */

const FINISHED_SECONDS = 8;

/** Landscape models are 1280x720, the others portrait 720x1280. */
export function videoAResolution(model: string): string {
  return model.includes('landscape') ? '1280x720' : '720x1280';
}

export function videoACreate(ctx: HandlerContext): Reply {
  const v = checkVideoA(ctx.body);
  if (!v.ok) {
    const code = v.problem.field === 'model' ? 'invalid_model' : v.problem.field === 'prompt' ? 'invalid_prompt' : 'invalid_request';
    return videoAError(400, { message: v.problem.message, param: v.problem.field, code });
  }
  const task = ctx.video.store.create({
    id: ctx.id('video_'),
    family: 'A',
    model: v.value.model,
    prompt: v.value.prompt,
    generationMs: ctx.video.generationMs,
    duration: FINISHED_SECONDS,
    resolution: videoAResolution(v.value.model),
    forceFail: ctx.video.forceFail,
    failureRate: ctx.video.failureRate,
  });
  return json(200, { id: task.id, object: 'video', created: Math.floor(task.createdAt / 1000), status: 'queued', model: task.model });
}

const STATUS = { waiting: 'queued', running: 'processing', completed: 'completed', failed: 'failed' } as const;

function record(ctx: HandlerContext, task: VideoTask) {
  const s = ctx.video.store.snapshot(task);
  const body: Record<string, unknown> = {
    id: task.id,
    object: 'video',
    created: Math.floor(task.createdAt / 1000),
    status: STATUS[s.phase],
    model: task.model,
    prompt: task.prompt,
    progress: s.progress,
  };
  if (s.failure) body.error = { ...s.failure };
  return { body, snapshot: s };
}

function notFound(id: string): Reply {
  return videoAError(404, { message: `Video ${id} not found.`, param: 'video_id', code: 'video_not_found' });
}

export function videoAStatus(ctx: HandlerContext, id: string): Reply {
  const task = ctx.video.store.get(id, 'A');
  if (!task) return notFound(id);
  const { body, snapshot } = record(ctx, task);
  const reply = json(200, body);
  if (snapshot.remainingMs > 0) reply.headers['retry-after'] = String(retryAfterSeconds('A', snapshot.remainingMs));
  return reply;
}

export function videoAContent(ctx: HandlerContext, id: string): Reply {
  const task = ctx.video.store.get(id, 'A');
  if (!task) return notFound(id);
  const { body, snapshot } = record(ctx, task);
  if (snapshot.phase !== 'completed') {
    const failed = snapshot.phase === 'failed';
    const reply = videoAError(409, {
      message: failed ? `Video ${id} failed: ${snapshot.failure?.message ?? 'generation failed'}` : `Video ${id} is not ready yet (status ${body.status as string}).`,
      param: 'video_id',
      code: 'video_not_ready',
    });
    if (!failed) reply.headers['retry-after'] = String(retryAfterSeconds('A', snapshot.remainingMs));
    return reply;
  }
  delete body.progress;
  return json(200, { ...body, url: videoFileUrl(ctx.baseUrl, task.id), duration: task.duration, resolution: task.resolution });
}

export function videoADelete(ctx: HandlerContext, id: string): Reply {
  const task = ctx.video.store.get(id, 'A');
  if (!task) return notFound(id);
  if (!ctx.video.store.cancel(id)) {
    return videoAError(409, { message: `Video ${id} has already finished and cannot be cancelled.`, param: 'video_id', code: 'video_not_cancellable' });
  }
  const { body } = record(ctx, task);
  return json(200, { ...body, error: { ...CANCELLED } });
}
