import { z } from 'zod';

/** POST /v1/embeddings: `model` and `input` required; `encoding_format` float (default) or base64; extras pass through. */
const nonEmptyString = z.string({ error: 'must be a string' }).min(1, 'must not be empty');
const tokenArray = z.array(z.number().int().min(0), { error: 'must be an array of token ids' }).min(1, 'must not be empty');

export const embeddingsBody = z.looseObject({
  model: z.string({ error: 'must be a string' }).min(1, 'is required'),
  input: z.union(
    [nonEmptyString, z.array(nonEmptyString).min(1).max(2048), tokenArray, z.array(tokenArray).min(1).max(2048)],
    { error: 'must be a non-empty string, an array of strings, or an array of token ids' },
  ),
  encoding_format: z.enum(['float', 'base64'], { error: "must be 'float' or 'base64'" }).optional(),
  dimensions: z.number({ error: 'must be an integer' }).int('must be an integer').min(1, 'must be at least 1').optional(),
  user: z.string({ error: 'must be a string' }).optional(),
});

export type EmbeddingsBody = z.infer<typeof embeddingsBody>;
