import {
  type ChatChunk,
  type ChatCompletion,
  type ChatRequest,
  type ChatStream,
  type ChatStreamEvent,
  type EmbeddingsRequest,
  type EmbeddingsResult,
  type ImageEditRequest,
  type ImagesRequest,
  type ImagesResult,
  type ModerationsRequest,
  type ModerationsResult,
  type UpstreamAdapter,
  type UpstreamCall,
} from '../domain/ports/upstream';
import { usageFromOpenAi, usageFromResponses } from '../domain/pricing/usage-readers';
import { type ResponsesAdapter, type ResponsesStreamEvent, type StoredResponseRequest, TERMINAL_EVENTS } from '../domain/ports/responses';
import type { ResponsesEvent } from '../domain/translate/responses-to-chat';
import type { TokenUsage } from '../domain/pricing/usage';
import { UpstreamError } from '../domain/ports/upstream-error';
import { MultipartBuilder } from './multipart-builder';
import { post, readJson, send } from './openai-http';
import { cancellableBody } from './byte-stream';
import { parseSse } from './sse';
import { withFields } from '../with-fields';

/**
 * Channel type 'openai': any OpenAI-compatible upstream. `${base_url}/chat/completions`, `/embeddings`,
 * `/images/generations`, `/images/edits` (multipart), `Authorization: Bearer <key>` (none when the key is ''),
 * the model id mapped per channel. The request body is forwarded as the client sent it (unknown fields
 * included); only `model` is replaced, and a stream always asks for usage.
 */
export function createOpenAiAdapter(): UpstreamAdapter {
  return { chat, chatStream, embeddings, imagesGenerate, imagesEdit, moderations };
}

/**
 * The Responses API natively (`${base_url}/responses`), for channels that declare `responses_api: true`: the body
 * as the client sent it (only `model` replaced), the answer and every stream event back unchanged; usage from the
 * Response (the terminal event's, in a stream).
 */
export function createOpenAiResponsesAdapter(): ResponsesAdapter {
  return {
    inputTokens,
    stored,
    async responses(req, call) {
      const json = await readJson(await post(call, '/responses', JSON.stringify(withFields(req, { model: call.upstreamModel, stream: false })), 'application/json'));
      if (!Array.isArray(json.output)) throw new UpstreamError('protocol', 'the upstream answer has no output');
      return { body: json, usage: usageFromResponses(json.usage) };
    },

    async responsesStream(req, call) {
      const res = await post(call, '/responses', JSON.stringify(withFields(req, { model: call.upstreamModel, stream: true })), 'application/json', 'text/event-stream');
      if (!String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
        res.destroy();
        throw new UpstreamError('protocol', 'the upstream did not answer with an event stream');
      }
      let usage: TokenUsage | null = null;
      let seq = 0;
      let cancelled = false;
      async function* events(): AsyncGenerator<ResponsesStreamEvent> {
        try {
          for await (const ev of parseSse(res.body)) {
            if (ev.data === '' || ev.data === '[DONE]') continue;
            let event: ResponsesEvent;
            try {
              event = JSON.parse(ev.data) as ResponsesEvent;
            } catch {
              throw new UpstreamError('protocol', 'the upstream sent a malformed stream event');
            }
            if (!event || typeof event !== 'object' || typeof event.type !== 'string') throw new UpstreamError('protocol', 'the upstream sent a malformed stream event');
            // A failed Response is an upstream failure: never billed, the client gets the relay's error event.
            if (event.type === 'error' || event.type === 'response.failed') throw new UpstreamError('protocol', 'the upstream reported an error in the stream');
            if (typeof event.sequence_number === 'number') seq = event.sequence_number + 1;
            if (TERMINAL_EVENTS.has(event.type)) usage = usageFromResponses((event.response as { usage?: unknown } | undefined)?.usage);
            yield { event, raw: ev.data };
            if (TERMINAL_EVENTS.has(event.type)) return;
          }
          throw new UpstreamError('protocol', 'the upstream stream ended before response.completed');
        } finally {
          if (!cancelled) res.destroy();
        }
      }
      const it = events();
      return {
        [Symbol.asyncIterator]: () => it,
        usage: () => usage,
        errorEvent: (code, message) => ({ type: 'error', sequence_number: seq, code, message, param: null }),
        cancel() {
          if (cancelled) return;
          cancelled = true;
          res.destroy();
          void it.return(undefined).catch(() => undefined);
        },
      };
    },
  };
}

async function inputTokens(req: Record<string, unknown>, call: UpstreamCall): Promise<Record<string, unknown>> {
  const json = await readJson(await post(call, '/responses/input_tokens', JSON.stringify({ ...req, model: call.upstreamModel }), 'application/json'));
  if (typeof json.input_tokens !== 'number') throw new UpstreamError('protocol', 'the upstream answer has no input_tokens');
  return json;
}

async function stored(req: StoredResponseRequest, call: UpstreamCall): Promise<Record<string, unknown>> {
  const path = `/responses/${encodeURIComponent(req.upstreamId)}${req.suffix}${req.query ? `?${req.query}` : ''}`;
  return readJson(await send(call, req.method, path, req.method === 'POST' ? '{}' : undefined, 'application/json'));
}

async function chat(req: ChatRequest, call: UpstreamCall) {
  const body = JSON.stringify(withFields(req, { model: call.upstreamModel, stream: false, stream_options: undefined }));
  const json = await readJson(await post(call, '/chat/completions', body, 'application/json'));
  if (!Array.isArray(json.choices)) throw new UpstreamError('protocol', 'the upstream answer has no choices');
  return { body: json as ChatCompletion, usage: usageFromOpenAi(json.usage) };
}

async function chatStream(req: ChatRequest, call: UpstreamCall): Promise<ChatStream> {
  const streamOptions = req.stream_options && typeof req.stream_options === 'object' ? req.stream_options : {};
  const body = JSON.stringify(withFields(req, { model: call.upstreamModel, stream: true, stream_options: withFields(streamOptions, { include_usage: true }) }));
  const res = await post(call, '/chat/completions', body, 'application/json', 'text/event-stream');
  const type = String(res.headers['content-type'] ?? '');
  if (!type.startsWith('text/event-stream')) {
    res.destroy();
    throw new UpstreamError('protocol', 'the upstream did not answer with an event stream');
  }
  return cancellableBody(res, chatEvents);
}

/** A chat stream's chunks, as they arrive; `[DONE]` ends it. */
async function* chatEvents(body: AsyncIterable<Buffer>): AsyncGenerator<ChatStreamEvent> {
  for await (const ev of parseSse(body)) {
    const data = ev.data;
    if (data === '[DONE]') return;
    if (data === '') continue;
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new UpstreamError('protocol', 'the upstream sent a malformed stream chunk');
    }
    if (!chunk || typeof chunk !== 'object') throw new UpstreamError('protocol', 'the upstream sent a malformed stream chunk');
    const c = chunk as ChatChunk & { error?: unknown };
    if (c.error !== undefined && !Array.isArray(c.choices)) {
      throw new UpstreamError('protocol', 'the upstream reported an error in the stream');
    }
    if (!Array.isArray(c.choices)) c.choices = [];
    yield { chunk: c, raw: data };
  }
}

async function embeddings(req: EmbeddingsRequest, call: UpstreamCall): Promise<EmbeddingsResult> {
  const json = await readJson(await post(call, '/embeddings', JSON.stringify({ ...req, model: call.upstreamModel }), 'application/json'));
  if (!Array.isArray(json.data)) throw new UpstreamError('protocol', 'the upstream answer has no data');
  const usage = json.usage as { prompt_tokens?: unknown } | undefined;
  const p = usage?.prompt_tokens;
  return { body: json as EmbeddingsResult['body'], promptTokens: Number.isSafeInteger(p) && (p as number) >= 0 ? (p as number) : null };
}

async function imagesGenerate(req: ImagesRequest, call: UpstreamCall): Promise<ImagesResult> {
  const json = await readJson(await post(call, '/images/generations', JSON.stringify({ ...req, model: call.upstreamModel }), 'application/json'));
  if (!Array.isArray(json.data)) throw new UpstreamError('protocol', 'the upstream answer has no data');
  return { body: json as ImagesResult['body'] };
}

async function imagesEdit(req: ImageEditRequest, call: UpstreamCall): Promise<ImagesResult> {
  const form = new MultipartBuilder();
  form.field('model', call.upstreamModel);
  form.field('prompt', req.prompt);
  if (req.n !== undefined) form.field('n', String(req.n));
  if (req.size !== undefined) form.field('size', req.size);
  for (const [k, v] of Object.entries(req.fields)) form.field(k, v);
  const imageName = req.images.length > 1 ? 'image[]' : 'image';
  for (const img of req.images) form.image(imageName, img);
  if (req.mask) form.image('mask', req.mask);
  const json = await readJson(await post(call, '/images/edits', form.finish(), form.contentType));
  if (!Array.isArray(json.data)) throw new UpstreamError('protocol', 'the upstream answer has no data');
  return { body: json as ImagesResult['body'] };
}

async function moderations(req: ModerationsRequest, call: UpstreamCall): Promise<ModerationsResult> {
  const json = await readJson(await post(call, '/moderations', JSON.stringify({ ...req, model: call.upstreamModel }), 'application/json'));
  if (!Array.isArray(json.results)) throw new UpstreamError('protocol', 'the upstream answer has no results');
  return { body: json as ModerationsResult['body'] };
}
