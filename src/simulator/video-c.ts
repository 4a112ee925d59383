import { randomUUID } from 'node:crypto';
import { checkVideoC } from './video-rules';
import { videoCError } from './errors';
import { json } from './reply';
import type { HandlerContext, Reply } from './types';
import { retryAfterSeconds, videoFileUrl } from './video-store';

/**
 * Video family C (spec "Video, family C"; the completed URL is `data.video_url`): submit
 * POST /vendorB/v1/api/video/submit -> `{success:true, data:{taskId:'<model>:<uuid>', pollingUrl, status:'processing', message}}`;
 * status GET /vendorB/v1/api/video/status/{taskId} -> `{success:true, data:{taskId, status, message, progress, ...}}`,
 * statuses processing -> completed | failed; completed adds `video_url`, `duration`, `resolution`; failed adds
 * `error_code` (the reason is `message`). Unknown task: 404 `TASK_NOT_FOUND`.
 *
 * Cancel (simulator): POST /vendorB/v1/api/video/cancel/{taskId} -> the task, now failed with `error_code:'cancelled'`;
 * 400 `TASK_NOT_CANCELLABLE` once it has finished.
 */

const RESOLUTION: Record<string, string> = { video3: '1280x720', 'video3-fast': '1280x720', 'video3-pro': '1920x1080', 'video3-pro-frames': '1920x1080' };
const DURATION = 8;
export const VIDEO_C_STATUS_PATH = '/vendorB/v1/api/video/status/';

export function videoCSubmit(ctx: HandlerContext): Reply {
  const v = checkVideoC(ctx.body);
  if (!v.ok) {
    const field = v.problem.field;
    return videoCError(400, { code: field === 'prompt' ? 'INVALID_PROMPT' : field === 'model' ? 'INVALID_MODEL' : 'INVALID_PARAMETER', message: v.problem.message, field });
  }
  const task = ctx.video.store.create({
    id: `${v.value.model}:${randomUUID()}`,
    family: 'C',
    model: v.value.model,
    prompt: v.value.prompt,
    generationMs: ctx.video.generationMs,
    duration: DURATION,
    resolution: RESOLUTION[v.value.model],
    forceFail: ctx.video.forceFail,
    failureRate: ctx.video.failureRate,
  });
  return json(200, {
    success: true,
    data: { taskId: task.id, pollingUrl: `${ctx.baseUrl}${VIDEO_C_STATUS_PATH}${encodeURIComponent(task.id)}`, status: 'processing', message: 'Task submitted.' },
  });
}

function notFound(id: string): Reply {
  return videoCError(404, { code: 'TASK_NOT_FOUND', message: `Task ${id} not found.`, field: 'taskId' });
}

function data(ctx: HandlerContext, id: string) {
  const task = ctx.video.store.get(id, 'C');
  if (!task) return undefined;
  const s = ctx.video.store.snapshot(task);
  const d: Record<string, unknown> = { taskId: task.id, status: s.phase === 'waiting' || s.phase === 'running' ? 'processing' : s.phase, progress: s.progress };
  if (s.phase === 'completed') {
    d.message = 'Video generated.';
    d.video_url = videoFileUrl(ctx.baseUrl, task.id);
    d.duration = task.duration;
    d.resolution = task.resolution;
  } else if (s.failure) {
    d.message = s.failure.message;
    d.error_code = s.failure.code;
  } else d.message = 'Generating.';
  return { d, s };
}

export function videoCStatus(ctx: HandlerContext, id: string): Reply {
  const r = data(ctx, id);
  if (!r) return notFound(id);
  const reply = json(200, { success: true, data: r.d });
  if (r.s.remainingMs > 0) reply.headers['retry-after'] = String(retryAfterSeconds('C', r.s.remainingMs));
  return reply;
}

export function videoCCancel(ctx: HandlerContext, id: string): Reply {
  if (!ctx.video.store.get(id, 'C')) return notFound(id);
  if (!ctx.video.store.cancel(id)) return videoCError(400, { code: 'TASK_NOT_CANCELLABLE', message: `Task ${id} has already finished.`, field: 'taskId' });
  return json(200, { success: true, data: data(ctx, id)!.d });
}
