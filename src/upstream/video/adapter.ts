import { upstreamSpan } from '../../observability/tracing';
import type { ChannelConfig } from '../../gateway-config/schema';
import { UpstreamError } from '../errors';
import { readAll, readErrorMember, sendUpstream, type UpstreamHttpResponse, withChannelHeaders } from '../http';

/**
 * The upstream side of a video task: one adapter per channel type (video-a, video-b, video-c), each speaking the
 * same contract as our own front door of that family, rooted at the channel's base_url, with
 * `Authorization: Bearer <key>`. Adapters hold no state: the workflow keeps the upstream id.
 */

export interface VideoUpstreamStatus {
  state: 'queued' | 'processing' | 'completed' | 'failed';
  progress: number;
  /** The upstream's hint for the next poll, in seconds (Retry-After). */
  retryAfterSeconds?: number;
  /** On completed: where the upstream serves the file (never shown to clients). */
  assetUrl?: string;
  duration?: number;
  resolution?: string;
  /** On failed: the upstream's reason, sanitised. */
  error?: { code: string; message: string };
}

/** A first frame the client uploaded with the task (models with the `-fl` suffix). */
export interface VideoInputReference {
  bytes: Buffer;
  contentType: string;
  filename: string;
}

export interface VideoAdapter {
  /** Submits the normalised request (and the first frame, where given); the upstream's task id. */
  submit(channel: ChannelConfig, request: Record<string, unknown>, signal: AbortSignal, input?: VideoInputReference): Promise<string>;
  poll(channel: ChannelConfig, upstreamId: string, signal: AbortSignal): Promise<VideoUpstreamStatus>;
  /** Best effort: a task that already finished, or an upstream without cancel, is not an error. */
  cancel(channel: ChannelConfig, upstreamId: string, signal: AbortSignal): Promise<void>;
  /** The finished file at `assetUrl` (what poll returned); `range` passed on. Default: a plain GET of the URL. */
  fetchAsset?(channel: ChannelConfig, assetUrl: string, signal: AbortSignal, range?: string): Promise<UpstreamHttpResponse>;
}

/** Longest silence while fetching a finished file. */
export const ASSET_TIMEOUT_MS = 30_000;

/**
 * The finished file of a task: the adapter's own fetch, or a GET of the upstream's link (a signed URL that takes
 * no credentials, so the channel's key is never sent to wherever it points).
 */
export function fetchVideoAsset(adapter: VideoAdapter, channel: ChannelConfig, assetUrl: string, signal: AbortSignal, range?: string): Promise<UpstreamHttpResponse> {
  if (adapter.fetchAsset) return adapter.fetchAsset(channel, assetUrl, signal, range);
  return sendUpstream({ url: assetUrl, method: 'GET', headers: range ? { range } : {}, timeoutMs: ASSET_TIMEOUT_MS, signal });
}

/** The first frame as a data URL, for upstreams that take it inside their JSON body. */
export function inputDataUrl(input: VideoInputReference): string {
  return `data:${input.contentType};base64,${input.bytes.toString('base64')}`;
}

export function baseUrlOf(channel: ChannelConfig): string {
  return channel.base_url.replace(/\/+$/, '');
}

/** A JSON call to the channel: the parsed 2xx body, or UpstreamError (status, sanitised message and code). */
export async function videoJson(
  channel: ChannelConfig,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  signal: AbortSignal,
  opts: { body?: unknown; form?: FormData; headers?: Record<string, string> } = {},
): Promise<{ body: Record<string, unknown>; headers: UpstreamHttpResponse['headers'] }> {
  const own: Record<string, string> = { authorization: `Bearer ${channel.key}`, accept: 'application/json', ...opts.headers };
  let body: string | Buffer | undefined;
  if (opts.form !== undefined) {
    // The platform's own multipart encoder: a Request serialises the form and names its boundary.
    const encoded = new Request('http://form.invalid/', { method: 'POST', body: opts.form });
    own['content-type'] = encoded.headers.get('content-type')!;
    body = Buffer.from(await encoded.arrayBuffer());
  } else if (opts.body !== undefined) {
    own['content-type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  const headers = withChannelHeaders(own, channel);
  const attributes = { 'gateway.channel': channel.name, 'gateway.channel_type': channel.type, 'http.request.method': method, 'url.path': path.split('?')[0] };
  return upstreamSpan(`upstream ${method} ${channel.type}`, attributes, async () => {
    const res = await sendUpstream({ url: `${baseUrlOf(channel)}${path}`, method, headers, body, timeoutMs: channel.timeout_ms, signal });
    if (res.status < 200 || res.status >= 300) {
      const member = await readErrorMember(res).catch(() => undefined);
      const code = typeof member === 'object' && member && typeof (member as { code?: unknown }).code === 'string' ? (member as { code: string }).code : null;
      throw new UpstreamError('status', `the upstream answered ${res.status}`, res.status, code);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse((await readAll(res, 1024 * 1024)).toString('utf8'));
    } catch (err) {
      if (err instanceof UpstreamError) throw err;
      throw new UpstreamError('protocol', 'the upstream answer is not JSON');
    }
    if (!parsed || typeof parsed !== 'object') throw new UpstreamError('protocol', 'the upstream answer is not a JSON object');
    return { body: parsed as Record<string, unknown>, headers: res.headers };
  });
}

export function retryAfterOf(headers: UpstreamHttpResponse['headers']): number | undefined {
  const v = Number(headers['retry-after']);
  return Number.isFinite(v) && v > 0 ? v : undefined;
}

export function progressOf(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? Math.max(0, Math.min(100, Math.floor(v))) : 0;
}

export function stringOf(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v : undefined;
}

export function errorOf(v: unknown, fallbackCode = 'generation_failed'): { code: string; message: string } {
  const e = (v && typeof v === 'object' ? v : {}) as { code?: unknown; message?: unknown };
  return {
    code: typeof e.code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(e.code) ? e.code : fallbackCode,
    message: typeof e.message === 'string' ? e.message : 'The video generation failed upstream.',
  };
}
