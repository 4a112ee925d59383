import type { RerankBody } from '../../schemas/rerank';
import type { UpstreamCall } from './upstream';

/** POST /v1/rerank body as the route validated it (src/schemas/rerank.ts). */
export type RerankRequest = RerankBody;

/** The two answer shapes: Cohere's `{id, results, meta}` and Jina's (and vLLM's) `{model, usage, results}`. */
export type RerankShape = 'cohere' | 'jina';

export interface RerankResult {
  /** The upstream's answer as it sent it, in `shape`. */
  body: Record<string, unknown> & { results: unknown[] };
  shape: RerankShape;
  /** `meta.billed_units.search_units`, or null. */
  searchUnits: number | null;
  /** `usage.total_tokens` (or Cohere's billed input tokens), or null. */
  tokens: number | null;
}

/** Rerank on a channel type: `cohere` ({base_url}/v2/rerank), `jina` and `openai` ({base_url}/rerank). */
export interface RerankAdapter {
  rerank(req: RerankRequest, call: UpstreamCall): Promise<RerankResult>;
}
