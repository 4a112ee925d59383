import { openaiError } from './errors';
import type { Form } from './multipart';
import { sniffImage, TINY_PNG_BASE64 } from './png';
import { json } from './reply';
import type { HandlerContext, Reply } from './types';
import { checkModel, isObject, optionalInt, type Problem } from './validate';

const SIZE = /^(\d{2,5})x(\d{2,5})$/;
const ACCEPTED_IMAGES = new Set(['png', 'jpeg', 'webp']);

/**
 * POST /v1/images/generations (JSON). Every image is the same 1×1 PNG: as `b64_json`, or as a `url`
 * under `${url}/files/` that the simulator serves. `response_format` defaults to `url`
 * (`b64_json` for gpt-image-1, which only returns base64, like the real one).
 */
export function imageGenerations(ctx: HandlerContext): Reply {
  const body = ctx.body;
  if (!isObject(body)) return openaiError(400, { message: 'The request body must be a JSON object.' });
  if (typeof body.prompt !== 'string' || !body.prompt) return openaiError(400, { message: "Missing required parameter: 'prompt'.", param: 'prompt', code: 'missing_required_parameter' });
  const model = typeof body.model === 'string' ? body.model : 'dall-e-2';
  const problem = commonProblem(body.n, body.size, body.response_format, model, ctx.strictModels);
  if (problem) return openaiError(problem.status ?? 400, problem);
  return images(ctx, model, Number(body.n ?? 1), body.response_format as string | undefined, body.prompt);
}

/**
 * POST /v1/images/edits (multipart): `image` (or `image[]`: files, or a URL / data URI text field),
 * optional `mask`, `prompt`, `n`, `size`, `response_format`. A file that is not PNG, JPEG or WebP is
 * 400 `invalid_image_file`.
 */
export function imageEdits(ctx: HandlerContext): Reply {
  const form = ctx.body as Form | undefined;
  if (!form || !isObject(form) || !isObject(form.fields)) {
    return openaiError(400, { message: 'Expected a multipart/form-data body.', param: null, code: 'invalid_request' });
  }
  const f = form.fields;
  if (!f.prompt) return openaiError(400, { message: "Missing required parameter: 'prompt'.", param: 'prompt', code: 'missing_required_parameter' });
  const files = form.files.filter((x) => x.name === 'image' || x.name === 'image[]');
  const imageUrl = f.image ?? f['image[]'];
  if (files.length === 0 && !imageUrl) return openaiError(400, { message: "Missing required parameter: 'image'.", param: 'image', code: 'missing_required_parameter' });
  for (const file of [...files, ...form.files.filter((x) => x.name === 'mask')]) {
    if (!ACCEPTED_IMAGES.has(sniffImage(file.data) ?? '')) {
      return openaiError(400, {
        message: `Invalid input image - format must be in ['image/jpeg', 'image/png', 'image/webp'] (file '${file.filename}').`,
        param: file.name === 'mask' ? 'mask' : 'image',
        code: 'invalid_image_file',
      });
    }
  }
  if (files.length === 0 && !/^(https?:\/\/|data:image\/)/.test(imageUrl)) {
    return openaiError(400, { message: "Invalid 'image': expected an image file, an http(s) URL or a data URI.", param: 'image', code: 'invalid_image_file' });
  }
  const model = f.model || 'dall-e-2';
  const n = f.n === undefined ? undefined : Number(f.n);
  const problem = commonProblem(n, f.size, f.response_format, model, ctx.strictModels);
  if (problem) return openaiError(problem.status ?? 400, problem);
  return images(ctx, model, n ?? 1, f.response_format, undefined);
}

function commonProblem(n: unknown, size: unknown, format: unknown, model: string, strict: boolean): Problem | undefined {
  const p = optionalInt({ n }, 'n', 1, 10);
  if (p) return p;
  if (size !== undefined && size !== 'auto' && !(typeof size === 'string' && SIZE.test(size))) {
    return { message: `Invalid 'size': expected '<width>x<height>' or 'auto', got ${JSON.stringify(size)}.`, param: 'size', code: 'invalid_value' };
  }
  if (format !== undefined && format !== 'url' && format !== 'b64_json') {
    return { message: "Invalid 'response_format': expected 'url' or 'b64_json'.", param: 'response_format', code: 'invalid_value' };
  }
  return checkModel(model, 'image', strict);
}

function images(ctx: HandlerContext, model: string, n: number, format: string | undefined, prompt: string | undefined): Reply {
  const b64 = (format ?? (model === 'gpt-image-1' ? 'b64_json' : 'url')) === 'b64_json';
  const data = [];
  for (let i = 0; i < n; i++) {
    const item: Record<string, string> = b64 ? { b64_json: TINY_PNG_BASE64 } : { url: `${ctx.baseUrl}/files/${ctx.id('img-')}.png` };
    if (prompt !== undefined) item.revised_prompt = prompt;
    data.push(item);
  }
  return json(200, { created: Math.floor(Date.now() / 1000), data });
}
