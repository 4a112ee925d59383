import type { RerankAdapter, RerankRequest, RerankResult, RerankShape } from '../../ports/rerank';
import { hasTokenPrices, quantityUnitOf } from '../../pricing/cost';
import { localUsage, type Metered, type UnaryEndpoint } from '../engine';
import { estimateTokens } from '../metering';

/** One search unit: one query with up to 100 documents (Cohere's definition). */
export const DOCUMENTS_PER_SEARCH_UNIT = 100;

export const searchUnitsOf = (req: RerankRequest): number => Math.ceil(req.documents.length / DOCUMENTS_PER_SEARCH_UNIT);

const documentText = (d: RerankRequest['documents'][number]): string => (typeof d === 'string' ? d : d.text);

/** Tokens of a rerank counted locally: the query against every document, and the documents. */
export function rerankTokens(req: RerankRequest): number {
  const query = estimateTokens(req.query);
  return req.documents.reduce((n, d) => n + query + estimateTokens(documentText(d)), 0);
}

/**
 * The shape a client speaks: Jina's when its request carries a field only Jina's API has (`truncation`,
 * `return_embeddings`), else Cohere's.
 */
export function clientRerankShape(req: RerankRequest): RerankShape {
  return req.truncation !== undefined || req.return_embeddings !== undefined ? 'jina' : 'cohere';
}

/** The upstream's answer in the client's shape: unchanged when they agree, else mapped field by field. */
export function rerankBodyFor(req: RerankRequest, result: RerankResult, shape: RerankShape, requestId: string): Record<string, unknown> {
  if (result.shape === shape) return result.body;
  if (shape === 'jina') {
    return { model: req.model, usage: { total_tokens: result.tokens ?? rerankTokens(req) }, results: result.body.results };
  }
  const results = req.return_documents === true ? result.body.results : result.body.results.map((r) => withoutDocument(r));
  return {
    id: typeof result.body.id === 'string' ? result.body.id : requestId,
    results,
    meta: { api_version: { version: '2' }, billed_units: { search_units: result.searchUnits ?? searchUnitsOf(req) } },
  };
}

function withoutDocument(r: unknown): unknown {
  if (!r || typeof r !== 'object') return r;
  const { document: _d, ...rest } = r as Record<string, unknown>;
  return rest;
}

/**
 * POST /v1/rerank (/rerank, /v2/rerank): `cohere` and `jina` channels, and `openai` channels whose server reranks.
 * Billed per token when the upstream reports tokens and the model has token prices, else per search unit (the
 * upstream's count, else one per query and 100 documents) when it has `per_search_unit`, else per token counted
 * locally.
 */
export const rerankEndpoint: UnaryEndpoint<RerankRequest, RerankAdapter, RerankResult, RerankResult> = {
  name: 'rerank',
  reason: 'rerank',
  adapterOf: (adapters, channel) => adapters.rerank[channel.type],
  hold: (req) => ({ quantity: searchUnitsOf(req), promptTokens: rerankTokens(req), maxCompletionTokens: 0 }),
  call: (adapter, req, call) => adapter.rerank(req, call),
  metered: (r, _estimate, { req, route }): Metered => {
    if (r.tokens !== null && hasTokenPrices(route.price)) return localUsage(r.tokens, 0);
    if (quantityUnitOf(route.price) === 'search_units') return { quantity: r.searchUnits ?? searchUnitsOf(req), unit: 'search_units' };
    return localUsage(rerankTokens(req), 0);
  },
  body: (r) => r,
};
