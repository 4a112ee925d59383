import { z } from 'zod';

/**
 * POST /v1/images/generations (JSON) and the text fields of POST /v1/images/edits (multipart). The spec's
 * fields with their model-specific extras (quality, style, aspect_ratio, seed, prompt_upsampling,
 * safety_tolerance); unknown extras pass through unchanged.
 */
export const IMAGE_SIZE = /^(\d{2,5})x(\d{2,5})$/;
const size = z
  .string({ error: 'must be a string' })
  .refine((s) => s === 'auto' || IMAGE_SIZE.test(s), "must be '<width>x<height>' (e.g. 1024x1024) or 'auto'");
const imageCount = z.number({ error: 'must be an integer' }).int('must be an integer').min(1, 'must be between 1 and 10').max(10, 'must be between 1 and 10');

const imageExtras = {
  quality: z.string({ error: 'must be a string' }).optional(),
  style: z.string({ error: 'must be a string' }).optional(),
  response_format: z.enum(['url', 'b64_json'], { error: "must be 'url' or 'b64_json'" }).optional(),
  aspect_ratio: z.string({ error: 'must be a string' }).regex(/^\d{1,3}:\d{1,3}$/, "must be '<w>:<h>', e.g. 16:9").optional(),
  seed: z.number({ error: 'must be an integer' }).int('must be an integer').optional(),
  prompt_upsampling: z.boolean({ error: 'must be a boolean' }).optional(),
  safety_tolerance: z.number({ error: 'must be an integer' }).int('must be an integer').min(0, 'must be between 0 and 6').max(6, 'must be between 0 and 6').optional(),
  user: z.string({ error: 'must be a string' }).optional(),
};

export const imageGenerationBody = z.looseObject({
  model: z.string({ error: 'must be a string' }).min(1, 'is required'),
  prompt: z.string({ error: 'must be a string' }).min(1, 'is required').max(32_000, 'must be at most 32000 characters'),
  n: imageCount.optional(),
  size: size.optional(),
  ...imageExtras,
});

export type ImageGenerationBody = z.infer<typeof imageGenerationBody>;

/** Text fields of an edit form (multipart values are strings: numbers and booleans are read from them). */
const formInt = (inner: z.ZodType) =>
  z.preprocess((v) => (typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : v), inner);
const formBool = z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean({ error: 'must be true or false' }));

export const imageEditFields = z.looseObject({
  model: z.string({ error: 'must be a string' }).min(1, 'is required'),
  prompt: z.string({ error: 'is required' }).min(1, 'is required').max(32_000, 'must be at most 32000 characters'),
  n: formInt(imageCount).optional(),
  size: size.optional(),
  ...imageExtras,
  seed: formInt(z.number({ error: 'must be an integer' }).int('must be an integer')).optional(),
  prompt_upsampling: formBool.optional(),
  safety_tolerance: formInt(z.number({ error: 'must be an integer' }).int('must be an integer').min(0, 'must be between 0 and 6').max(6, 'must be between 0 and 6')).optional(),
});

export const imagesResponse = z.looseObject({
  created: z.number().int(),
  data: z.array(z.looseObject({ url: z.string().optional(), b64_json: z.string().optional(), revised_prompt: z.string().optional() })),
});
