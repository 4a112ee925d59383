import type { z } from 'zod';
import { videoACreateBody } from '../../src/schemas/video-a';
import { videoBCreateBody } from '../../src/schemas/video-b';
import { videoCSubmitBody } from '../../src/schemas/video-c';
import { toWireError } from '../../src/schemas/wire-error';
import {
  orThrow,
  validateVideoA,
  validateVideoB,
  validateVideoC,
  VIDEO_A_MODELS,
  VideoValidationError,
  type VideoValidation,
} from '../../src/domain/video/validation';

/** A row: a body, and either the normalized value expected (partial match) or the problem (field + code). */
type Row = [name: string, body: unknown, expect: { value: unknown; absent?: string } | { field: string; code: string; reason?: RegExp }];

/**
 * Runs one family's table against the domain validator, and holds the zod schema to "never stricter": every body
 * the domain accepts, the schema accepts.
 */
function table(validate: (b: unknown) => VideoValidation<unknown>, schema: z.ZodType, rows: Row[]): void {
  it.each(rows)('%s', (_name, body, expected) => {
    const r = validate(body);
    if ('value' in expected) {
      if (!r.ok) throw new Error(`expected ok, got ${r.problem.message}`);
      expect(r.value).toMatchObject(expected.value as object);
      if (expected.absent) {
        const [outer, key] = expected.absent.split('.');
        expect(Object.keys((r.value as Record<string, Record<string, unknown>>)[outer])).not.toContain(key);
      }
      const z = schema.safeParse(body);
      if (!z.success) throw new Error(`zod is stricter than the domain: ${JSON.stringify(z.error.issues)}`);
    } else {
      if (r.ok) throw new Error(`expected ${expected.field} to fail, got ${JSON.stringify(r.value)}`);
      expect(r.problem.field).toBe(expected.field);
      expect(r.problem.code).toBe(expected.code);
      expect(r.problem.status).toBe(400);
      expect(r.problem.message.startsWith(`${expected.field}: `)).toBe(true);
      if (expected.reason) expect(r.problem.reason).toMatch(expected.reason);
    }
  });
}

const https = (n: number, ext = 'png') => `https://cdn.example.com/asset-${n}.${ext}`;
const img = (n = 1) => ({ type: 'reference_image', url: https(n) });
const vid = (n = 1) => ({ type: 'reference_video', url: https(n, 'mp4') });
const frame = (n = 1) => ({ type: 'first_frame', url: https(n) });
const astral = (n: number) => '😀'.repeat(n);

describe('video family A (POST /v1/videos)', () => {
  const ok = (model: string) => ({ model, prompt: 'a cat' });
  table(validateVideoA, videoACreateBody, [
    ...VIDEO_A_MODELS.map((m): Row => [`accepts ${m}`, ok(m), { value: { model: m, prompt: 'a cat' } }]),
    ['drops unknown fields', { ...ok('video-3.1'), seconds: 8 }, { value: { model: 'video-3.1', prompt: 'a cat' } }],
    ['model missing', { prompt: 'x' }, { field: 'model', code: 'invalid_model', reason: /required/ }],
    ['model null', { prompt: 'x', model: null }, { field: 'model', code: 'invalid_model' }],
    ['model not a string', { prompt: 'x', model: 3 }, { field: 'model', code: 'invalid_model' }],
    ['model unknown', ok('video-3.2'), { field: 'model', code: 'invalid_model', reason: /video-3\.1-landscape-fast-fl/ }],
    ['model case differs', ok('Video-3.1'), { field: 'model', code: 'invalid_model' }],
    ['prompt missing', { model: 'video-3.1' }, { field: 'prompt', code: 'invalid_prompt', reason: /required/ }],
    ['prompt empty', { model: 'video-3.1', prompt: '' }, { field: 'prompt', code: 'invalid_prompt' }],
    ['prompt blank', { model: 'video-3.1', prompt: '  \n' }, { field: 'prompt', code: 'invalid_prompt' }],
    ['prompt not a string', { model: 'video-3.1', prompt: ['a'] }, { field: 'prompt', code: 'invalid_prompt' }],
    ['prompt with NUL', { model: 'video-3.1', prompt: 'a\u0000b' }, { field: 'prompt', code: 'invalid_prompt' }],
    ['prompt 32000 code points', { model: 'video-3.1', prompt: astral(32_000) }, { value: { model: 'video-3.1' } }],
    ['prompt 32001 code points', { model: 'video-3.1', prompt: 'a'.repeat(32_001) }, { field: 'prompt', code: 'invalid_prompt' }],
    ['body not an object', 'hello', { field: 'model', code: 'invalid_model' }],
    ['body null', null, { field: 'model', code: 'invalid_model' }],
  ]);

  it('a family B model points at the family B path, a family C model at family C', () => {
    const b = validateVideoA(ok('vendorA-2.6-r2v'));
    expect(!b.ok && b.problem.message).toMatch(/vendorA-2\.6-r2v is served at POST \/vendorA\/api\/v1\/services\/aigc\/video-generation\/video-synthesis/);
    const c = validateVideoA(ok('video3-pro'));
    expect(!c.ok && c.problem.message).toMatch(/served at POST \/vendorB\/v1\/api\/video\/submit/);
    const unknown = validateVideoA(ok('gpt-4o'));
    expect(!unknown.ok && unknown.problem.message).not.toMatch(/served at/);
  });
});

describe('video family B (reference-to-video)', () => {
  const A = 'vendorA-2.7-r2v';
  const C = 'vendorC-1.0-r2v';
  const body = (model: string, input: object, parameters?: object) => ({ model, input: { prompt: 'image 1 dances', ...input }, ...(parameters ? { parameters } : {}) });
  const err = (field: string, reason?: RegExp) => ({ field, code: 'InvalidParameter', reason });

  table(validateVideoB, videoBCreateBody, [
    // models and defaults
    ...['vendorA-2.7-r2v', 'vendorA-2.6-r2v', 'vendorA-2.6-r2v-flash'].map((m): Row => [
      `vendorA defaults: ${m}`,
      body(m, { media: [img()] }),
      { value: { model: m, vendor: 'vendorA', parameters: { resolution: '1080P', ratio: '16:9', duration: 5, prompt_extend: true, watermark: false } } },
    ]),
    ['vendorC defaults: 720P, no ratio', body(C, { media: [img()] }), { value: { vendor: 'vendorC', parameters: { resolution: '720P', duration: 5, prompt_extend: true, watermark: false } } }],
    ['model unknown', body('vendorA-2.5-r2v', {}), err('model')],
    ['model missing', { input: { prompt: 'x' } }, err('model', /required/)],
    ['family A model → error naming /v1/videos', body('video-3.1', {}), err('model', /must be one of/)],
    // input and prompt
    ['input missing', { model: A }, err('input', /required/)],
    ['input not an object', { model: A, input: 'x' }, err('input')],
    ['prompt missing', { model: A, input: { media: [img()] } }, err('input.prompt', /required/)],
    ['prompt empty', body(A, { prompt: '' }), err('input.prompt')],
    ['prompt 5000 chars', body(A, { prompt: 'p'.repeat(5000) }), { value: { model: A } }],
    ['prompt 5000 code points (emoji)', body(A, { prompt: astral(5000) }), { value: { model: A } }],
    ['prompt 5001 chars', body(A, { prompt: 'p'.repeat(5001) }), err('input.prompt', /at most 5000/)],
    ['prompt 5001 code points', body(A, { prompt: astral(5001) }), err('input.prompt', /at most 5000/)],
    // media items
    ['vendorA no media', body(A, {}), { value: { input: { media: [] } } }],
    ['vendorA media null', body(A, { media: null }), { value: { input: { media: [] } } }],
    ['media not an array', body(A, { media: img() }), err('input.media')],
    ['media item not an object', body(A, { media: ['https://x.example/a.png'] }), err('input.media[0]')],
    ['media type unknown', body(A, { media: [{ type: 'image', url: https(1) }] }), err('input.media[0].type', /reference_image, reference_video, first_frame/)],
    ['media url http', body(A, { media: [{ type: 'reference_image', url: 'http://cdn.example.com/a.png' }] }), err('input.media[0].url', /https/)],
    ['media url missing', body(A, { media: [{ type: 'reference_image' }] }), err('input.media[0].url')],
    ['media url not a URL', body(A, { media: [img(), { type: 'reference_image', url: 'not a url' }] }), err('input.media[1].url')],
    ['media url kept byte for byte', body(A, { media: [{ type: 'reference_image', url: 'https://cdn.example.com/a b.png?X-Sig=a%2Fb' }] }), { value: { input: { media: [{ url: 'https://cdn.example.com/a b.png?X-Sig=a%2Fb' }] } } }],
    ['media unknown field dropped', body(A, { media: [{ ...img(), weight: 2 }] }), { value: { input: { media: [{ type: 'reference_image', url: https(1) }] } } }],
    // reference_voice
    ['voice .wav on an image', body(A, { media: [{ ...img(), reference_voice: 'https://cdn.example.com/v.wav' }] }), { value: { input: { media: [{ reference_voice: 'https://cdn.example.com/v.wav' }] } } }],
    ['voice .MP3 with query on a video', body(A, { media: [{ ...vid(), reference_voice: 'https://cdn.example.com/v.MP3?sig=1' }] }), { value: { model: A } }],
    ['voice .ogg', body(A, { media: [{ ...img(), reference_voice: 'https://cdn.example.com/v.ogg' }] }), err('input.media[0].reference_voice', /\.wav or \.mp3/)],
    ['voice .wav only in the query', body(A, { media: [{ ...img(), reference_voice: 'https://cdn.example.com/v?f=a.wav' }] }), err('input.media[0].reference_voice')],
    ['voice http', body(A, { media: [{ ...img(), reference_voice: 'http://cdn.example.com/v.wav' }] }), err('input.media[0].reference_voice')],
    ['voice on a first frame', body(A, { media: [{ ...frame(), reference_voice: 'https://cdn.example.com/v.wav' }] }), err('input.media[0].reference_voice', /reference_image or reference_video/)],
    // vendorA counts
    ['vendorA 5 references (3 images + 2 videos)', body(A, { media: [img(1), img(2), img(3), vid(1), vid(2)] }), { value: { model: A } }],
    ['vendorA 6 references', body(A, { media: [img(1), img(2), img(3), vid(1), vid(2), img(4)] }), err('input.media', /at most 5/)],
    ['vendorA 5 references + 1 first frame', body(A, { media: [img(1), img(2), img(3), img(4), img(5), frame()] }), { value: { model: A } }],
    ['vendorA 2 first frames', body(A, { media: [frame(1), frame(2)] }), err('input.media', /first_frame/)],
    // vendorC media
    ['vendorC media missing', body(C, {}), err('input.media', /required/)],
    ['vendorC 0 images', body(C, { media: [] }), err('input.media', /1 to 9/)],
    ['vendorC 1 image', body(C, { media: [img()] }), { value: { model: C } }],
    ['vendorC 9 images', body(C, { media: Array.from({ length: 9 }, (_, i) => img(i)) }), { value: { model: C } }],
    ['vendorC 10 images', body(C, { media: Array.from({ length: 10 }, (_, i) => img(i)) }), err('input.media', /1 to 9/)],
    ['vendorC a video', body(C, { media: [img(), vid()] }), err('input.media[1].type', /reference_image/)],
    ['vendorC a first frame', body(C, { media: [frame()] }), err('input.media[0].type')],
    // parameters
    ['parameters not an object', body(A, {}, 'x' as unknown as object), err('parameters')],
    ['parameters null = defaults', { ...body(A, {}), parameters: null }, { value: { parameters: { duration: 5 } } }],
    ['resolution 720P on vendorA', body(A, {}, { resolution: '720P' }), { value: { parameters: { resolution: '720P' } } }],
    ['resolution 1080P on vendorC', body(C, { media: [img()] }, { resolution: '1080P' }), { value: { parameters: { resolution: '1080P' } } }],
    ['resolution 480P', body(A, {}, { resolution: '480P' }), err('parameters.resolution', /720P, 1080P/)],
    ['resolution lower case', body(A, {}, { resolution: '1080p' }), err('parameters.resolution')],
    ...['16:9', '9:16', '1:1', '4:3', '3:4'].map((r): Row => [`ratio ${r}`, body(A, {}, { ratio: r }), { value: { parameters: { ratio: r } } }]),
    ['ratio 21:9', body(A, {}, { ratio: '21:9' }), err('parameters.ratio')],
    ['ratio dropped with a first frame', body(A, { media: [frame()] }, { ratio: '9:16' }), { value: { parameters: {} }, absent: 'parameters.ratio' }],
    ['ratio default dropped with a first frame', body(A, { media: [frame()] }), { value: { parameters: {} }, absent: 'parameters.ratio' }],
    ['ratio dropped for vendorC', body(C, { media: [img()] }, { ratio: '1:1' }), { value: { parameters: {} }, absent: 'parameters.ratio' }],
    ['ratio invalid for vendorC still rejected', body(C, { media: [img()] }, { ratio: 'wide' }), err('parameters.ratio')],
    // duration
    ['duration 2 (vendorA, no video)', body(A, {}, { duration: 2 }), { value: { parameters: { duration: 2 } } }],
    ['duration 1', body(A, {}, { duration: 1 }), err('parameters.duration', /2 to 15/)],
    ['duration 15 (vendorA, no video)', body(A, { media: [img()] }, { duration: 15 }), { value: { parameters: { duration: 15 } } }],
    ['duration 16 (vendorA, no video)', body(A, { media: [img()] }, { duration: 16 }), err('parameters.duration', /2 to 15 seconds without a reference video/)],
    ['duration 10 (vendorA, with video)', body(A, { media: [vid()] }, { duration: 10 }), { value: { parameters: { duration: 10 } } }],
    ['duration 11 (vendorA, with video)', body(A, { media: [vid()] }, { duration: 11 }), err('parameters.duration', /2 to 10 seconds with a reference video/)],
    ['duration 2 (vendorA, with video)', body(A, { media: [vid()] }, { duration: 2 }), { value: { parameters: { duration: 2 } } }],
    ['duration 15 (vendorC)', body(C, { media: [img()] }, { duration: 15 }), { value: { parameters: { duration: 15 } } }],
    ['duration 16 (vendorC)', body(C, { media: [img()] }, { duration: 16 }), err('parameters.duration', /2 to 15/)],
    ['duration 2 (vendorC)', body(C, { media: [img()] }, { duration: 2 }), { value: { parameters: { duration: 2 } } }],
    ['duration 1 (vendorC)', body(C, { media: [img()] }, { duration: 1 }), err('parameters.duration')],
    ['duration 5.5', body(A, {}, { duration: 5.5 }), err('parameters.duration', /integer/)],
    ['duration "5"', body(A, {}, { duration: '5' }), err('parameters.duration', /integer/)],
    // booleans
    ['prompt_extend false', body(A, {}, { prompt_extend: false }), { value: { parameters: { prompt_extend: false } } }],
    ['prompt_extend "false"', body(A, {}, { prompt_extend: 'false' }), err('parameters.prompt_extend')],
    ['watermark true', body(A, {}, { watermark: true }), { value: { parameters: { watermark: true } } }],
    ['watermark 1', body(A, {}, { watermark: 1 }), err('parameters.watermark')],
  ]);

  it('a family A or C model names the path that serves it', () => {
    const r = validateVideoB({ model: 'video-3.1-fast', input: { prompt: 'x' } });
    expect(!r.ok && r.problem.message).toMatch(/served at POST \/v1\/videos/);
    const c = validateVideoB({ model: 'video3', input: { prompt: 'x' } });
    expect(!c.ok && c.problem.message).toMatch(/served at POST \/vendorB\/v1\/api\/video\/submit/);
  });

  it('normalizes to exactly the documented shape', () => {
    expect(orThrow(validateVideoB({ model: A, input: { prompt: 'image 1', media: [img()] }, extra: 1 }))).toEqual({
      model: A,
      vendor: 'vendorA',
      input: { prompt: 'image 1', media: [{ type: 'reference_image', url: https(1) }] },
      parameters: { resolution: '1080P', ratio: '16:9', duration: 5, prompt_extend: true, watermark: false },
    });
  });
});

describe('video family C (POST /vendorB/v1/api/video/submit)', () => {
  const err = (field: string, code: string, reason?: RegExp) => ({ field, code, reason });
  table(validateVideoC, videoCSubmitBody, [
    ['defaults', { prompt: 'a cat' }, { value: { model: 'video3', prompt: 'a cat', images: [], enhance_prompt: false } }],
    ...['video3', 'video3-fast', 'video3-pro', 'video3-pro-frames'].map((m): Row => [`model ${m}`, { prompt: 'x', model: m }, { value: { model: m } }]),
    ['model null = default', { prompt: 'x', model: null }, { value: { model: 'video3' } }],
    ['model unknown', { prompt: 'x', model: 'video4' }, err('model', 'INVALID_MODEL', /video3, video3-fast/)],
    ['model family A', { prompt: 'x', model: 'video-3.1' }, err('model', 'INVALID_MODEL')],
    ['model not a string', { prompt: 'x', model: 1 }, err('model', 'INVALID_MODEL')],
    ['prompt missing', {}, err('prompt', 'INVALID_PROMPT', /required/)],
    ['prompt blank', { prompt: ' ' }, err('prompt', 'INVALID_PROMPT')],
    ['prompt a number', { prompt: 5 }, err('prompt', 'INVALID_PROMPT')],
    ['prompt 32000', { prompt: 'a'.repeat(32_000) }, { value: { model: 'video3' } }],
    ['prompt 32001', { prompt: 'a'.repeat(32_001) }, err('prompt', 'INVALID_PROMPT')],
    ['images 0', { prompt: 'x', images: [] }, { value: { images: [] } }],
    ['images 5', { prompt: 'x', images: [1, 2, 3, 4, 5].map((n) => https(n)) }, { value: { images: [1, 2, 3, 4, 5].map((n) => https(n)) } }],
    ['images 6', { prompt: 'x', images: [1, 2, 3, 4, 5, 6].map((n) => https(n)) }, err('images', 'INVALID_PARAMETER', /at most 5/)],
    ['images http ok', { prompt: 'x', images: ['http://cdn.example.com/a.png'] }, { value: { images: ['http://cdn.example.com/a.png'] } }],
    ['images ftp', { prompt: 'x', images: ['ftp://cdn.example.com/a.png'] }, err('images[0]', 'INVALID_PARAMETER')],
    ['images not URLs', { prompt: 'x', images: [https(1), 'cat.png'] }, err('images[1]', 'INVALID_PARAMETER')],
    ['images a string', { prompt: 'x', images: https(1) }, err('images', 'INVALID_PARAMETER')],
    ['enhance_prompt true', { prompt: 'x', enhance_prompt: true }, { value: { enhance_prompt: true } }],
    ['enhance_prompt "yes"', { prompt: 'x', enhance_prompt: 'yes' }, err('enhance_prompt', 'INVALID_PARAMETER')],
  ]);

  it('a problem carries details {field, reason} for the family C body', () => {
    const r = validateVideoC({ prompt: 'x', model: 'video4' });
    if (r.ok) throw new Error('expected a problem');
    const wire = { success: false, message: r.problem.message, error_code: r.problem.code, details: { field: r.problem.field, reason: r.problem.reason } };
    expect(wire).toEqual({
      success: false,
      message: 'model: must be one of video3, video3-fast, video3-pro, video3-pro-frames',
      error_code: 'INVALID_MODEL',
      details: { field: 'model', reason: 'must be one of video3, video3-fast, video3-pro, video3-pro-frames' },
    });
  });
});

describe('VideoValidationError', () => {
  it('is a 400 domain error with the family code and the field as param', () => {
    let caught: unknown;
    try {
      orThrow(validateVideoA({ model: 'video-3.1' }));
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(VideoValidationError);
    expect(toWireError(caught)).toEqual({ status: 400, code: 'invalid_prompt', message: 'prompt: is required', param: 'prompt' });
    expect((caught as VideoValidationError).reason).toBe('is required');
  });
});

describe('zod body schemas', () => {
  it('reject per-field problems with the field path (they document the same bodies)', () => {
    const path = (r: { success: boolean; error?: { issues: Array<{ path: PropertyKey[] }> } }) => r.error?.issues[0].path.join('.');
    expect(path(videoACreateBody.safeParse({ model: 'video-9', prompt: 'x' }))).toBe('model');
    expect(path(videoACreateBody.safeParse({ model: 'video-3.1' }))).toBe('prompt');
    expect(path(videoBCreateBody.safeParse({ model: 'vendorA-2.7-r2v', input: { prompt: 'p'.repeat(5001) } }))).toBe('input.prompt');
    expect(path(videoBCreateBody.safeParse({ model: 'vendorA-2.7-r2v', input: { prompt: 'x', media: [{ type: 'reference_image', url: 'http://a.example/x' }] } }))).toBe('input.media.0.url');
    expect(path(videoBCreateBody.safeParse({ model: 'vendorA-2.7-r2v', input: { prompt: 'x' }, parameters: { duration: 16 } }))).toBe('parameters.duration');
    expect(path(videoCSubmitBody.safeParse({ prompt: 'x', images: Array(6).fill('https://a.example/x.png') }))).toBe('images');
    expect(videoCSubmitBody.parse({ prompt: 'x', model: null })).toEqual({ prompt: 'x', model: null });
  });
});
