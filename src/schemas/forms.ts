import { z } from 'zod';
import { transcriptionFields } from './audio';
import { imageEditFields } from './images';
import { binaryFile } from './binary-file';

/**
 * The forms of the multipart routes, for the OpenAPI document only (`schema.form`, see plugins/openapi.ts): each
 * route reads its form part by part, within its byte budget, and checks its text fields with the schemas these
 * extend. A file part is a string of format `binary`, as OpenAPI describes uploads.
 */
export const fileUploadForm = z.object({
  file: binaryFile('the JSONL input file, at most 200 MB and 50,000 lines'),
  purpose: z.enum(['batch']),
});

export const transcriptionForm = transcriptionFields.extend({ file: binaryFile('the audio, at most 25 MB') });

export const imageEditForm = imageEditFields.extend({
  image: binaryFile('a PNG, JPEG or WebP image (or an https URL or data URI as a text field); image[] for several'),
  mask: binaryFile('an optional mask image').optional(),
});
