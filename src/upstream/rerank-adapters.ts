import type { RerankAdapter, RerankRequest, RerankResult, RerankShape } from '../domain/ports/rerank';
import type { UpstreamCall } from '../domain/ports/upstream';
import { UpstreamError } from '../domain/ports/upstream-error';
import { post, readJson } from './openai-http';

/**
 * Rerank upstreams. `cohere`: `${base_url}/v2/rerank` (base_url is the API root), Cohere's shape. `jina` (base_url
 * ends in /v1) and `openai` servers that rerank (vLLM, Xinference): `${base_url}/rerank`, Jina's shape. The body
 * goes as the client sent it (unknown fields included), `model` mapped.
 */
export const cohereRerankAdapter: RerankAdapter = { rerank: (req, call) => rerankAt(req, call, '/v2/rerank', 'cohere') };
export const jinaRerankAdapter: RerankAdapter = { rerank: (req, call) => rerankAt(req, call, '/rerank', 'jina') };

async function rerankAt(req: RerankRequest, call: UpstreamCall, path: string, shape: RerankShape): Promise<RerankResult> {
  const json = await readJson(await post(call, path, JSON.stringify({ ...req, model: call.upstreamModel }), 'application/json'));
  if (!Array.isArray(json.results)) throw new UpstreamError('protocol', 'the upstream answer has no results');
  const meta = obj(json.meta);
  const billed = obj(meta.billed_units);
  const usage = obj(json.usage);
  return {
    body: json as RerankResult['body'],
    shape,
    searchUnits: count(billed.search_units),
    tokens: count(usage.total_tokens) ?? count(usage.prompt_tokens) ?? count(billed.input_tokens),
  };
}

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function count(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
}
