import { videoAError } from './errors';
import type { Form } from './multipart';
import { json } from './reply';
import type { HandlerContext, Reply } from './types';
import { fakeMp4, fileResponse, retryAfterSeconds, type VideoTask } from './video-store';

/**
 * OpenAI's own video API, under /openai (a channel's base_url is `<simulator>/openai`): POST /v1/videos takes
 * multipart/form-data (`model`, `prompt`, `seconds`, `size`, an optional `input_reference` file) or JSON; GET
 * /v1/videos/{id} answers `queued`, `in_progress`, `completed` or `failed`; GET /v1/videos/{id}/content answers
 * the file's bytes (auth required, Range honoured; 404 once deleteVideoFiles ran); DELETE cancels.
 */

export const OPENAI_VIDEO_PREFIX = '/openai/v1/videos';

const STATUS = { waiting: 'queued', running: 'in_progress', completed: 'completed', failed: 'failed' } as const;

function fieldsOf(body: unknown): Record<string, unknown> {
  if (body && typeof body === 'object' && 'fields' in body && 'files' in body) return (body as Form).fields;
  return body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
}

function record(ctx: HandlerContext, task: VideoTask): Record<string, unknown> {
  const s = ctx.video.store.snapshot(task);
  const body: Record<string, unknown> = {
    id: task.id,
    object: 'video',
    created_at: Math.floor(task.createdAt / 1000),
    status: STATUS[s.phase],
    model: task.model,
    progress: s.progress,
    seconds: String(task.duration),
    size: task.resolution,
  };
  if (s.phase === 'completed') body.completed_at = Math.floor((task.createdAt + task.generationMs) / 1000);
  if (s.failure) body.error = { ...s.failure };
  return body;
}

const notFound = (id: string) => videoAError(404, { message: `Video ${id} not found.`, param: 'video_id', code: 'video_not_found' });

export function openaiVideoCreate(ctx: HandlerContext): Reply {
  const f = fieldsOf(ctx.body);
  if (typeof f.prompt !== 'string' || f.prompt.length === 0) return videoAError(400, { message: 'prompt is required', param: 'prompt', code: 'missing_required_parameter' });
  const model = typeof f.model === 'string' ? f.model : 'sora-2';
  const seconds = Number(f.seconds ?? 4);
  const task = ctx.video.store.create({
    id: ctx.id('video_'),
    family: 'A',
    model,
    prompt: f.prompt,
    generationMs: ctx.video.generationMs,
    duration: Number.isFinite(seconds) && seconds > 0 ? seconds : 4,
    resolution: typeof f.size === 'string' ? f.size : '720x1280',
    forceFail: ctx.video.forceFail,
    failureRate: ctx.video.failureRate,
  });
  return json(200, record(ctx, task));
}

export function openaiVideoStatus(ctx: HandlerContext, id: string): Reply {
  const task = ctx.video.store.get(id, 'A');
  if (!task) return notFound(id);
  const reply = json(200, record(ctx, task));
  const s = ctx.video.store.snapshot(task);
  if (s.remainingMs > 0) reply.headers['retry-after'] = String(retryAfterSeconds('A', s.remainingMs));
  return reply;
}

export function openaiVideoContent(ctx: HandlerContext, id: string): Reply {
  const task = ctx.video.store.get(id, 'A');
  if (!task || task.fileDeleted) return notFound(id);
  if (ctx.video.store.snapshot(task).phase !== 'completed') {
    return videoAError(409, { message: `Video ${id} is not ready.`, param: 'video_id', code: 'video_not_ready' });
  }
  const range = ctx.headers.range;
  const f = fileResponse(fakeMp4(task.id), typeof range === 'string' ? range : undefined, 'video/mp4');
  return { status: f.status, headers: f.headers, pieces: [f.body], stream: false };
}

export function openaiVideoDelete(ctx: HandlerContext, id: string): Reply {
  const task = ctx.video.store.get(id, 'A');
  if (!task) return notFound(id);
  ctx.video.store.cancel(id);
  return json(200, { id, object: 'video.deleted', deleted: true });
}
