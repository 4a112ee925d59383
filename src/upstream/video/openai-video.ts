import type { ChannelConfig } from '../../gateway-config/schema';
import { UpstreamError } from '../../domain/ports/upstream-error';
import { sendUpstream, withChannelHeaders } from '../http';
import { ASSET_TIMEOUT_MS, baseUrlOf, errorOf, idempotencyHeader, progressOf, retryAfterOf, stringOf, type VideoAdapterParts, videoJson } from './adapter';

const STATES = { queued: 'queued', in_progress: 'processing', completed: 'completed', failed: 'failed' } as const;

const contentPath = (upstreamId: string) => `/v1/videos/${encodeURIComponent(upstreamId)}/content`;

/**
 * OpenAI's own video API (channel type `openai-video`) behind our family A: POST {base}/v1/videos as
 * multipart/form-data (`model`, `prompt`, `seconds`, `size`, `input_reference` file); GET {base}/v1/videos/{id} with
 * statuses queued, in_progress (our processing), completed, failed; the file's bytes at GET .../content, which
 * takes the channel's key, so the gateway fetches it (never a client); DELETE to give up.
 */
export const openaiVideoAdapter: VideoAdapterParts = {
  async submit(channel, request, signal, input, idempotencyKey) {
    const form = new FormData();
    for (const name of ['model', 'prompt', 'seconds', 'size']) {
      const v = request[name];
      if (typeof v === 'string' || typeof v === 'number') form.append(name, String(v));
    }
    if (input) form.append('input_reference', new Blob([new Uint8Array(input.bytes)], { type: input.contentType }), input.filename);
    const { body } = await videoJson(channel, 'POST', '/v1/videos', signal, { form, headers: idempotencyHeader(idempotencyKey) });
    const id = stringOf(body.id);
    if (!id) throw new UpstreamError('protocol', 'the upstream answer has no video id');
    return id;
  },

  async poll(channel, upstreamId, signal) {
    const { body, headers } = await videoJson(channel, 'GET', `/v1/videos/${encodeURIComponent(upstreamId)}`, signal);
    const state = STATES[body.status as keyof typeof STATES];
    if (!state) throw new UpstreamError('protocol', 'the upstream answered an unknown video status');
    if (state === 'failed') return { state, progress: progressOf(body.progress), error: errorOf(body.error) };
    if (state !== 'completed') return { state, progress: progressOf(body.progress), retryAfterSeconds: retryAfterOf(headers) };
    const seconds = Number(body.seconds);
    return {
      state,
      progress: 100,
      // Not a link anyone else can follow: fetchAsset below reads it with the channel's key.
      assetUrl: `${baseUrlOf(channel)}${contentPath(upstreamId)}`,
      duration: Number.isFinite(seconds) && seconds > 0 ? Math.round(seconds) : undefined,
      resolution: stringOf(body.size),
    };
  },

  async cancel(channel, upstreamId, signal) {
    await videoJson(channel, 'DELETE', `/v1/videos/${encodeURIComponent(upstreamId)}`, signal).catch(() => undefined);
  },

  fetchAsset(channel: ChannelConfig, assetUrl: string, signal: AbortSignal, range?: string) {
    // The key goes only to the channel's own content endpoint, whatever the task row says.
    if (!assetUrl.startsWith(`${baseUrlOf(channel)}/v1/videos/`)) throw new UpstreamError('protocol', 'the file is not on this channel');
    const own: Record<string, string> = { authorization: `Bearer ${channel.key}`, accept: 'application/binary' };
    if (range) own.range = range;
    return sendUpstream({ url: assetUrl, method: 'GET', headers: withChannelHeaders(own, channel), timeoutMs: ASSET_TIMEOUT_MS, signal });
  },
};
