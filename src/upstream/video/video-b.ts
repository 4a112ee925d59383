import { UpstreamError } from '../../domain/ports/upstream-error';
import { errorOf, idempotencyHeader, progressOf, retryAfterOf, stringOf, type VideoAdapterParts, videoJson } from './adapter';

const STATES = { submitted: 'queued', in_progress: 'processing', completed: 'completed', failed: 'failed' } as const;

/**
 * Family B upstream: POST {base}/vendorA/api/v1/services/aigc/video-generation/video-synthesis with
 * X-Vendor-Async: enable; poll GET {base}/v1/tasks/{id} (result_url on completion); POST .../cancel.
 */
export const videoBAdapter: VideoAdapterParts = {
  async submit(channel, request, signal, _input, idempotencyKey) {
    const { body } = await videoJson(channel, 'POST', '/vendorA/api/v1/services/aigc/video-generation/video-synthesis', signal, {
      body: request,
      headers: { 'x-vendor-async': 'enable', ...idempotencyHeader(idempotencyKey) },
    });
    const id = stringOf((body.output as { task_id?: unknown } | undefined)?.task_id);
    if (!id) throw new UpstreamError('protocol', 'the upstream answer has no task_id');
    return id;
  },

  async poll(channel, upstreamId, signal) {
    const { body, headers } = await videoJson(channel, 'GET', `/v1/tasks/${encodeURIComponent(upstreamId)}`, signal);
    const state = STATES[body.status as keyof typeof STATES];
    if (!state) throw new UpstreamError('protocol', 'the upstream answered an unknown task status');
    if (state === 'failed') return { state, progress: progressOf(body.progress), error: errorOf(body.error) };
    if (state !== 'completed') return { state, progress: progressOf(body.progress), retryAfterSeconds: retryAfterOf(headers) };
    const assetUrl = stringOf(body.result_url);
    if (!assetUrl) throw new UpstreamError('protocol', 'the completed upstream task has no result_url');
    return {
      state,
      progress: 100,
      assetUrl,
      duration: typeof body.duration === 'number' ? body.duration : undefined,
      resolution: stringOf(body.resolution),
    };
  },

  async cancel(channel, upstreamId, signal) {
    await videoJson(channel, 'POST', `/v1/tasks/${encodeURIComponent(upstreamId)}/cancel`, signal).catch(() => undefined);
  },
};
