import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { ValidationError } from '../../../domain/errors';
import { DEFAULT_ANTHROPIC_VERSION, type MessagesOptions } from '../../../domain/ports/messages';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'engine'>;
import { declareFamily } from '../../errors/route-family';
import { countTokensBody, messagesBody, VERSION_PATTERN } from '../../../schemas/messages';
import { z } from 'zod';
import { callerOf, forwardedQuery, namedSseSink } from './relay-transport';
import { messagesCall, messagesCountEndpoint, messagesEndpoint, messagesStreamEndpoint } from '../../../domain/relay/endpoints/messages';
import { anthropicErrors, anthropicMessage } from '../../../schemas/responses';

/**
 * POST /v1/messages: the Anthropic Messages API, native request and response shapes and native errors
 * (`{type:'error', error:{type, message}}`), plain or streamed (named SSE events). The key comes as
 * `x-api-key` or `Authorization: Bearer`. `X-Vendor-Version` (else `anthropic-version`, else 2023-06-01) is
 * sent upstream as `anthropic-version`; `anthropic-beta` is forwarded. Models on `anthropic` channels are
 * relayed natively, models on `openai` channels by translation; metered like chat.
 */
export const messagesRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  declareFamily(base, 'anthropic');
  const app = base.withTypeProvider<ZodTypeProvider>();
  app.post('/v1/messages', { onRequest: [app.requireApiKey, app.limitKey], schema: { body: messagesBody, response: { 200: anthropicMessage, ...anthropicErrors } } }, async (request, reply) => {
    const body = request.body;
    const call = messagesCall(body, messagesOptions(request));
    const caller = callerOf(request, reply);
    if (body.stream !== true) return deps.engine.unary(messagesEndpoint, call, caller);
    await deps.engine.stream(messagesStreamEndpoint, call, caller, namedSseSink(request, reply));
    return reply;
  });

  app.post(
    '/v1/messages/count_tokens',
    { onRequest: [app.requireApiKey, app.limitKey], schema: { body: countTokensBody, response: { 200: countTokensAnswer, ...anthropicErrors } } },
    async (request, reply) => deps.engine.count(messagesCountEndpoint, messagesCall(request.body, messagesOptions(request)), callerOf(request, reply)),
  );
};

const countTokensAnswer = z.looseObject({ input_tokens: z.int() });

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return typeof v === 'string' ? v.trim() : undefined;
}

export function messagesOptions(request: FastifyRequest): MessagesOptions {
  const version = header(request, 'x-vendor-version') || header(request, 'anthropic-version') || DEFAULT_ANTHROPIC_VERSION;
  if (!VERSION_PATTERN.test(version)) throw new ValidationError('X-Vendor-Version: must be a version string such as 2023-06-01', 'x-vendor-version');
  const beta = header(request, 'anthropic-beta');
  if (beta !== undefined && !/^[A-Za-z0-9._, -]{1,2048}$/.test(beta)) throw new ValidationError('anthropic-beta: must be a comma-separated list of beta names', 'anthropic-beta');
  const forward = forwardedQuery(request);
  return { version, ...(beta ? { beta } : {}), ...(forward ? { query: forward } : {}) };
}
