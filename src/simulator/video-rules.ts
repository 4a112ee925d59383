import { SIMULATOR_MODELS } from './catalog';

/**
 * What the simulated video providers accept, written from their own API descriptions and kept apart from the
 * gateway's validator (src/domain/video/validation.ts) on purpose: a gateway that starts sending what a provider
 * refuses is caught by the tests that run against this simulator, instead of agreeing with it by construction.
 * Each check gives the request as the provider reads it, or the first problem in the provider's own terms.
 */

export interface ProviderProblem {
  /** The offending field, dotted (`parameters.duration`). */
  field: string;
  message: string;
}

type Checked<T> = { ok: true; value: T } | { ok: false; problem: ProviderProblem };

const videoModels = (prefix: RegExp) => SIMULATOR_MODELS.filter((m) => m.kind === 'video' && prefix.test(m.id)).map((m) => m.id);
const A_MODELS = videoModels(/^video-3\.1/);
const B_MODELS = videoModels(/-r2v/);
const C_MODELS = videoModels(/^video3/);

class Refused {
  constructor(readonly field: string, readonly message: string) {}
}

function checked<T>(fn: () => T): Checked<T> {
  try {
    return { ok: true, value: fn() };
  } catch (e) {
    if (e instanceof Refused) return { ok: false, problem: { field: e.field, message: `${e.field}: ${e.message}` } };
    throw e;
  }
}

const record = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

function text(v: unknown, field: string, max: number): string {
  if (typeof v !== 'string' || v.trim() === '') throw new Refused(field, 'is required and must be a non-empty string');
  if ([...v].length > max) throw new Refused(field, `must be at most ${max} characters`);
  return v;
}

function oneOf(v: unknown, field: string, allowed: readonly string[]): string {
  if (typeof v !== 'string' || !allowed.includes(v)) throw new Refused(field, `must be one of ${allowed.join(', ')}`);
  return v;
}

function httpsUrl(v: unknown, field: string, schemes = ['https:']): string {
  let u: URL | null = null;
  try {
    u = typeof v === 'string' ? new URL(v) : null;
  } catch {
    u = null;
  }
  if (!u || !schemes.includes(u.protocol)) throw new Refused(field, `must be an ${schemes.map((s) => s.slice(0, -1)).join(' or ')} URL`);
  return v as string;
}

/** POST /v1/videos: a video-3.1 model and a prompt. */
export function checkVideoA(body: unknown): Checked<{ model: string; prompt: string }> {
  return checked(() => {
    const b = record(body);
    return { model: oneOf(b.model, 'model', A_MODELS), prompt: text(b.prompt, 'prompt', 32_000) };
  });
}

/** Reference-to-video: a model, `input.prompt`, media by URL, and the parameters with their defaults. */
export function checkVideoB(body: unknown): Checked<{ model: string; prompt: string; duration: number; resolution: '720P' | '1080P'; ratio: string }> {
  return checked(() => {
    const b = record(body);
    const model = oneOf(b.model, 'model', B_MODELS);
    const input = record(b.input);
    const prompt = text(input.prompt, 'input.prompt', 5000);
    const media = input.media === undefined ? [] : input.media;
    if (!Array.isArray(media)) throw new Refused('input.media', 'must be an array');
    media.forEach((m, i) => {
      const item = record(m);
      oneOf(item.type, `input.media[${i}].type`, ['reference_image', 'reference_video', 'first_frame']);
      httpsUrl(item.url, `input.media[${i}].url`);
    });
    const hasVideo = media.some((m) => record(m).type === 'reference_video');
    const firstFrame = media.some((m) => record(m).type === 'first_frame');
    const p = record(b.parameters);
    const duration = p.duration === undefined ? 5 : p.duration;
    const longest = hasVideo ? 10 : 15;
    if (typeof duration !== 'number' || !Number.isInteger(duration) || duration < 2 || duration > longest) {
      throw new Refused('parameters.duration', `must be a whole number of seconds from 2 to ${longest}`);
    }
    const vendorC = model.startsWith('vendorC');
    const resolution = (p.resolution === undefined ? (vendorC ? '720P' : '1080P') : oneOf(p.resolution, 'parameters.resolution', ['720P', '1080P'])) as '720P' | '1080P';
    const ratio = p.ratio === undefined || vendorC || firstFrame ? '16:9' : oneOf(p.ratio, 'parameters.ratio', ['16:9', '9:16', '1:1', '4:3', '3:4']);
    return { model, prompt, duration, resolution, ratio };
  });
}

/** POST /vendorB/v1/api/video/submit: a prompt, an optional model (video3 by default) and image URLs. */
export function checkVideoC(body: unknown): Checked<{ model: string; prompt: string }> {
  return checked(() => {
    const b = record(body);
    const model = b.model === undefined ? 'video3' : oneOf(b.model, 'model', C_MODELS);
    const prompt = text(b.prompt, 'prompt', 32_000);
    if (b.images !== undefined) {
      if (!Array.isArray(b.images) || b.images.length > 5) throw new Refused('images', 'must be an array of at most 5 image URLs');
      b.images.forEach((u, i) => httpsUrl(u, `images[${i}]`, ['https:', 'http:']));
    }
    return { model, prompt };
  });
}
