import { DomainError } from '../errors';

/**
 * Request rules of the three video families (spec "Video, family A/B/C", "Limits", "Errors" rules 4-5), as pure
 * functions from a parsed JSON body to a normalized request with every default applied, or to the first problem
 * found: the field (dotted path, e.g. `input.media[2].url`), a reason, and the code in the family's own vocabulary.
 *
 * The zod schemas in src/schemas/video-*.ts describe the same bodies for OpenAPI and type inference; they are
 * never stricter than these functions (a unit test holds them to that).
 *
 * Decisions where the contract says nothing (docs/api.md, "Video", states the outcome):
 * - Checks run model first (it decides the other rules), then the fields in table order; the first problem wins.
 * - A model id of another video family gets the model error with the path that serves it.
 * - Family B: `input.prompt` is required (non-empty) for every model; vendorA may send no media at all.
 *   `ratio` is validated when present, then dropped for vendorC and whenever a first frame is given.
 *   `reference_voice` must be https like the media URL; its 1-10 s length cannot be checked without fetching it.
 * - Prompts of families A and C: at most 32,000 characters. No prompt may contain NUL (PostgreSQL cannot store it).
 * - Family C `images`: http(s) URLs. Problems with fields other than prompt and model use `INVALID_PARAMETER`.
 * - Lengths are counted in Unicode code points (an emoji is one character).
 * - Unknown fields are dropped, never an error.
 */

import type { VideoFamily } from '../ports/video';

export type { VideoFamily } from '../ports/video';

// ---- model ids ---------------------------------------------------------------------------------------------

export const VIDEO_A_MODELS = [
  'video-3.1',
  'video-3.1-fl',
  'video-3.1-fast',
  'video-3.1-fast-fl',
  'video-3.1-landscape',
  'video-3.1-landscape-fl',
  'video-3.1-landscape-fast',
  'video-3.1-landscape-fast-fl',
] as const;
export type VideoAModel = (typeof VIDEO_A_MODELS)[number];

export const VIDEO_B_VENDOR_A_MODELS = ['vendorA-2.7-r2v', 'vendorA-2.6-r2v', 'vendorA-2.6-r2v-flash'] as const;
export const VIDEO_B_VENDOR_C_MODELS = ['vendorC-1.0-r2v'] as const;
export const VIDEO_B_MODELS = [...VIDEO_B_VENDOR_A_MODELS, ...VIDEO_B_VENDOR_C_MODELS] as const;
export type VideoBModel = (typeof VIDEO_B_MODELS)[number];

export const VIDEO_C_MODELS = ['video3', 'video3-fast', 'video3-pro', 'video3-pro-frames'] as const;
export type VideoCModel = (typeof VIDEO_C_MODELS)[number];
export const VIDEO_C_DEFAULT_MODEL: VideoCModel = 'video3';

/** Where each family is served (relative to `{base_url}`), for "wrong family" hints. */
export const VIDEO_FAMILY_PATHS: Record<VideoFamily, string> = {
  A: '/v1/videos',
  B: '/vendorA/api/v1/services/aigc/video-generation/video-synthesis',
  C: '/vendorB/v1/api/video/submit',
};

/** The video family a model id belongs to, or undefined. */
export function videoFamilyOf(model: string): VideoFamily | undefined {
  if ((VIDEO_A_MODELS as readonly string[]).includes(model)) return 'A';
  if ((VIDEO_B_MODELS as readonly string[]).includes(model)) return 'B';
  if ((VIDEO_C_MODELS as readonly string[]).includes(model)) return 'C';
  return undefined;
}

// ---- limits ------------------------------------------------------------------------------------------------

export const VIDEO_B_PROMPT_MAX = 5000;
export const VIDEO_PROMPT_MAX = 32_000;
export const VIDEO_B_RESOLUTIONS = ['720P', '1080P'] as const;
export const VIDEO_B_RATIOS = ['16:9', '9:16', '1:1', '4:3', '3:4'] as const;
export const VIDEO_B_MEDIA_TYPES = ['reference_image', 'reference_video', 'first_frame'] as const;
export const VIDEO_B_VENDOR_A_MAX_REFERENCES = 5;
export const VIDEO_B_VENDOR_A_MAX_FIRST_FRAMES = 1;
export const VIDEO_B_VENDOR_C_MIN_IMAGES = 1;
export const VIDEO_B_VENDOR_C_MAX_IMAGES = 9;
export const VIDEO_B_DURATION_MIN = 2;
export const VIDEO_B_DURATION_MAX = 15;
export const VIDEO_B_DURATION_MAX_WITH_VIDEO = 10;
export const VIDEO_B_DEFAULT_DURATION = 5;
export const VIDEO_C_MAX_IMAGES = 5;
export const VIDEO_URL_MAX = 4096;

export type VideoBResolution = (typeof VIDEO_B_RESOLUTIONS)[number];
export type VideoBRatio = (typeof VIDEO_B_RATIOS)[number];
export type VideoBMediaType = (typeof VIDEO_B_MEDIA_TYPES)[number];

// ---- normalized requests -----------------------------------------------------------------------------------

export interface VideoARequest {
  model: VideoAModel;
  prompt: string;
  /** Length asked for (the OpenAI clients' `seconds`), 1 to 60; billed for per_second prices. */
  seconds?: number;
  /** `<width>x<height>` asked for (the OpenAI clients' `size`), passed upstream. */
  size?: string;
}

/** Image types a first frame (`input_reference`) may have, and its largest size. */
export const INPUT_REFERENCE_TYPES = ['image/jpeg', 'image/png', 'image/webp'] as const;
export const INPUT_REFERENCE_MAX_BYTES = 10 * 1024 * 1024;

/** The image type of a file by its first bytes (PNG, JPEG, WebP), for uploads sent as untyped bytes. */
export function sniffImageType(bytes: Buffer): string | null {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 12 && bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WEBP') return 'image/webp';
  return null;
}

/** A first frame uploaded with a family A submit: only `-fl` models take one; an image, at most 10 MiB. */
export function validateInputReference(model: string, file: { contentType: string; bytes: number }): VideoValidation<true> {
  if (!model.endsWith('-fl')) {
    return { ok: false, problem: { family: 'A', status: 400, code: 'invalid_request', field: 'input_reference', reason: 'is taken by the frame-to-video models only (the -fl suffix)', message: `input_reference: is taken by the frame-to-video models only (the -fl suffix); ${model} is not one` } };
  }
  const type = file.contentType.split(';')[0].trim().toLowerCase();
  if (!(INPUT_REFERENCE_TYPES as readonly string[]).includes(type) || file.bytes === 0 || file.bytes > INPUT_REFERENCE_MAX_BYTES) {
    const reason = `must be a JPEG, PNG or WebP image of at most ${INPUT_REFERENCE_MAX_BYTES / 1024 / 1024} MiB`;
    return { ok: false, problem: { family: 'A', status: 400, code: 'invalid_image_file', field: 'input_reference', reason, message: `input_reference: ${reason}` } };
  }
  return { ok: true, value: true };
}

export interface VideoBMediaItem {
  type: VideoBMediaType;
  url: string;
  reference_voice?: string;
}

export interface VideoBRequest {
  model: VideoBModel;
  vendor: 'vendorA' | 'vendorC';
  input: { prompt: string; media: VideoBMediaItem[] };
  parameters: {
    resolution: VideoBResolution;
    /** Only for vendorA without a first frame. */
    ratio?: VideoBRatio;
    duration: number;
    prompt_extend: boolean;
    watermark: boolean;
  };
}

export interface VideoCRequest {
  model: VideoCModel;
  prompt: string;
  images: string[];
  enhance_prompt: boolean;
}

// ---- problems ----------------------------------------------------------------------------------------------

export interface VideoFieldProblem {
  family: VideoFamily;
  status: 400;
  /** A: `invalid_prompt` | `invalid_model`; B: `InvalidParameter`; C: `INVALID_PROMPT` | `INVALID_MODEL` | `INVALID_PARAMETER`. */
  code: string;
  /** Dotted path of the offending field, e.g. `parameters.duration`, `input.media[0].url`; `body` for the body itself. */
  field: string;
  /** Why, without the field name: `must be at most 5000 characters`. */
  reason: string;
  /** `<field>: <reason>` plus any hint. */
  message: string;
}

export type VideoValidation<T> = { ok: true; value: T } | { ok: false; problem: VideoFieldProblem };

/** A problem as a domain error (HTTP 400, the family's code, `param` = field) for routes that throw. */
export class VideoValidationError extends DomainError {
  readonly status = 400;
  readonly code: string;
  readonly family: VideoFamily;
  readonly field: string;
  readonly reason: string;
  constructor(p: VideoFieldProblem) {
    super(p.message, p.field);
    this.code = p.code;
    this.family = p.family;
    this.field = p.field;
    this.reason = p.reason;
  }
}

/** The value, or throws VideoValidationError. */
export function orThrow<T>(r: VideoValidation<T>): T {
  if (!r.ok) throw new VideoValidationError(r.problem);
  return r.value;
}

class Fail {
  constructor(readonly field: string, readonly reason: string, readonly hint?: string) {}
}

function codeFor(family: VideoFamily, field: string): string {
  if (family === 'B') return 'InvalidParameter';
  if (family === 'A') return field === 'model' ? 'invalid_model' : field === 'prompt' ? 'invalid_prompt' : 'invalid_request';
  if (field === 'prompt') return 'INVALID_PROMPT';
  if (field === 'model') return 'INVALID_MODEL';
  return 'INVALID_PARAMETER';
}

function run<T>(family: VideoFamily, fn: () => T): VideoValidation<T> {
  try {
    return { ok: true, value: fn() };
  } catch (e) {
    if (!(e instanceof Fail)) throw e;
    const message = `${e.field}: ${e.reason}${e.hint ? ` (${e.hint})` : ''}`;
    return { ok: false, problem: { family, status: 400, code: codeFor(family, e.field), field: e.field, reason: e.reason, message } };
  }
}

// ---- field checks ------------------------------------------------------------------------------------------

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function chars(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function prompt(v: unknown, field: string, max: number): string {
  if (v === undefined || v === null) throw new Fail(field, 'is required');
  if (typeof v !== 'string') throw new Fail(field, 'must be a string');
  if (v.trim().length === 0) throw new Fail(field, 'must not be empty');
  if (v.includes('\u0000')) throw new Fail(field, 'must not contain NUL characters');
  if (chars(v) > max) throw new Fail(field, `must be at most ${max} characters`);
  return v;
}

function wrongFamilyHint(model: string, here: VideoFamily): string | undefined {
  const family = videoFamilyOf(model);
  if (!family || family === here) return undefined;
  return `${model} is served at POST ${VIDEO_FAMILY_PATHS[family]}, not ${VIDEO_FAMILY_PATHS[here]}`;
}

function model<M extends string>(v: unknown, allowed: readonly M[], here: VideoFamily): M {
  if (v === undefined || v === null) throw new Fail('model', 'is required');
  if (typeof v !== 'string') throw new Fail('model', 'must be a string');
  if (!(allowed as readonly string[]).includes(v)) {
    throw new Fail('model', `must be one of ${allowed.join(', ')}`, wrongFamilyHint(v, here));
  }
  return v as M;
}

function optionalBoolean(v: unknown, field: string, dflt: boolean): boolean {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw new Fail(field, 'must be true or false');
  return v;
}

function oneOf<T extends string>(v: unknown, field: string, allowed: readonly T[]): T {
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) throw new Fail(field, `must be one of ${allowed.join(', ')}`);
  return v as T;
}

/** The URL as sent (not re-serialized: a presigned link must stay byte for byte), once it parses. */
function url(v: unknown, field: string, protocols: readonly string[]): { raw: string; parsed: URL } {
  if (typeof v !== 'string' || v.length === 0) throw new Fail(field, 'must be a URL string');
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new Fail(field, 'must be a valid URL');
  }
  if (!protocols.includes(u.protocol) || !u.hostname) throw new Fail(field, `must be an ${protocols.map((p) => p.slice(0, -1)).join(' or ')} URL`);
  if (v.length > VIDEO_URL_MAX) throw new Fail(field, `must be at most ${VIDEO_URL_MAX} characters`);
  return { raw: v, parsed: u };
}

// ---- family A ----------------------------------------------------------------------------------------------

/** POST /v1/videos: `model` (one of the eight video-3.1 ids) and `prompt`, both required. */
export function validateVideoA(body: unknown): VideoValidation<VideoARequest> {
  return run('A', () => {
    const b = isObject(body) ? body : {};
    const m = model(b.model, VIDEO_A_MODELS, 'A');
    const out: VideoARequest = { model: m, prompt: prompt(b.prompt, 'prompt', VIDEO_PROMPT_MAX) };
    if (b.seconds !== undefined && b.seconds !== null) {
      const n = typeof b.seconds === 'string' && /^\d{1,2}$/.test(b.seconds) ? Number(b.seconds) : b.seconds;
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 60) throw new Fail('seconds', 'must be a whole number of seconds from 1 to 60');
      out.seconds = n;
    }
    if (b.size !== undefined && b.size !== null) {
      if (typeof b.size !== 'string' || !/^\d{2,5}x\d{2,5}$/.test(b.size)) throw new Fail('size', 'must be <width>x<height>, for example 720x1280');
      out.size = b.size;
    }
    return out;
  });
}

// ---- family B ----------------------------------------------------------------------------------------------

function media(v: unknown, vendor: 'vendorA' | 'vendorC'): VideoBMediaItem[] {
  if (v === undefined || v === null) {
    if (vendor === 'vendorC') throw new Fail('input.media', `is required: ${VIDEO_B_VENDOR_C_MIN_IMAGES} to ${VIDEO_B_VENDOR_C_MAX_IMAGES} reference_image items`);
    return [];
  }
  if (!Array.isArray(v)) throw new Fail('input.media', 'must be an array of media items');
  const items = v.map((raw, i): VideoBMediaItem => {
    const field = `input.media[${i}]`;
    if (!isObject(raw)) throw new Fail(field, 'must be an object with type and url');
    const type = oneOf(raw.type, `${field}.type`, VIDEO_B_MEDIA_TYPES);
    if (vendor === 'vendorC' && type !== 'reference_image') throw new Fail(`${field}.type`, 'must be reference_image for vendorC models');
    const item: VideoBMediaItem = { type, url: url(raw.url, `${field}.url`, ['https:']).raw };
    if (raw.reference_voice !== undefined && raw.reference_voice !== null) {
      const f = `${field}.reference_voice`;
      if (type === 'first_frame') throw new Fail(f, 'is only allowed on a reference_image or reference_video item');
      const voice = url(raw.reference_voice, f, ['https:']);
      if (!/\.(wav|mp3)$/i.test(voice.parsed.pathname)) throw new Fail(f, 'must be a .wav or .mp3 file');
      item.reference_voice = voice.raw;
    }
    return item;
  });
  const count = (t: VideoBMediaType) => items.filter((m) => m.type === t).length;
  if (vendor === 'vendorC') {
    if (items.length < VIDEO_B_VENDOR_C_MIN_IMAGES || items.length > VIDEO_B_VENDOR_C_MAX_IMAGES) {
      throw new Fail('input.media', `must hold ${VIDEO_B_VENDOR_C_MIN_IMAGES} to ${VIDEO_B_VENDOR_C_MAX_IMAGES} reference_image items for vendorC models`);
    }
  } else {
    if (count('reference_image') + count('reference_video') > VIDEO_B_VENDOR_A_MAX_REFERENCES) {
      throw new Fail('input.media', `must hold at most ${VIDEO_B_VENDOR_A_MAX_REFERENCES} reference_image and reference_video items together`);
    }
    if (count('first_frame') > VIDEO_B_VENDOR_A_MAX_FIRST_FRAMES) throw new Fail('input.media', `must hold at most ${VIDEO_B_VENDOR_A_MAX_FIRST_FRAMES} first_frame item`);
  }
  return items;
}

/** POST /vendorA/api/v1/services/aigc/video-generation/video-synthesis (reference-to-video). */
export function validateVideoB(body: unknown): VideoValidation<VideoBRequest> {
  return run('B', () => {
    const b = isObject(body) ? body : {};
    const m = model(b.model, VIDEO_B_MODELS, 'B');
    const vendor = (VIDEO_B_VENDOR_C_MODELS as readonly string[]).includes(m) ? 'vendorC' : 'vendorA';
    if (b.input === undefined || b.input === null) throw new Fail('input', 'is required');
    if (!isObject(b.input)) throw new Fail('input', 'must be an object');
    const p = prompt(b.input.prompt, 'input.prompt', VIDEO_B_PROMPT_MAX);
    const items = media(b.input.media, vendor);

    const params = b.parameters ?? {};
    if (!isObject(params)) throw new Fail('parameters', 'must be an object');
    const resolution = params.resolution === undefined || params.resolution === null
      ? (vendor === 'vendorC' ? '720P' : '1080P')
      : oneOf(params.resolution, 'parameters.resolution', VIDEO_B_RESOLUTIONS);
    const ratioGiven = params.ratio === undefined || params.ratio === null ? undefined : oneOf(params.ratio, 'parameters.ratio', VIDEO_B_RATIOS);
    const firstFrame = items.some((i) => i.type === 'first_frame');
    const ratio = vendor === 'vendorA' && !firstFrame ? ratioGiven ?? '16:9' : undefined;

    const withVideo = items.some((i) => i.type === 'reference_video');
    const max = vendor === 'vendorA' && withVideo ? VIDEO_B_DURATION_MAX_WITH_VIDEO : VIDEO_B_DURATION_MAX;
    let duration = VIDEO_B_DEFAULT_DURATION;
    if (params.duration !== undefined && params.duration !== null) {
      const d = params.duration;
      if (typeof d !== 'number' || !Number.isInteger(d)) throw new Fail('parameters.duration', 'must be an integer number of seconds');
      if (d < VIDEO_B_DURATION_MIN || d > max) {
        throw new Fail('parameters.duration', `must be ${VIDEO_B_DURATION_MIN} to ${max} seconds${vendor === 'vendorA' ? (withVideo ? ' with a reference video' : ' without a reference video') : ''}`);
      }
      duration = d;
    }
    const parameters: VideoBRequest['parameters'] = {
      resolution,
      duration,
      prompt_extend: optionalBoolean(params.prompt_extend, 'parameters.prompt_extend', true),
      watermark: optionalBoolean(params.watermark, 'parameters.watermark', false),
    };
    if (ratio) parameters.ratio = ratio;
    return { model: m, vendor, input: { prompt: p, media: items }, parameters };
  });
}

// ---- family C ----------------------------------------------------------------------------------------------

/** POST /vendorB/v1/api/video/submit. */
export function validateVideoC(body: unknown): VideoValidation<VideoCRequest> {
  return run('C', () => {
    const b = isObject(body) ? body : {};
    const m = b.model === undefined || b.model === null ? VIDEO_C_DEFAULT_MODEL : model(b.model, VIDEO_C_MODELS, 'C');
    const p = prompt(b.prompt, 'prompt', VIDEO_PROMPT_MAX);
    let images: string[] = [];
    if (b.images !== undefined && b.images !== null) {
      if (!Array.isArray(b.images)) throw new Fail('images', 'must be an array of image URLs');
      if (b.images.length > VIDEO_C_MAX_IMAGES) throw new Fail('images', `must hold at most ${VIDEO_C_MAX_IMAGES} URLs`);
      images = b.images.map((u, i) => url(u, `images[${i}]`, ['https:', 'http:']).raw);
    }
    return { model: m, prompt: p, images, enhance_prompt: optionalBoolean(b.enhance_prompt, 'enhance_prompt', false) };
  });
}
