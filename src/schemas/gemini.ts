import { z } from 'zod';

/**
 * The Gemini API's request bodies (generateContent, countTokens, embedContent, batchEmbedContents): the one source of
 * their shape. Only what the API itself requires is checked (contents are objects with a `parts` array); objects are
 * loose, so parts, tools, configs and unknown fields reach a native upstream as sent. Google reads camelCase and
 * snake_case alike, and so do these schemas and the translators.
 */

const part = z.looseObject({});
export const geminiContent = z.looseObject({
  role: z.string({ error: 'must be a string' }).max(64, 'must be at most 64 characters').optional(),
  parts: z.array(part, { error: 'must be an array of parts' }),
});

export const generateContentBody = z.looseObject({
  contents: z.array(geminiContent, { error: 'must be an array of contents' }).min(1, 'must contain at least one content'),
  tools: z.array(z.looseObject({}), { error: 'must be an array of tools' }).optional(),
  generationConfig: z.looseObject({}, { error: 'must be an object' }).optional(),
});

/** countTokens: `contents`, or a whole `generateContentRequest`. */
export const countTokensBody = z.looseObject({
  contents: z.array(geminiContent, { error: 'must be an array of contents' }).optional(),
  generateContentRequest: z.looseObject({ contents: z.array(geminiContent, { error: 'must be an array of contents' }) }).optional(),
}).refine((b) => b.contents !== undefined || b.generateContentRequest !== undefined, { message: 'contents: is required', path: ['contents'] });

const embedRequest = z.looseObject({ content: geminiContent.partial({ role: true }).extend({ parts: z.array(part, { error: 'must be an array of parts' }) }) });

export const embedContentBody = embedRequest;

/** The most requests one batchEmbedContents call may carry (Google's own limit). */
export const MAX_EMBED_REQUESTS = 100;

export const batchEmbedContentsBody = z.looseObject({
  requests: z.array(embedRequest, { error: 'must be an array of requests' }).min(1, 'must contain at least one request').max(MAX_EMBED_REQUESTS, `must contain at most ${MAX_EMBED_REQUESTS} requests`),
});

/** A model method's answer (generateContent, a chunk, countTokens, an embedding): open, as relayed. */
export const geminiAnswer = z.looseObject({}).meta({ id: 'GeminiAnswer' });

/** One model in Gemini's shape. */
export const geminiModel = z.looseObject({ name: z.string(), supportedGenerationMethods: z.array(z.string()) });
