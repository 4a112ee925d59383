import multipart from '@fastify/multipart';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { ValidationError } from '../../../domain/errors';
import { asMalformedForm, DEFAULT_MULTIPART_LIMIT_BYTES, fieldWithin, readWithin } from '../../multipart-form';
import { InvalidImageError } from '../../../domain/relay/errors';
import type { ImageEditRequest, ImageInput } from '../../../domain/ports/upstream';
import { imagesEditEndpoint, imagesGenerateEndpoint } from '../../../domain/relay/endpoints/images';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'engine'>;
import { parseBody } from '../../parse-body';
import { isImageReference } from '../../../schemas/chat';
import { imageEditFields, imageGenerationBody } from '../../../schemas/images';
import { imageEditForm } from '../../../schemas/forms';
import { callerOf } from './relay-transport';
import { imagesResponse, openAiResponse } from '../../../schemas/responses';

/** Multipart limits of an edit besides its total size: a handful of files and fields. */
const LIMITS = { files: 17, fields: 64, fieldSize: 256 * 1024, parts: 96 };
const KNOWN_FIELDS = new Set(['model', 'prompt', 'n', 'size', 'image', 'image[]', 'mask']);

/** The accepted upload formats, by their first bytes: PNG, JPEG, WebP. */
export function sniffImage(data: Buffer): 'image/png' | 'image/jpeg' | 'image/webp' | null {
  if (data.length >= 8 && data.readUInt32BE(0) === 0x89504e47 && data.readUInt32BE(4) === 0x0d0a1a0a) return 'image/png';
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'image/jpeg';
  if (data.length >= 12 && data.toString('latin1', 0, 4) === 'RIFF' && data.toString('latin1', 8, 12) === 'WEBP') return 'image/webp';
  return null;
}

/** POST /v1/images/generations (JSON) and POST /v1/images/edits (multipart), billed per image returned. */
export const imagesRoutes: FastifyPluginAsync<{ deps: RouteDeps; multipartLimitBytes?: number }> = async (base, { deps, multipartLimitBytes }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const limit = multipartLimitBytes ?? DEFAULT_MULTIPART_LIMIT_BYTES;
  await app.register(multipart, { limits: { ...LIMITS, fileSize: limit }, throwFileSizeLimit: true });

  app.post('/v1/images/generations', { onRequest: [app.requireApiKey, app.limitKey], schema: { body: imageGenerationBody, response: openAiResponse(imagesResponse) } }, async (request, reply) => {
    return deps.engine.unary(imagesGenerateEndpoint, request.body, callerOf(request, reply));
  });

  const editsSchema = {
    consumes: ['multipart/form-data'],
    form: imageEditForm,
    description: 'multipart form: model, image (file or URL), optional mask (file or URL), prompt, n, size, and extras',
    response: openAiResponse(imagesResponse),
  };
  // bodyLimit: a declared Content-Length over the limit is refused before anything is read (request-guards.ts).
  app.post('/v1/images/edits', { onRequest: [app.requireApiKey, app.limitKey], schema: editsSchema, bodyLimit: limit }, async (request, reply) => {
    const edit = await readEditForm(request, limit).catch((err) => asMalformedForm(err, request));
    return deps.engine.unary(imagesEditEndpoint, edit, callerOf(request, reply));
  });
};

async function readEditForm(request: FastifyRequest, limit: number): Promise<ImageEditRequest> {
  if (!request.isMultipart()) throw new ValidationError('body: must be multipart/form-data with an image and a prompt', null);
  const budget = { left: limit };
  const fields: Record<string, string> = {};
  const images: ImageInput[] = [];
  let mask: ImageInput | undefined;
  for await (const part of request.parts()) {
    const name = part.fieldname;
    if (part.type === 'file') {
      if (name !== 'image' && name !== 'image[]' && name !== 'mask') throw new ValidationError(`${name}: unexpected file field`, name);
      const data = await readWithin(part.file, budget);
      const contentType = sniffImage(data);
      const param = name === 'mask' ? 'mask' : 'image';
      if (!contentType) {
        throw new InvalidImageError(`${param}: the file is not a PNG, JPEG or WebP image`, param);
      }
      const input: ImageInput = { kind: 'file', data, filename: part.filename || `${param}.png`, contentType };
      if (name === 'mask') mask = input;
      else images.push(input);
      continue;
    }
    const value = fieldWithin(part, budget);
    if (name === 'image' || name === 'image[]' || name === 'mask') {
      const param = name === 'mask' ? 'mask' : 'image';
      if (!isImageReference(value)) throw new InvalidImageError(`${param}: must be an image file, an https URL or a base64 data URI`, param);
      if (name === 'mask') mask = { kind: 'url', url: value };
      else images.push({ kind: 'url', url: value });
      continue;
    }
    fields[name] = value;
  }
  if (images.length === 0) throw new ValidationError('image: is required (a file, an https URL or a base64 data URI)', 'image');
  if (images.length > 16) throw new ValidationError('image: at most 16 images', 'image');
  const parsed = parseBody(imageEditFields, fields);
  const extras: Record<string, string> = {};
  for (const [k, v] of Object.entries(fields)) if (!KNOWN_FIELDS.has(k)) extras[k] = v;
  const f = parsed as { model: string; prompt: string; n?: number; size?: string };
  return { model: f.model, prompt: f.prompt, n: f.n, size: f.size, images, mask, fields: extras };
}
