import type { VideoTask } from './tasks';

/**
 * Each family's view of a task: what its GET answers (and so what a webhook for it carries). `link` gives the
 * signed gateway URL of a completed task's file; the upstream's own URL never appears.
 */
export type LinkOf = (taskId: string) => string;

const seconds = (d: Date) => Math.floor(d.getTime() / 1000);
const errorOf = (t: VideoTask) => ({ code: t.errorCode ?? 'generation_failed', message: t.errorMessage ?? 'The video generation failed.' });

/** Family A: `{id, object:'video', created, status, model, prompt, progress}` (+ error when failed). */
export function videoAView(t: VideoTask): Record<string, unknown> {
  const v: Record<string, unknown> = { id: t.id, object: 'video', created: seconds(t.createdAt), status: t.status, model: t.model, prompt: t.prompt, progress: t.progress };
  if (t.status === 'failed') v.error = errorOf(t);
  return v;
}

export function videoACreated(t: VideoTask): Record<string, unknown> {
  return { id: t.id, object: 'video', created: seconds(t.createdAt), status: t.status, model: t.model };
}

/** The content read of a completed family A task. */
export function videoAContent(t: VideoTask, link: LinkOf): Record<string, unknown> {
  const { progress: _progress, ...v } = videoAView(t);
  return { ...v, url: link(t.id), duration: t.duration, resolution: t.resolution };
}

const B_STATUS = { queued: 'submitted', processing: 'in_progress', completed: 'completed', failed: 'failed' } as const;

/** Family B poll: `{status, progress, result_url, task_id}` (+ error when failed; duration, resolution when done). */
export function videoBView(t: VideoTask, link: LinkOf): Record<string, unknown> {
  const v: Record<string, unknown> = { status: B_STATUS[t.status], progress: t.progress, result_url: null, task_id: t.id };
  if (t.status === 'completed') Object.assign(v, { result_url: link(t.id), duration: t.duration, resolution: t.resolution });
  if (t.status === 'failed') v.error = errorOf(t);
  return v;
}

export function videoBCreated(t: VideoTask): Record<string, unknown> {
  return { output: { task_id: t.id, task_status: 'PENDING' }, request_id: t.requestId };
}

const C_STATUS = { queued: 'processing', processing: 'processing', completed: 'completed', failed: 'failed' } as const;
const C_MESSAGE = { processing: 'Task is processing.', completed: 'Task completed.', failed: 'Task failed.' } as const;

/** Family C status: `{success:true, data:{taskId, status, message, progress, video_url?, ...}}`. */
export function videoCView(t: VideoTask, link: LinkOf, pollingUrl: string): Record<string, unknown> {
  const status = C_STATUS[t.status];
  const data: Record<string, unknown> = { taskId: t.id, pollingUrl, status, message: C_MESSAGE[status], progress: t.progress };
  if (t.status === 'completed') Object.assign(data, { video_url: link(t.id), duration: t.duration, resolution: t.resolution });
  if (t.status === 'failed') Object.assign(data, { error: errorOf(t), message: t.errorMessage ?? C_MESSAGE.failed });
  return { success: true, data };
}

export function videoCCreated(t: VideoTask, pollingUrl: string): Record<string, unknown> {
  return { success: true, data: { taskId: t.id, pollingUrl, status: 'processing', message: 'Task submitted.' } };
}

const C_STATUS_PATH = '/vendorB/v1/api/video/status/';

/** A finished task as its family's GET shows it (family A: the content read when completed): a webhook's body. */
export function videoFinalView(t: VideoTask, link: LinkOf, origin: string): Record<string, unknown> {
  if (t.family === 'A') return t.status === 'completed' ? videoAContent(t, link) : videoAView(t);
  if (t.family === 'B') return videoBView(t, link);
  return videoCView(t, link, `${origin}${C_STATUS_PATH}${encodeURIComponent(t.id)}`);
}
