import { cohereError, openaiError } from './errors';
import { charCount, digest, uuidFrom } from './hash';
import { json } from './reply';
import { truncateTokens } from './tokens';
import type { HandlerContext, Reply } from './types';
import { checkModel, isObject, optionalInt, requireString, type Problem } from './validate';

interface RerankRequest {
  model: string;
  query: string;
  documents: string[];
  topN: number;
  maxTokensPerDoc: number | undefined;
  returnDocuments: boolean;
}

interface Ranked {
  index: number;
  relevance_score: number;
  document?: { text: string };
}

/**
 * POST /v2/rerank, Cohere's shape: `{id, results, meta:{api_version, billed_units:{search_units}}}`, one search
 * unit per started 100 documents; `document` only with `return_documents: true`. Errors are `{message}`.
 */
export function cohereRerank(ctx: HandlerContext): Reply {
  const parsed = parse(ctx, false);
  if ('problem' in parsed) return cohereError(parsed.problem.status ?? 400, parsed.problem);
  const r = parsed.request;
  return json(200, {
    id: uuidFrom(digest('rerank', JSON.stringify(ctx.body))),
    results: rank(r),
    meta: { api_version: { version: '2' }, billed_units: { search_units: Math.ceil(r.documents.length / 100) } },
  });
}

/**
 * POST /v1/rerank, the Jina / vLLM shape: `{model, usage:{total_tokens}, results}`; `return_documents` defaults to
 * true. A cross-encoder reads the query once per document, so total_tokens = Σ over documents of
 * `ceil(query characters / 4) + ceil(document characters / 4)` (the latter capped by `max_tokens_per_doc`).
 */
export function jinaRerank(ctx: HandlerContext): Reply {
  const parsed = parse(ctx, true);
  if ('problem' in parsed) return openaiError(parsed.problem.status ?? 400, parsed.problem);
  const r = parsed.request;
  const queryTokens = Math.ceil(charCount(r.query) / 4);
  let total = 0;
  for (const d of r.documents) {
    const docTokens = Math.ceil(charCount(d) / 4);
    total += queryTokens + (r.maxTokensPerDoc === undefined ? docTokens : Math.min(docTokens, r.maxTokensPerDoc));
  }
  return json(200, { model: r.model, usage: { total_tokens: total }, results: rank(r) });
}

/** Lower-cased runs of letters and digits. */
function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/**
 * Relevance in (0, 1): `0.01 + 0.97 × (shared + precision / 2) / (query words + 1/2)`, where `shared` counts the
 * distinct query words the document contains and `precision` is the share of the document's distinct words that
 * are query words. One more shared word always outweighs any precision, so more overlap ranks higher; precision
 * only separates documents sharing as many words. Rounded to 6 decimals; equal scores keep index order.
 */
export function relevance(query: string, document: string): number {
  const q = new Set(words(query));
  const d = new Set(words(document));
  let shared = 0;
  for (const w of q) if (d.has(w)) shared++;
  const precision = d.size ? shared / d.size : 0;
  const score = 0.01 + (0.97 * (shared + precision / 2)) / (q.size + 0.5);
  return Math.round(score * 1e6) / 1e6;
}

function rank(r: RerankRequest): Ranked[] {
  const scored = r.documents.map((text, index) => {
    const scoredText = r.maxTokensPerDoc === undefined ? text : truncateTokens(text, r.maxTokensPerDoc).text;
    return { index, relevance_score: relevance(r.query, scoredText), text };
  });
  scored.sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
  return scored.slice(0, r.topN).map(({ index, relevance_score, text }) => (r.returnDocuments ? { index, relevance_score, document: { text } } : { index, relevance_score }));
}

function parse(ctx: HandlerContext, returnDocumentsByDefault: boolean): { request: RerankRequest } | { problem: Problem } {
  const body = ctx.body;
  if (!isObject(body)) return { problem: { message: 'The request body must be a JSON object.' } };
  const p = requireString(body, 'model');
  if (p) return { problem: p };
  if (typeof body.query !== 'string' || body.query.trim() === '') {
    return { problem: { message: body.query === undefined ? "Missing required parameter: 'query'." : "Invalid 'query': expected a non-empty string.", param: 'query', code: body.query === undefined ? 'missing_required_parameter' : 'invalid_value' } };
  }
  const documents = documentTexts(body.documents);
  if (!documents) {
    return { problem: { message: body.documents === undefined ? "Missing required parameter: 'documents'." : "Invalid 'documents': expected a non-empty array of strings or {text} objects.", param: 'documents', code: body.documents === undefined ? 'missing_required_parameter' : 'invalid_value' } };
  }
  const intProblem = optionalInt(body, 'top_n', 1) ?? optionalInt(body, 'max_tokens_per_doc', 1);
  if (intProblem) return { problem: intProblem };
  const rd = body.return_documents;
  if (rd !== undefined && rd !== null && typeof rd !== 'boolean') {
    return { problem: { message: "Invalid type for 'return_documents': expected a boolean.", param: 'return_documents', code: 'invalid_type' } };
  }
  const modelProblem = checkModel(body.model as string, 'rerank', ctx.strictModels);
  if (modelProblem) return { problem: modelProblem };
  return {
    request: {
      model: body.model as string,
      query: body.query,
      documents,
      topN: Math.min((body.top_n as number | undefined) ?? documents.length, documents.length),
      maxTokensPerDoc: (body.max_tokens_per_doc as number | null | undefined) ?? undefined,
      returnDocuments: typeof rd === 'boolean' ? rd : returnDocumentsByDefault,
    },
  };
}

function documentTexts(docs: unknown): string[] | undefined {
  if (!Array.isArray(docs) || docs.length === 0) return undefined;
  const out: string[] = [];
  for (const d of docs) {
    if (typeof d === 'string') out.push(d);
    else if (isObject(d) && typeof d.text === 'string') out.push(d.text);
    else return undefined;
  }
  return out;
}
