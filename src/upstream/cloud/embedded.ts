import type { EmbeddingsRequest, EmbeddingsResult } from '../../domain/ports/upstream';
import { UpstreamError } from '../../domain/ports/upstream-error';
import { estimateEmbeddingTokens } from '../../domain/relay/metering';

/** One text's vector from a cloud's embedding API, and the tokens the cloud counted for it (null: none given). */
export interface Embedded {
  vector: number[];
  tokens: number | null;
}

/**
 * The OpenAI embeddings answer of a cloud's vectors: billed by the tokens the cloud counted, or, where it counted
 * none for some text, by the gateway's own count of the whole input.
 */
export function embeddingsResult(req: EmbeddingsRequest, embedded: Embedded[]): EmbeddingsResult {
  const counted = embedded.every((e) => e.tokens !== null);
  const tokens = counted ? embedded.reduce((n, e) => n + (e.tokens as number), 0) : estimateEmbeddingTokens(req.input);
  const data = embedded.map((e, index) => ({ object: 'embedding', index, embedding: e.vector }));
  return { body: { object: 'list', data, model: req.model, usage: { prompt_tokens: tokens, total_tokens: tokens } }, promptTokens: tokens };
}

/** The texts to embed: a string or an array of them (token arrays are OpenAI's alone). */
export function textInputs(req: EmbeddingsRequest): string[] {
  const inputs = typeof req.input === 'string' ? [req.input] : (req.input as unknown[]);
  if (!inputs.every((s): s is string => typeof s === 'string')) throw new UpstreamError('status', 'input: this model embeds text only', 400, 'invalid_request', 'input');
  return inputs;
}
