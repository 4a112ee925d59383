import { randomBytes } from 'node:crypto';
import {
  type ChatChunk,
  type ChatCompletion,
  type ChatRequest,
  type ChatStream,
  type ChatStreamEvent,
  type EmbeddingsRequest,
  type EmbeddingsResult,
  type ImageEditRequest,
  type ImageInput,
  type ImagesRequest,
  type ImagesResult,
  type UpstreamAdapter,
  type UpstreamCall,
} from '../domain/ports/upstream';
import { usageFromOpenAi, usageFromResponses } from '../domain/pricing/usage-readers';
import { type ResponsesAdapter, type ResponsesStreamEvent, type StoredResponseRequest, TERMINAL_EVENTS } from '../domain/ports/responses';
import type { ResponsesEvent } from '../domain/translate/responses-to-chat';
import type { TokenUsage } from '../domain/pricing/usage';
import { sanitizeUpstreamMessage, UpstreamError } from '../domain/ports/upstream-error';
import { readAll, readErrorMember, sendUpstream, type UpstreamHttpResponse, withChannelHeaders } from './http';
import { parseSse } from './sse';

/**
 * Channel type 'openai': any OpenAI-compatible upstream. `${base_url}/chat/completions`, `/embeddings`,
 * `/images/generations`, `/images/edits` (multipart), `Authorization: Bearer <key>` (none when the key is ''),
 * the model id mapped per channel. The request body is forwarded as the client sent it (unknown fields
 * included); only `model` is replaced, and a stream always asks for usage.
 */
export function createOpenAiAdapter(): UpstreamAdapter {
  return { chat, chatStream, embeddings, imagesGenerate, imagesEdit };
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
      const json = await readJson(await post(call, '/responses', JSON.stringify({ ...req, model: call.upstreamModel, stream: false }), 'application/json'));
      if (!Array.isArray(json.output)) throw new UpstreamError('protocol', 'the upstream answer has no output');
      return { body: json, usage: usageFromResponses(json.usage) };
    },

    async responsesStream(req, call) {
      const res = await post(call, '/responses', JSON.stringify({ ...req, model: call.upstreamModel, stream: true }), 'application/json', 'text/event-stream');
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

function headersFor(call: UpstreamCall, contentType: string, accept = 'application/json'): Record<string, string> {
  const h: Record<string, string> = { 'content-type': contentType, accept, 'x-request-id': call.requestId };
  if (call.channel.key) h.authorization = `Bearer ${call.channel.key}`;
  return withChannelHeaders(h, call.channel);
}

/** One call to `${base_url}${path}`; a non-2xx answer is thrown as an UpstreamError. */
async function send(call: UpstreamCall, method: 'GET' | 'POST' | 'DELETE', path: string, body: string | Buffer | undefined, contentType: string, accept?: string): Promise<UpstreamHttpResponse> {
  const res = await sendUpstream({
    url: `${call.channel.base_url}${path}`,
    method,
    headers: headersFor(call, contentType, accept),
    body,
    timeoutMs: call.channel.timeout_ms,
    signal: call.signal,
  });
  if (res.status >= 200 && res.status < 300) return res;
  throw await statusError(res, call);
}

function post(call: UpstreamCall, path: string, body: string | Buffer, contentType: string, accept?: string): Promise<UpstreamHttpResponse> {
  return send(call, 'POST', path, body, contentType, accept);
}

/** A non-2xx answer as an UpstreamError: the upstream's code/param/message, sanitised; never its raw body. */
async function statusError(res: UpstreamHttpResponse, call: UpstreamCall): Promise<UpstreamError> {
  const err = (await readErrorMember(res)) as
    | { message?: unknown; code?: unknown; param?: unknown; type?: unknown }
    | string
    | undefined;
  const secrets = [call.channel.key, call.channel.base_url, safeHost(call.channel.base_url)];
  const rawMessage = typeof err === 'string' ? err : err?.message;
  const message = sanitizeUpstreamMessage(rawMessage, secrets) ?? `The upstream answered HTTP ${res.status}`;
  const code = typeof err === 'object' ? codeText(err.code ?? err.type, secrets) : null;
  const param = typeof err === 'object' ? codeText(err.param, secrets) : null;
  return new UpstreamError('status', message, res.status, code, param);
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}

/** A short identifier-like code or param; anything else is dropped. */
function codeText(v: unknown, secrets: readonly string[]): string | null {
  if (typeof v !== 'string' && typeof v !== 'number') return null;
  const s = sanitizeUpstreamMessage(String(v), secrets);
  return s && /^[\w.[\]-]{1,100}$/.test(s) ? s : null;
}

async function readJson(res: UpstreamHttpResponse): Promise<Record<string, unknown>> {
  const buf = await readAll(res);
  try {
    const v: unknown = JSON.parse(buf.toString('utf8'));
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new UpstreamError('protocol', 'the upstream answer is not valid JSON');
}

async function chat(req: ChatRequest, call: UpstreamCall) {
  const body = JSON.stringify({ ...req, model: call.upstreamModel, stream: false, stream_options: undefined });
  const json = await readJson(await post(call, '/chat/completions', body, 'application/json'));
  if (!Array.isArray(json.choices)) throw new UpstreamError('protocol', 'the upstream answer has no choices');
  return { body: json as ChatCompletion, usage: usageFromOpenAi(json.usage) };
}

async function chatStream(req: ChatRequest, call: UpstreamCall): Promise<ChatStream> {
  const streamOptions = req.stream_options && typeof req.stream_options === 'object' ? req.stream_options : {};
  const body = JSON.stringify({ ...req, model: call.upstreamModel, stream: true, stream_options: { ...streamOptions, include_usage: true } });
  const res = await post(call, '/chat/completions', body, 'application/json', 'text/event-stream');
  const type = String(res.headers['content-type'] ?? '');
  if (!type.startsWith('text/event-stream')) {
    res.destroy();
    throw new UpstreamError('protocol', 'the upstream did not answer with an event stream');
  }
  let cancelled = false;
  async function* events(): AsyncGenerator<ChatStreamEvent> {
    try {
      for await (const ev of parseSse(res.body)) {
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
    } finally {
      if (!cancelled) res.destroy();
    }
  }
  const it = events();
  return {
    [Symbol.asyncIterator]: () => it,
    cancel() {
      if (cancelled) return;
      cancelled = true;
      res.destroy();
      void it.return(undefined).catch(() => undefined);
    },
  };
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

/** A multipart/form-data body built in memory (edits are a few MB at most). */
class MultipartBuilder {
  private readonly boundary = `----gateway${randomBytes(12).toString('hex')}`;
  private readonly parts: Buffer[] = [];
  readonly contentType = `multipart/form-data; boundary=${this.boundary}`;

  field(name: string, value: string): void {
    this.parts.push(Buffer.from(`--${this.boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"\r\n\r\n${value}\r\n`));
  }

  image(name: string, img: ImageInput): void {
    if (img.kind === 'url') return this.field(name, img.url);
    this.parts.push(
      Buffer.from(
        `--${this.boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"; filename="${quote(img.filename)}"\r\nContent-Type: ${img.contentType}\r\n\r\n`,
      ),
      img.data,
      Buffer.from('\r\n'),
    );
  }

  finish(): Buffer {
    return Buffer.concat([...this.parts, Buffer.from(`--${this.boundary}--\r\n`)]);
  }
}

function quote(s: string): string {
  return s.replace(/["\r\n\\]/g, '_');
}
