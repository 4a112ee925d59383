import type { OutboundPolicy } from '../../../domain/outbound/address-policy';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifySchemaCompiler } from 'fastify';
import { ValidationError } from '../../../domain/errors';
import { openVideoFile } from '../../../domain/video/result-files';
import type { SubmitOptions } from '../../../domain/video/video-service';
import type { LinkOf } from '../../../domain/video/views';
import { validateCallbackUrl } from '../../../domain/webhooks/callback-url';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'config' | 'repos' | 'upstream' | 'videoLinks' | 'videoStore'>;

/**
 * The video routes' zod schemas document the bodies (OpenAPI); the family rules and their error codes are the
 * domain's `validateVideoA|B|C`, run in the handler, so the schemas are not enforced a second time here.
 */
export const documentOnly: FastifySchemaCompiler<unknown> = () => (data) => ({ value: data });

/** The public origin the client called, for links and polling URLs (never the upstream's). */
export function originOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

export function linkOf(deps: RouteDeps, request: FastifyRequest): LinkOf {
  const origin = originOf(request);
  return (taskId) => `${origin}${deps.videoLinks.signLink({ taskId }).path}`;
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** Idempotency-Key and X-Callback-Url of a submit, checked. */
export function submitOptions(request: FastifyRequest, outbound: OutboundPolicy): SubmitOptions {
  const idem = request.headers['idempotency-key'];
  if (idem !== undefined && (typeof idem !== 'string' || !IDEMPOTENCY_KEY.test(idem))) {
    throw new ValidationError('Idempotency-Key: must be 1 to 255 printable ASCII characters', 'idempotency-key');
  }
  return { requestId: request.id, idempotencyKey: idem ?? null, callbackUrl: callbackUrlOf(request, outbound), publicOrigin: originOf(request), period: request.keyPeriod };
}

/** A submit's X-Callback-Url (given at most once), checked against the outbound policy; null without one. */
export function callbackUrlOf(request: FastifyRequest, outbound: OutboundPolicy): string | null {
  const callback = request.headers['x-callback-url'];
  if (callback !== undefined && typeof callback !== 'string') throw new ValidationError('X-Callback-Url: must be given once', 'x-callback-url');
  return validateCallbackUrl(callback, outbound);
}

/**
 * Answers with a completed task's file (our stored copy, Range included; src/domain/video/result-files.ts): the
 * result links and the OpenAI clients' binary content read. A client that goes away stops the read.
 */
export async function sendVideoFile(deps: RouteDeps, request: FastifyRequest, reply: FastifyReply, taskId: string): Promise<FastifyReply> {
  const controller = new AbortController();
  request.raw.on('close', () => controller.abort());
  const range = typeof request.headers.range === 'string' ? request.headers.range : undefined;
  const file = await openVideoFile({ tasks: deps.repos.videoTasks, store: deps.videoStore, config: deps.config, adapters: deps.upstream.video }, taskId, range, controller.signal);
  reply.status(file.status).headers(file.headers);
  return reply.send(file.body ?? '');
}
