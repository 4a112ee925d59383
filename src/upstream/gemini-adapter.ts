import type { GeminiAdapter, GeminiEmbedRequest, GeminiEmbedResult, GeminiResult, GeminiStream, GeminiStreamEvent, GeminiTokenCount } from '../domain/ports/gemini';
import type { ChatRequest, ChatStream, ChatStreamEvent, EmbeddingsRequest, EmbeddingsResult, UpstreamAdapter, UpstreamCall } from '../domain/ports/upstream';
import { sanitizeUpstreamMessage, UpstreamError } from '../domain/ports/upstream-error';
import { usageFromGemini } from '../domain/pricing/usage-readers';
import { chatToGeminiRequest } from '../domain/translate/chat-request-to-gemini';
import { GeminiToChatStream, geminiToChatCompletion } from '../domain/translate/gemini-response-to-chat';
import { geminiField, type GeminiRequest, type GeminiResponse } from '../domain/translate/gemini-types';
import { channelSecrets, readErrorMember, readJsonObject, sendUpstream, type UpstreamHttpResponse, withChannelHeaders } from './http';
import { parseSse } from './sse';
import { vertexAuthHeaders, vertexModelUrl } from './cloud/vertex';
import { translatedStream } from './translated-stream';
import { estimateEmbeddingTokens } from '../domain/relay/metering';
import { embeddingsResult, textInputs, type Embedded } from './cloud/embedded';
import { mapInChunks } from './cloud/in-chunks';

/**
 * Channel type 'gemini': the Gemini API. `POST ${base_url}/v1beta/models/{model}:generateContent` (and
 * `:streamGenerateContent?alt=sse`, `:countTokens`, `:batchEmbedContents`) with the channel key in
 * `x-goog-api-key` (none when the key is ''). A base_url that already ends in `/v1beta` or `/v1` is used as it is.
 * Serves the Gemini routes natively (the body as the client sent it) and chat completions (so Messages and
 * Responses too) and embeddings by translation.
 */
export function createGeminiAdapter(): UpstreamAdapter & GeminiAdapter {
  return { generate, generateStream, countTokens, embed, chat, chatStream, embeddings };
}

function urlOf(call: UpstreamCall, action: string, query = ''): string {
  const base = call.channel.base_url.replace(/\/+$/, '');
  const root = /\/v1(beta\d*)?$/.test(base) ? base : `${base}/v1beta`;
  return `${root}/models/${encodeURIComponent(call.upstreamModel)}:${action}${query}`;
}

async function post(call: UpstreamCall, action: string, body: unknown, stream = false): Promise<UpstreamHttpResponse> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
    'x-request-id': call.requestId,
  };
  const vertex = call.channel.type === 'vertex';
  if (vertex) Object.assign(headers, await vertexAuthHeaders(call.channel));
  else if (call.channel.key) headers['x-goog-api-key'] = call.channel.key;
  const query = stream ? '?alt=sse' : '';
  const res = await sendUpstream({
    url: vertex ? vertexModelUrl(call.channel, 'google', call.upstreamModel, action, query) : urlOf(call, action, query),
    method: 'POST',
    headers: withChannelHeaders(headers, call.channel),
    body: JSON.stringify(body),
    timeoutMs: call.channel.timeout_ms,
    signal: call.signal,
  });
  if (res.status >= 200 && res.status < 300) return res;
  // Google's errors: `{error: {code, message, status}}`; the status (INVALID_ARGUMENT...) is the code passed on.
  const err = (await readErrorMember(res)) as { message?: unknown; status?: unknown } | undefined;
  const message = sanitizeUpstreamMessage(err?.message, channelSecrets(call)) ?? `The upstream answered HTTP ${res.status}`;
  const code = typeof err?.status === 'string' && /^[A-Z_]{1,60}$/.test(err.status) ? err.status : null;
  throw new UpstreamError('status', message, res.status, code, null);
}


async function generate(req: GeminiRequest, call: UpstreamCall): Promise<GeminiResult> {
  const body = (await readJsonObject(await post(call, 'generateContent', req))) as GeminiResponse;
  if (!Array.isArray(body.candidates) && !body.promptFeedback) throw new UpstreamError('protocol', 'the upstream answer has no candidates');
  return { body, usage: usageFromGemini(body.usageMetadata) };
}

async function generateStream(req: GeminiRequest, call: UpstreamCall): Promise<GeminiStream> {
  const res = await post(call, 'streamGenerateContent', req, true);
  if (!String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
    res.destroy();
    throw new UpstreamError('protocol', 'the upstream did not answer with an event stream');
  }
  const secrets = channelSecrets(call);
  let last: GeminiResponse['usageMetadata'] | undefined;
  let cancelled = false;
  async function* events(): AsyncGenerator<GeminiStreamEvent> {
    try {
      let any = false;
      for await (const ev of parseSse(res.body)) {
        if (ev.data === '') continue;
        let response: GeminiResponse & { error?: { message?: unknown } };
        try {
          response = JSON.parse(ev.data);
        } catch {
          throw new UpstreamError('protocol', 'the upstream sent a malformed stream chunk');
        }
        if (!response || typeof response !== 'object' || Array.isArray(response)) throw new UpstreamError('protocol', 'the upstream sent a malformed stream chunk');
        if (response.error) throw new UpstreamError('protocol', sanitizeUpstreamMessage(response.error.message, secrets) ?? 'the upstream reported an error in the stream');
        if (response.usageMetadata) last = response.usageMetadata;
        any = true;
        yield { response, raw: ev.data };
      }
      if (!any) throw new UpstreamError('protocol', 'the upstream stream ended before its first chunk');
    } finally {
      if (!cancelled) res.destroy();
    }
  }
  const it = events();
  return {
    [Symbol.asyncIterator]: () => it,
    usage: () => usageFromGemini(last),
    cancel() {
      if (cancelled) return;
      cancelled = true;
      res.destroy();
      void it.return(undefined).catch(() => undefined);
    },
  };
}

async function countTokens(req: Record<string, unknown>, call: UpstreamCall): Promise<GeminiTokenCount> {
  const body = await readJsonObject(await post(call, 'countTokens', req));
  if (!Number.isSafeInteger(body.totalTokens) || (body.totalTokens as number) < 0) throw new UpstreamError('protocol', 'the upstream answer has no totalTokens');
  return body as GeminiTokenCount;
}

async function embed(req: GeminiEmbedRequest, call: UpstreamCall): Promise<GeminiEmbedResult> {
  if (call.channel.type === 'vertex') return vertexEmbed(req, call);
  const model = `models/${call.upstreamModel}`;
  const body = await readJsonObject(await post(call, 'batchEmbedContents', { ...req, requests: req.requests.map((r) => ({ ...r, model })) }));
  if (!Array.isArray(body.embeddings)) throw new UpstreamError('protocol', 'the upstream answer has no embeddings');
  return { body: body as GeminiEmbedResult['body'], promptTokens: null };
}

// ---------------------------------------------------------------------------------------------------------
// Chat completions and embeddings by translation

function translated(req: ChatRequest, call: UpstreamCall): GeminiRequest {
  const dropped: string[] = [];
  const out = chatToGeminiRequest(req, dropped);
  for (const name of dropped) call.droppedTools?.add(name);
  return out;
}

async function chat(req: ChatRequest, call: UpstreamCall) {
  const result = await generate(translated(req, call), call);
  return { body: geminiToChatCompletion(result.body, req.model), usage: result.usage };
}

async function chatStream(req: ChatRequest, call: UpstreamCall): Promise<ChatStream> {
  const upstream = await generateStream(translated(req, call), call);
  const translator = new GeminiToChatStream(req.model);
  async function* chunks(): AsyncGenerator<ChatStreamEvent> {
    for await (const { response } of upstream) for (const chunk of translator.push(response)) yield { chunk };
    for (const chunk of translator.end()) yield { chunk, usage: chunk.usage ? (translator.usage() ?? undefined) : undefined };
  }
  return translatedStream(chunks(), upstream);
}

async function embeddings(req: EmbeddingsRequest, call: UpstreamCall): Promise<EmbeddingsResult> {
  if (call.channel.type === 'vertex') return vertexEmbeddings(req, call);
  const inputs = textInputs(req);
  const dims = typeof req.dimensions === 'number' ? { outputDimensionality: req.dimensions } : {};
  const result = await embed({ requests: inputs.map((text) => ({ content: { parts: [{ text }] }, ...dims })) }, call);
  const data = result.body.embeddings.map((e, index) => ({ object: 'embedding', index, embedding: (e as { values?: unknown }).values ?? [] }));
  // Gemini reports no usage for embeddings: the tokens sent, counted here, are what is billed and shown.
  const tokens = estimateEmbeddingTokens(req.input);
  return { body: { object: 'list', data, model: req.model, usage: { prompt_tokens: tokens, total_tokens: tokens } }, promptTokens: tokens };
}

// ---------------------------------------------------------------------------------------------------------
// Embeddings on Vertex AI: `:predict` with one instance per text (Gemini embedding models take one a call, the
// others up to 250), each answer counting its tokens in `statistics.token_count`.

async function vertexEmbeddings(req: EmbeddingsRequest, call: UpstreamCall): Promise<EmbeddingsResult> {
  const inputs = textInputs(req);
  const extra = req as { task_type?: unknown };
  const parameters = { autoTruncate: true, ...(typeof req.dimensions === 'number' ? { outputDimensionality: req.dimensions } : {}) };
  const perCall = /gemini-embedding/i.test(call.upstreamModel) ? 1 : 250;
  const embedded = await mapInChunks(inputs, perCall, 8, async (texts): Promise<Embedded[]> => {
    const instances = texts.map((content) => ({ content, ...(typeof extra.task_type === 'string' ? { task_type: extra.task_type } : {}) }));
    const body = await readJsonObject(await post(call, 'predict', { instances, parameters }));
    const predictions = body.predictions as Array<{ embeddings?: { values?: unknown; statistics?: { token_count?: unknown } } }> | undefined;
    if (!Array.isArray(predictions) || predictions.length !== texts.length) throw new UpstreamError('protocol', 'the upstream answer has no predictions');
    return predictions.map((p) => {
      const values = p?.embeddings?.values;
      if (!Array.isArray(values) || !values.every((x) => typeof x === 'number')) throw new UpstreamError('protocol', 'the upstream answer has no embedding values');
      const n = Number(p.embeddings?.statistics?.token_count);
      return { vector: values as number[], tokens: Number.isFinite(n) && n >= 0 ? Math.round(n) : null };
    });
  });
  return embeddingsResult(req, embedded);
}

/** The Gemini API's batchEmbedContents on Vertex: its texts embedded through `:predict`, answered in Gemini's shape. */
async function vertexEmbed(req: GeminiEmbedRequest, call: UpstreamCall): Promise<GeminiEmbedResult> {
  const input = req.requests.map((r) => (r.content?.parts ?? []).map((p) => (typeof p.text === 'string' ? p.text : '')).join(''));
  const dims = geminiField<number>(req.requests[0], 'outputDimensionality');
  const taskType = geminiField<string>(req.requests[0], 'taskType');
  const result = await vertexEmbeddings({ model: call.upstreamModel, input, ...(typeof dims === 'number' ? { dimensions: dims } : {}), ...(typeof taskType === 'string' ? { task_type: taskType } : {}) }, call);
  return { body: { embeddings: result.body.data.map((d) => ({ values: (d as { embedding: number[] }).embedding })) }, promptTokens: result.promptTokens };
}
