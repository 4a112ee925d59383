import { UpstreamError } from '../../domain/ports/upstream-error';
import { errorOf, idempotencyHeader, inputDataUrl, progressOf, retryAfterOf, stringOf, type VideoAdapterParts, videoJson } from './adapter';

const STATES = { queued: 'queued', processing: 'processing', completed: 'completed', failed: 'failed' } as const;

/** Family A upstream (the first frame, if any, as `input_reference`, a data URL): POST {base}/v1/videos, GET {base}/v1/videos/{id}, GET .../content, DELETE to cancel. */
export const videoAAdapter: VideoAdapterParts = {
  async submit(channel, request, signal, input, idempotencyKey) {
    const sent = input ? { ...request, input_reference: inputDataUrl(input) } : request;
    const { body } = await videoJson(channel, 'POST', '/v1/videos', signal, { body: sent, headers: idempotencyHeader(idempotencyKey) });
    const id = stringOf(body.id);
    if (!id) throw new UpstreamError('protocol', 'the upstream answer has no video id');
    return id;
  },

  async poll(channel, upstreamId, signal) {
    const path = `/v1/videos/${encodeURIComponent(upstreamId)}`;
    const { body, headers } = await videoJson(channel, 'GET', path, signal);
    const state = STATES[body.status as keyof typeof STATES];
    if (!state) throw new UpstreamError('protocol', 'the upstream answered an unknown video status');
    if (state === 'failed') return { state, progress: progressOf(body.progress), error: errorOf(body.error) };
    if (state !== 'completed') return { state, progress: progressOf(body.progress), retryAfterSeconds: retryAfterOf(headers) };
    const content = (await videoJson(channel, 'GET', `${path}/content`, signal)).body;
    const assetUrl = stringOf(content.url);
    if (!assetUrl) throw new UpstreamError('protocol', 'the completed upstream video has no url');
    return {
      state,
      progress: 100,
      assetUrl,
      duration: typeof content.duration === 'number' ? content.duration : undefined,
      resolution: stringOf(content.resolution),
    };
  },

  async cancel(channel, upstreamId, signal) {
    await videoJson(channel, 'DELETE', `/v1/videos/${encodeURIComponent(upstreamId)}`, signal).catch(() => undefined);
  },
};
