import { UpstreamError } from '../../domain/ports/upstream-error';
import { errorOf, idempotencyHeader, progressOf, retryAfterOf, stringOf, type VideoAdapterParts, videoJson } from './adapter';

/** Family C upstream: POST {base}/vendorB/v1/api/video/submit, GET .../status/{taskId} (data.video_url), cancel. */
export const videoCAdapter: VideoAdapterParts = {
  async submit(channel, request, signal, _input, idempotencyKey) {
    const { body } = await videoJson(channel, 'POST', '/vendorB/v1/api/video/submit', signal, { body: request, headers: idempotencyHeader(idempotencyKey) });
    const id = stringOf((body.data as { taskId?: unknown } | undefined)?.taskId);
    if (!id) throw new UpstreamError('protocol', 'the upstream answer has no taskId');
    return id;
  },

  async poll(channel, upstreamId, signal) {
    const { body, headers } = await videoJson(channel, 'GET', `/vendorB/v1/api/video/status/${encodeURIComponent(upstreamId)}`, signal);
    const d = (body.data ?? {}) as Record<string, unknown>;
    const progress = progressOf(d.progress);
    switch (d.status) {
      case 'processing':
        return { state: 'processing', progress, retryAfterSeconds: retryAfterOf(headers) };
      case 'failed':
        return { state: 'failed', progress, error: errorOf(d.error ?? { code: d.error_code, message: d.message }) };
      case 'completed': {
        const assetUrl = stringOf(d.video_url);
        if (!assetUrl) throw new UpstreamError('protocol', 'the completed upstream task has no video_url');
        return { state: 'completed', progress: 100, assetUrl, duration: typeof d.duration === 'number' ? d.duration : undefined, resolution: stringOf(d.resolution) };
      }
      default:
        throw new UpstreamError('protocol', 'the upstream answered an unknown task status');
    }
  },

  async cancel(channel, upstreamId, signal) {
    await videoJson(channel, 'POST', `/vendorB/v1/api/video/cancel/${encodeURIComponent(upstreamId)}`, signal).catch(() => undefined);
  },
};
