import { z } from 'zod';

/** Most documents one rerank call may carry (Cohere's own bound is 1,000). */
export const MAX_RERANK_DOCUMENTS = 1000;

const document = z.union([z.string(), z.looseObject({ text: z.string({ error: 'must be a string' }) })], { error: 'must be a string or {text}' });

/**
 * POST /v1/rerank, /rerank and /v2/rerank in Cohere's shape (Jina's request is the same, with `truncation` or
 * `return_embeddings` of its own); fields the gateway does not bound pass through.
 */
export const rerankBody = z.looseObject({
  model: z.string({ error: 'must be a string' }).min(1, 'is required'),
  query: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(32_768, 'must be at most 32768 characters'),
  documents: z.array(document, { error: 'must be an array of strings or {text}' }).min(1, 'must not be empty').max(MAX_RERANK_DOCUMENTS, `must have at most ${MAX_RERANK_DOCUMENTS} documents`),
  top_n: z.number({ error: 'must be an integer' }).int('must be an integer').min(1, 'must be at least 1').optional(),
  return_documents: z.boolean({ error: 'must be true or false' }).optional(),
  max_tokens_per_doc: z.number({ error: 'must be an integer' }).int('must be an integer').min(1, 'must be at least 1').optional(),
});

export type RerankBody = z.infer<typeof rerankBody>;
