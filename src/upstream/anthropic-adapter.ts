import type { UpstreamAdapter, UpstreamCall } from '../domain/ports/upstream';
import { chatOverMessages } from './chat-over-messages';
import { bedrockInvoke, bedrockStatusError, bedrockStreamAsSse } from './cloud/bedrock';
import { VERTEX_ANTHROPIC_VERSION, vertexAuthHeaders, vertexModelUrl } from './cloud/vertex';
import { sanitizeUpstreamMessage, UpstreamError, retryAfterSeconds } from '../domain/ports/upstream-error';
import { channelSecrets, readAll, readErrorMember, sendUpstream, type UpstreamHttpResponse, withChannelHeaders } from './http';
import {
  DEFAULT_ANTHROPIC_VERSION,
  type MessagesAdapter,
  type MessagesOptions,
  type MessagesResult,
  type MessagesStream,
  type MessagesStreamEvent,
  type TokenCount,
} from '../domain/ports/messages';
import { parseSse } from './sse';
import { AnthropicUsageTracker, usageFromAnthropic } from '../domain/pricing/usage-readers';
import type { AnthropicRequest, AnthropicResponse, AnthropicStreamEvent } from '../domain/translate/types';
import { withFields } from '../with-fields';

/**
 * Channel type 'anthropic': the native Messages API. `POST ${base_url}/messages` with `x-api-key: <key>` (none
 * when the key is '') and `anthropic-version`. Serves /v1/messages natively (the body as the client sent it,
 * only `model` replaced) and /v1/chat/completions by translation both ways, streaming included.
 */
export function createAnthropicAdapter(): UpstreamAdapter & MessagesAdapter {
  return { ...chatOverMessages({ messages, messagesStream }), messages, messagesStream, countTokens };
}

function headersFor(call: UpstreamCall, opts: MessagesOptions, stream: boolean): Record<string, string> {
  const h: Record<string, string> = {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
    'anthropic-version': opts.version || DEFAULT_ANTHROPIC_VERSION,
    'x-request-id': call.requestId,
  };
  if (opts.beta) h['anthropic-beta'] = opts.beta;
  if (call.channel.key) h['x-api-key'] = call.channel.key;
  return withChannelHeaders(h, call.channel);
}

async function post(
  call: UpstreamCall,
  body: Record<string, unknown>,
  opts: MessagesOptions,
  stream: boolean,
  path = '/messages',
): Promise<UpstreamHttpResponse> {
  const target =
    call.channel.type === 'vertex' ? await vertexTarget(call, body, opts, stream, path) : call.channel.type === 'bedrock' ? await bedrockInvoke(call, body, opts, stream, path) : null;
  const res = await sendUpstream({
    url: target?.url ?? `${call.channel.base_url}${path}${opts.query ? `?${opts.query}` : ''}`,
    method: 'POST',
    headers: target?.headers ?? headersFor(call, opts, stream),
    body: target?.body ?? JSON.stringify(withFields(body, { model: call.upstreamModel, stream: stream || undefined })),
    timeoutMs: call.channel.timeout_ms,
    signal: call.signal,
  });
  if (res.status >= 200 && res.status < 300) return stream && call.channel.type === 'bedrock' ? bedrockStreamAsSse(res) : res;
  throw call.channel.type === 'bedrock' ? await bedrockStatusError(res, channelSecrets(call)) : await statusError(res, call);
}

/**
 * Claude on Vertex AI: the Messages body at the model's `:rawPredict` / `:streamRawPredict` (token counting at the
 * `count-tokens` model), without `model` and with Vertex's `anthropic_version`; `anthropic-beta` passes as a header.
 */
async function vertexTarget(call: UpstreamCall, body: Record<string, unknown>, opts: MessagesOptions, stream: boolean, path: string) {
  const counting = path === '/messages/count_tokens';
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
    'x-request-id': call.requestId,
    ...(await vertexAuthHeaders(call.channel)),
  };
  if (opts.beta) headers['anthropic-beta'] = opts.beta;
  const fields = counting
    ? withFields(body, { model: call.upstreamModel })
    : withFields(body, { model: undefined, anthropic_version: VERTEX_ANTHROPIC_VERSION, stream: stream || undefined });
  return {
    url: vertexModelUrl(call.channel, 'anthropic', counting ? 'count-tokens' : call.upstreamModel, stream ? 'streamRawPredict' : 'rawPredict'),
    headers: withChannelHeaders(headers, call.channel),
    body: JSON.stringify(fields),
  };
}

/** A non-2xx answer (`{type:'error', error:{type, message}}`) as an UpstreamError; code = the error's type. */
async function statusError(res: UpstreamHttpResponse, call: UpstreamCall): Promise<UpstreamError> {
  const err = (await readErrorMember(res)) as
    | { type?: unknown; message?: unknown }
    | undefined;
  const secrets = channelSecrets(call);
  const message = sanitizeUpstreamMessage(err?.message, secrets) ?? `The upstream answered HTTP ${res.status}`;
  const type = typeof err?.type === 'string' && /^[a-z_]{1,60}$/.test(err.type) ? err.type : null;
  return new UpstreamError('status', message, res.status, type, null, retryAfterSeconds(res.headers['retry-after']));
}

async function messages(req: AnthropicRequest, call: UpstreamCall, opts: MessagesOptions): Promise<MessagesResult> {
  const body = await readJsonBody(await post(call, req, opts, false));
  if (!body || typeof body !== 'object' || !Array.isArray((body as AnthropicResponse).content)) {
    throw new UpstreamError('protocol', 'the upstream answer has no content');
  }
  return { body: body as AnthropicResponse, usage: usageFromAnthropic((body as AnthropicResponse).usage) };
}

/** A 2xx answer's JSON body; a body that is not JSON is a protocol error. */
async function readJsonBody(res: UpstreamHttpResponse): Promise<unknown> {
  try {
    return JSON.parse((await readAll(res)).toString('utf8'));
  } catch {
    throw new UpstreamError('protocol', 'the upstream answer is not valid JSON');
  }
}

async function countTokens(req: Record<string, unknown>, call: UpstreamCall, opts: MessagesOptions): Promise<TokenCount> {
  const body = await readJsonBody(await post(call, req, opts, false, '/messages/count_tokens'));
  const n = (body as { input_tokens?: unknown } | null)?.input_tokens;
  if (!Number.isSafeInteger(n) || (n as number) < 0) throw new UpstreamError('protocol', 'the upstream answer has no input_tokens');
  return body as TokenCount;
}

async function messagesStream(req: AnthropicRequest, call: UpstreamCall, opts: MessagesOptions): Promise<MessagesStream> {
  const res = await post(call, req, opts, true);
  const type = String(res.headers['content-type'] ?? '');
  if (!type.startsWith('text/event-stream')) {
    res.destroy();
    throw new UpstreamError('protocol', 'the upstream did not answer with an event stream');
  }
  const usage = new AnthropicUsageTracker();
  const secrets = channelSecrets(call);
  let cancelled = false;
  async function* events(): AsyncGenerator<MessagesStreamEvent> {
    try {
      for await (const ev of parseSse(res.body)) {
        if (ev.data === '') continue;
        let event: AnthropicStreamEvent;
        try {
          event = JSON.parse(ev.data) as AnthropicStreamEvent;
        } catch {
          throw new UpstreamError('protocol', 'the upstream sent a malformed stream event');
        }
        if (!event || typeof event !== 'object' || typeof event.type !== 'string') {
          throw new UpstreamError('protocol', 'the upstream sent a malformed stream event');
        }
        if (event.type === 'error') {
          const message = sanitizeUpstreamMessage(event.error?.message, secrets) ?? 'the upstream reported an error in the stream';
          throw new UpstreamError('protocol', message);
        }
        usage.see(event);
        yield { event, raw: ev.data };
        if (event.type === 'message_stop') return;
      }
      throw new UpstreamError('protocol', 'the upstream stream ended before message_stop');
    } finally {
      if (!cancelled) res.destroy();
    }
  }
  const it = events();
  return {
    [Symbol.asyncIterator]: () => it,
    usage: () => usage.usage(),
    cancel() {
      if (cancelled) return;
      cancelled = true;
      res.destroy();
      void it.return(undefined).catch(() => undefined);
    },
  };
}
