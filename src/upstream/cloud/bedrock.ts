import { Readable } from 'node:stream';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { UniversalEventStreamMarshaller } from '@smithy/core/event-streams';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import type { ChannelConfig } from '../../gateway-config/schema';
import type { MessagesOptions } from '../../domain/ports/messages';
import type { UpstreamCall } from '../../domain/ports/upstream';
import { retryAfterSeconds, sanitizeUpstreamMessage, UpstreamError } from '../../domain/ports/upstream-error';
import { channelSecrets, readAll, sendUpstream, type UpstreamHttpResponse, withChannelHeaders } from '../http';
import { perChannel } from './per-channel';
import { credentialRefused } from './token-endpoint';

/**
 * AWS Bedrock, channel type `bedrock`, for Anthropic's models through InvokeModel: the Messages body (without `model`,
 * with `anthropic_version: bedrock-2023-05-31` and the client's `anthropic-beta` as `anthropic_beta`) at
 * `{base_url}/model/{modelId}/invoke`, streamed at `/invoke-with-response-stream`, whose AWS event stream is decoded by
 * the SDK's own codec (@smithy/core) into the Messages events the Anthropic adapter reads. Requests are signed with
 * Signature V4 (@smithy/signature-v4) by the channel's `aws` credentials or the SDK's default chain (environment,
 * shared profile, web identity, container and instance roles), or carry a Bedrock API key (`key`) as a bearer token.
 */

export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/** The channel's credentials: its own, or the default chain, which caches and refreshes them itself, one at a time. */
function credentialsOf(channel: ChannelConfig): AwsCredentialIdentityProvider {
  const aws = channel.bedrock!.aws;
  if (!aws) return defaultProvider();
  const identity: AwsCredentialIdentity = { accessKeyId: aws.access_key_id, secretAccessKey: aws.secret_access_key, ...(aws.session_token ? { sessionToken: aws.session_token } : {}) };
  return async () => identity;
}

/** One signer per channel, made on its first call. */
const signerOf = perChannel(
  (channel) => new SignatureV4({ service: 'bedrock', region: channel.bedrock!.region, credentials: credentialsOf(channel), sha256: Hash.bind(null, 'sha256') }),
);

/** The signed (or bearer) headers of one request to Bedrock. */
async function authorize(channel: ChannelConfig, url: URL, headers: Record<string, string>, body: string): Promise<Record<string, string>> {
  if (channel.key) return { ...headers, authorization: `Bearer ${channel.key}` };
  try {
    const signed = await signerOf(channel).sign({
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      path: url.pathname,
      query: {},
      headers: { ...headers, host: url.host },
      body,
    });
    return signed.headers as Record<string, string>;
  } catch {
    throw credentialRefused('no AWS credentials could be found or used to sign');
  }
}

/** InvokeModel (or its streamed form) for a Messages call on a bedrock channel. */
export async function bedrockInvoke(call: UpstreamCall, body: Record<string, unknown>, opts: MessagesOptions, stream: boolean, path: string) {
  if (path !== '/messages') throw new UpstreamError('status', 'token counting is not served by bedrock channels', 404, 'not_found');
  const betas = opts.beta ? opts.beta.split(',').map((b) => b.trim()).filter(Boolean) : [];
  const text = JSON.stringify({ ...body, model: undefined, stream: undefined, anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...(betas.length ? { anthropic_beta: betas } : {}) });
  return signedModelRequest(call, stream ? 'invoke-with-response-stream' : 'invoke', text, jsonHeaders(stream));
}

/** The content type of a Bedrock call, and the answer it accepts: JSON, or an AWS event stream. */
const jsonHeaders = (stream: boolean): Record<string, string> => ({ 'content-type': 'application/json', accept: stream ? 'application/vnd.amazon.eventstream' : 'application/json' });

/** A request to `{base_url}/model/{modelId}/{action}` with `headers`, signed (or carrying the API key). */
async function signedModelRequest(call: UpstreamCall, action: string, text: string, headers: Record<string, string>) {
  const url = new URL(`${call.channel.base_url}/model/${encodeURIComponent(call.upstreamModel)}/${action}`);
  return { url: url.toString(), headers: await authorize(call.channel, url, headers, text), body: text };
}

const marshaller = new UniversalEventStreamMarshaller({ utf8Encoder: toUtf8, utf8Decoder: fromUtf8 });

/** One event of an AWS event stream: its `:event-type` and its JSON payload. */
export interface AwsStreamEvent {
  type: string;
  payload: Record<string, unknown>;
}

/**
 * The events of an AWS event stream (`application/vnd.amazon.eventstream`), decoded by the SDK's own codec
 * (@smithy/core). An exception message (throttling, a model error) ends it as an UpstreamError naming the exception.
 */
export async function* awsEventStream(body: AsyncIterable<Uint8Array>): AsyncGenerator<AwsStreamEvent> {
  const events = marshaller.deserialize(body, async (input) => {
    const [type] = Object.keys(input);
    const message = input[type];
    let payload: unknown;
    try {
      payload = JSON.parse(toUtf8(message.body));
    } catch {
      throw new UpstreamError('protocol', 'the upstream sent a malformed stream event');
    }
    return { [type]: payload } as never;
  });
  try {
    for await (const event of events as AsyncIterable<Record<string, Record<string, unknown>> | undefined>) {
      if (!event) continue;
      const [type] = Object.keys(event);
      if (type) yield { type, payload: event[type] ?? {} };
    }
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    const name = String((err as { name?: string }).name ?? 'exception');
    const throttled = /^throttlingException$/i.test(name) || /^serviceUnavailableException$/i.test(name);
    throw new UpstreamError('protocol', `Bedrock: ${/^[A-Za-z]{1,60}$/.test(name) ? name : 'exception'}`, throttled ? 429 : null, throttled ? 'rate_limit_error' : null);
  }
}

/**
 * A streamed InvokeModel answer as the Messages event stream the Anthropic adapter reads: each `chunk` event's
 * `bytes` is one Messages event; an exception (throttling, a model error) mid-stream becomes an `error` event.
 */
export function bedrockStreamAsSse(res: UpstreamHttpResponse): UpstreamHttpResponse {
  async function* sse(): AsyncGenerator<Buffer> {
    try {
      for await (const event of awsEventStream(res.body as AsyncIterable<Uint8Array>)) {
        const bytes = event.type === 'chunk' ? event.payload.bytes : undefined;
        if (typeof bytes !== 'string') continue;
        const data = Buffer.from(bytes, 'base64').toString('utf8');
        const type = (JSON.parse(data) as { type?: string }).type ?? 'message';
        yield Buffer.from(`event: ${type}\ndata: ${data}\n\n`);
      }
    } catch (err) {
      const e = err as UpstreamError;
      yield Buffer.from(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: e.upstreamCode ?? 'api_error', message: e.message } })}\n\n`);
    }
  }
  const body = Readable.from(sse());
  return { ...res, headers: { ...res.headers, 'content-type': 'text/event-stream' }, body, readAll: () => Promise.reject(new UpstreamError('protocol', 'a stream is read as events')) };
}

/**
 * Bedrock's error answer (`{message}`, its type in `x-amzn-errortype`) as an UpstreamError: the type (ThrottlingException,
 * ValidationException...) is the code passed on, its message shown sanitized.
 */
export async function bedrockStatusError(res: UpstreamHttpResponse, secrets: readonly string[]): Promise<UpstreamError> {
  let message: unknown;
  try {
    message = (JSON.parse((await readAll(res, 64 * 1024)).toString('utf8')) as { message?: unknown; Message?: unknown } | null)?.message;
  } catch {
    message = undefined;
  }
  const type = String(res.headers['x-amzn-errortype'] ?? '').split(':')[0];
  const code = /^[A-Za-z]{1,60}$/.test(type) ? type : null;
  return new UpstreamError('status', sanitizeUpstreamMessage(message, secrets) ?? `The upstream answered HTTP ${res.status}`, res.status, code, null, retryAfterSeconds(res.headers['retry-after']));
}

/**
 * One signed call to a Bedrock model (`{base_url}/model/{modelId}/{action}`): its 2xx answer, or the error Bedrock
 * answered as an UpstreamError. The channel's own `headers:` are laid on before signing, so the signature covers them.
 */
export async function bedrockModelCall(call: UpstreamCall, action: string, body: unknown, stream: boolean): Promise<UpstreamHttpResponse> {
  const request = await signedModelRequest(call, action, JSON.stringify(body), withChannelHeaders(jsonHeaders(stream), call.channel));
  const res = await sendUpstream({ ...request, method: 'POST', timeoutMs: call.channel.timeout_ms, signal: call.signal });
  if (res.status >= 200 && res.status < 300) return res;
  throw await bedrockStatusError(res, channelSecrets(call));
}
