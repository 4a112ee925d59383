import { z } from 'zod';

const part = z.looseObject({ type: z.string({ error: 'must be a string' }) }, { error: 'must be an input part ({type: text|image_url, ...})' });

/** POST /v1/moderations: `input` a string, an array of strings, or multimodal parts; `model` optional as at OpenAI. */
export const moderationsBody = z.looseObject({
  model: z.string({ error: 'must be a string' }).min(1, 'must not be empty').default('omni-moderation-latest'),
  input: z.union([z.string(), z.array(z.string()).min(1).max(2048), z.array(part).min(1).max(2048)], {
    error: 'must be a string, an array of strings, or an array of input parts',
  }),
});

export type ModerationsBody = z.infer<typeof moderationsBody>;
