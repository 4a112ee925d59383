import { createHash } from 'node:crypto';
import type { OutgoingHttpHeaders } from 'node:http';
import { videoBError } from './errors';
import { raw } from './reply';
import type { HandlerContext, Reply } from './types';
import { seededRandom } from './seeded-random';

/**
 * In-memory video tasks of the simulator, shared by the three families. A task's state is a function of the
 * time since submission: the first tenth of `generationMs` is the waiting phase (A `queued`, B `submitted`,
 * C `processing`), then it runs with progress rising linearly to 99, and at `generationMs` it is `completed`
 * (progress 100) or, when it was set to fail, `failed` (progress where it stopped). A cancelled task is
 * `failed` with code `cancelled` from the moment of cancelling.
 */

export type VideoFamily = 'A' | 'B' | 'C';
export type VideoPhase = 'waiting' | 'running' | 'completed' | 'failed';

export interface VideoFailure {
  code: string;
  message: string;
}

export interface VideoTask {
  id: string;
  family: VideoFamily;
  model: string;
  prompt: string;
  /** Date.now() at submission. */
  createdAt: number;
  generationMs: number;
  /** Set at submission for tasks that will fail, at cancel for cancelled ones. */
  failure?: VideoFailure;
  /** Date.now() of the cancel; the task reads `failed` from then on. */
  cancelledAt?: number;
  /** Its file was deleted (deleteFinishedFiles): links answer 404. */
  fileDeleted?: boolean;
  /** Seconds, and `<w>x<h>`, of the finished video. */
  duration: number;
  resolution: string;
}

export interface VideoSnapshot {
  phase: VideoPhase;
  /** Integer percent. */
  progress: number;
  /** Milliseconds until the task ends; 0 once it has. */
  remainingMs: number;
  failure?: VideoFailure;
}

/** Simulator file size of every fake MP4 (bytes). */
export const FAKE_MP4_BYTES = 4096;
/** Tasks kept; the oldest are forgotten beyond this. */
const MAX_TASKS = 10_000;
const WAITING_SHARE = 0.1;

export const GENERATION_FAILURE: VideoFailure = { code: 'generation_failed', message: 'Simulated video generation failure.' };
export const CANCELLED: VideoFailure = { code: 'cancelled', message: 'The task was cancelled.' };

export class VideoStore {
  private readonly tasks = new Map<string, VideoTask>();
  private random: () => number;

  constructor(seed = 1, private readonly now: () => number = Date.now) {
    this.random = seededRandom(seed);
  }

  /** Restarts the failure draws (setOptions({videoSeed})). */
  reseed(seed: number): void {
    this.random = seededRandom(seed);
  }

  /**
   * Adds a task. It fails when `forceFail`, when the prompt has the word "fail", or when the seeded draw falls
   * under `failureRate`; the draw is made for every task so one forced failure does not shift the others.
   */
  create(t: Omit<VideoTask, 'createdAt' | 'failure'> & { forceFail?: boolean; failureRate?: number }): VideoTask {
    const draw = this.random();
    const fails = t.forceFail === true || /\bfail\b/i.test(t.prompt) || draw < (t.failureRate ?? 0);
    const task: VideoTask = {
      id: t.id,
      family: t.family,
      model: t.model,
      prompt: t.prompt,
      createdAt: this.now(),
      generationMs: t.generationMs,
      duration: t.duration,
      resolution: t.resolution,
    };
    if (fails) task.failure = GENERATION_FAILURE;
    this.tasks.set(task.id, task);
    if (this.tasks.size > MAX_TASKS) this.tasks.delete(this.tasks.keys().next().value as string);
    return task;
  }

  get(id: string, family?: VideoFamily): VideoTask | undefined {
    const t = this.tasks.get(id);
    return t && (family === undefined || t.family === family) ? t : undefined;
  }

  snapshot(t: VideoTask): VideoSnapshot {
    const elapsed = (t.cancelledAt ?? this.now()) - t.createdAt;
    const running = Math.min(99, Math.max(0, Math.floor((100 * elapsed) / Math.max(1, t.generationMs))));
    if (t.cancelledAt !== undefined) return { phase: 'failed', progress: running, remainingMs: 0, failure: t.failure };
    if (elapsed >= t.generationMs) {
      return t.failure ? { phase: 'failed', progress: 99, remainingMs: 0, failure: t.failure } : { phase: 'completed', progress: 100, remainingMs: 0 };
    }
    const phase: VideoPhase = elapsed < t.generationMs * WAITING_SHARE ? 'waiting' : 'running';
    return { phase, progress: phase === 'waiting' ? 0 : running, remainingMs: t.generationMs - elapsed };
  }

  /** Deletes the files of the tasks completed so far; how many. */
  deleteFinishedFiles(): number {
    let n = 0;
    for (const t of this.tasks.values()) {
      if (!t.fileDeleted && this.snapshot(t).phase === 'completed') {
        t.fileDeleted = true;
        n++;
      }
    }
    return n;
  }

  /** Cancels a task still waiting or running; false when it has already ended (or is unknown). */
  cancel(id: string): boolean {
    const t = this.tasks.get(id);
    if (!t) return false;
    const s = this.snapshot(t);
    if (s.phase === 'completed' || s.phase === 'failed') return false;
    t.cancelledAt = this.now();
    t.failure = CANCELLED;
    return true;
  }

  clear(): void {
    this.tasks.clear();
  }

  get size(): number {
    return this.tasks.size;
  }
}

/**
 * The fake MP4 of a task: a valid `ftyp` box, then an `mdat` box of bytes derived from the id, FAKE_MP4_BYTES in
 * all. The same id always gives the same bytes (ranges can be checked against the whole).
 */
export function fakeMp4(id: string): Buffer {
  const out = Buffer.alloc(FAKE_MP4_BYTES);
  // ftyp: size 24, 'ftyp', major 'isom', minor 0x200, compatible 'isom', 'mp41'.
  out.writeUInt32BE(24, 0);
  out.write('ftypisom', 4, 'latin1');
  out.writeUInt32BE(0x200, 12);
  out.write('isommp41', 16, 'latin1');
  out.writeUInt32BE(FAKE_MP4_BYTES - 24, 24);
  out.write('mdat', 28, 'latin1');
  let block = createHash('sha256').update(`sim-video:${id}`).digest();
  for (let off = 32; off < FAKE_MP4_BYTES; off += block.length) {
    block.copy(out, off);
    block = createHash('sha256').update(block).digest();
  }
  return out;
}

/** Where a finished task's bytes are served, without auth. */
export function videoFileUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/files/video/${encodeURIComponent(id)}.mp4`;
}

// ---- serving --------------------------------------------------------------------------------------------


/**
 * The `retry-after` hint (whole seconds) of a poll of an unfinished task: the family's poll interval (A 5 s,
 * B 10 s, C 5 s), shortened to the time left, never under 1 s.
 */
export function retryAfterSeconds(family: VideoFamily, remainingMs: number): number {
  const interval = family === 'B' ? 10 : 5;
  return Math.max(1, Math.min(interval, Math.ceil(remainingMs / 1000)));
}

export interface ByteRange {
  start: number;
  /** Inclusive. */
  end: number;
}

/**
 * A single `Range: bytes=...` against a body of `size` bytes (RFC 9110 §14): a range, 'unsatisfiable' (416), or
 * undefined to serve the whole body (no header, another unit, several ranges, or a syntax the server may ignore).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? Infinity : Number(m[2]);
  if (end < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end: Math.min(end, size - 1) };
}

/** Status, headers and body of a file read, honouring `Range`. */
export function fileResponse(bytes: Buffer, range: string | undefined, contentType: string): { status: number; headers: OutgoingHttpHeaders; body: Buffer } {
  const headers: OutgoingHttpHeaders = { 'content-type': contentType, 'accept-ranges': 'bytes', 'cache-control': 'private, max-age=86400' };
  const r = parseRange(range, bytes.length);
  if (r === 'unsatisfiable') return { status: 416, headers: { ...headers, 'content-range': `bytes */${bytes.length}` }, body: Buffer.alloc(0) };
  if (!r) return { status: 200, headers, body: bytes };
  return { status: 206, headers: { ...headers, 'content-range': `bytes ${r.start}-${r.end}/${bytes.length}` }, body: bytes.subarray(r.start, r.end + 1) };
}

/**
 * GET /files/video/<id>.mp4 (no auth): the fake MP4 of a completed task, honouring `Range`. Unknown or
 * unfinished tasks are 404. Family B links refuse an Authorization header with 403, as the spec says.
 */
export function videoFile(ctx: HandlerContext, id: string): Reply {
  const task = ctx.video.store.get(id);
  if (!task || task.fileDeleted || ctx.video.store.snapshot(task).phase !== 'completed') return raw(404, 'text/plain; charset=utf-8', 'Not found.\n');
  if (task.family === 'B' && ctx.headers.authorization !== undefined) {
    return videoBError(403, { code: 'AccessDenied', message: 'Result links take no credentials: send the request without Authorization.', requestId: ctx.requestId });
  }
  const range = ctx.headers.range;
  const f = fileResponse(fakeMp4(task.id), typeof range === 'string' ? range : undefined, 'video/mp4');
  return { status: f.status, headers: f.headers, pieces: [f.body], stream: false };
}
