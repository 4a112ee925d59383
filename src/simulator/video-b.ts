import { checkVideoB } from './video-rules';
import { videoBError } from './errors';
import { json } from './reply';
import type { HandlerContext, Reply } from './types';
import { retryAfterSeconds, videoFileUrl } from './video-store';

/**
 * Video family B (spec "Video, family B"): submit
 * POST /vendorA/api/v1/services/aigc/video-generation/video-synthesis with `X-Vendor-Async: enable`
 * -> `{output:{task_id, task_status:'PENDING'}, request_id}`; poll GET /v1/tasks/{id}
 * -> `{status, progress, result_url, task_id}`, statuses submitted -> in_progress -> completed | failed.
 * A failed poll is `{status:'failed', progress, task_id, result_url:null, error:{code, message}}`. The completed
 * poll also carries `duration` and `resolution`. `result_url` is downloaded WITHOUT Authorization (403 with it).
 *
 * Cancel (simulator, modelled on the vendor's own): POST /v1/tasks/{id}/cancel -> `{request_id}` while the task
 * has not finished; 400 `UnsupportedOperation` once it has.
 */

const RESOLUTIONS: Record<string, Record<string, string>> = {
  '1080P': { '16:9': '1920x1080', '9:16': '1080x1920', '1:1': '1440x1440', '4:3': '1632x1248', '3:4': '1248x1632' },
  '720P': { '16:9': '1280x720', '9:16': '720x1280', '1:1': '960x960', '4:3': '1088x832', '3:4': '832x1088' },
};

/** `<w>x<h>` of a request: its resolution and ratio (16:9 when there is none: first frame, vendorC). */
export function videoBResolution(r: { resolution: string; ratio: string }): string {
  return RESOLUTIONS[r.resolution][r.ratio];
}

export function videoBSubmit(ctx: HandlerContext): Reply {
  const requestId = ctx.requestId;
  const asyncHeader = ctx.headers['x-vendor-async'];
  if (typeof asyncHeader !== 'string' || asyncHeader.trim().toLowerCase() !== 'enable') {
    return videoBError(400, { code: 'InvalidParameter', message: 'X-Vendor-Async: enable is required: this API only runs asynchronously.', requestId });
  }
  const v = checkVideoB(ctx.body);
  if (!v.ok) return videoBError(400, { code: 'InvalidParameter', message: v.problem.message, requestId });
  const task = ctx.video.store.create({
    id: ctx.id('task-'),
    family: 'B',
    model: v.value.model,
    prompt: v.value.prompt,
    generationMs: ctx.video.generationMs,
    duration: v.value.duration,
    resolution: videoBResolution(v.value),
    forceFail: ctx.video.forceFail,
    failureRate: ctx.video.failureRate,
  });
  return json(200, { output: { task_id: task.id, task_status: 'PENDING' }, request_id: requestId });
}

const STATUS = { waiting: 'submitted', running: 'in_progress', completed: 'completed', failed: 'failed' } as const;

export function videoBPoll(ctx: HandlerContext, id: string): Reply {
  const task = ctx.video.store.get(id, 'B');
  if (!task) return videoBError(404, { code: 'TaskNotFound', message: `Task ${id} not found.`, requestId: ctx.requestId });
  const s = ctx.video.store.snapshot(task);
  const body: Record<string, unknown> = { status: STATUS[s.phase], progress: s.progress, result_url: null, task_id: task.id };
  if (s.phase === 'completed') {
    body.result_url = videoFileUrl(ctx.baseUrl, task.id);
    body.duration = task.duration;
    body.resolution = task.resolution;
  }
  if (s.failure) body.error = { ...s.failure };
  const reply = json(200, body);
  if (s.remainingMs > 0) reply.headers['retry-after'] = String(retryAfterSeconds('B', s.remainingMs));
  return reply;
}

export function videoBCancel(ctx: HandlerContext, id: string): Reply {
  const requestId = ctx.requestId;
  if (!ctx.video.store.get(id, 'B')) return videoBError(404, { code: 'TaskNotFound', message: `Task ${id} not found.`, requestId });
  if (!ctx.video.store.cancel(id)) return videoBError(400, { code: 'UnsupportedOperation', message: `Task ${id} has already finished.`, requestId });
  return json(200, { request_id: requestId });
}
