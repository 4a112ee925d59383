import type { z } from 'zod';
import type { BatchEndpoint } from '../domain/batches/batch-record';
import type { BatchLineCall, BatchLineEstimate } from '../domain/batches/ports';
import { estimateCost } from '../domain/pricing/cost';
import type { UsageEstimate } from '../domain/pricing/cost';
import { DomainError, ValidationError } from '../domain/errors';
import { DEFAULT_ANTHROPIC_VERSION } from '../domain/ports/messages';
import { chatEndpoint } from '../domain/relay/endpoints/chat';
import { embeddingsEndpoint } from '../domain/relay/endpoints/embeddings';
import { messagesCall, messagesEndpoint } from '../domain/relay/endpoints/messages';
import { responsesEndpoint } from '../domain/relay/endpoints/responses';
import type { RelayEngine } from '../domain/relay/engine';
import { formatError } from './errors/families';
import { toWireError } from './errors/wire-error';
import { chatCompletionBody } from '../schemas/chat';
import { embeddingsBody } from '../schemas/embeddings';
import { messagesBody } from '../schemas/messages';
import { responsesBody } from '../schemas/openai-responses';

/**
 * A batch line as the route of its endpoint would take the same body: validated by the route's schema, relayed by
 * the one engine (failover, translation, usage dimensions), billed under the line's business key. A failure comes
 * back as the route would have answered it, in the batch's API's error format.
 */

/** The body checked by `schema`, or a 400 naming the first field at fault. */
function parsed<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const field = issue.path.map(String).join('.');
  throw new ValidationError(field ? `${field}: ${issue.message}` : issue.message, field || null);
}

function notStreamed(body: { stream?: unknown }): void {
  if (body.stream === true) throw new ValidationError('stream: batch requests cannot be streamed', 'stream');
}

/** A line's body checked as the route of its endpoint checks it (a ValidationError when that route would refuse it). */
function checked(endpoint: BatchEndpoint, body: unknown) {
  switch (endpoint) {
    case '/v1/chat/completions': {
      const req = parsed(chatCompletionBody, body);
      notStreamed(req);
      return { endpoint, req } as const;
    }
    case '/v1/embeddings':
      return { endpoint, req: parsed(embeddingsBody, body) } as const;
    case '/v1/responses': {
      const req = parsed(responsesBody, body);
      notStreamed(req);
      return { endpoint, req } as const;
    }
    case '/v1/messages': {
      const req = parsed(messagesBody, body);
      notStreamed(req);
      return { endpoint, req: messagesCall(req, { version: DEFAULT_ANTHROPIC_VERSION }) } as const;
    }
  }
}

export function batchLineCall(engine: RelayEngine): BatchLineCall {
  const run = (line: ReturnType<typeof checked>, caller: Parameters<BatchLineCall>[2]): Promise<unknown> => {
    switch (line.endpoint) {
      case '/v1/chat/completions':
        return engine.unary(chatEndpoint, line.req, caller);
      case '/v1/embeddings':
        return engine.unary(embeddingsEndpoint, line.req, caller);
      case '/v1/responses':
        return engine.unary(responsesEndpoint, line.req, caller);
      case '/v1/messages':
        return engine.unary(messagesEndpoint, line.req, caller);
    }
  };
  return async (endpoint, body, caller) => {
    try {
      return { ok: true, body: await run(checked(endpoint, body), caller) };
    } catch (err) {
      const wire = toWireError(err);
      const retryAfterSeconds = err instanceof DomainError ? err.retryAfterSeconds : undefined;
      return { ok: false, status: wire.status, code: wire.code, retryAfterSeconds, body: formatError(endpoint === '/v1/messages' ? 'anthropic' : 'openai', wire, { requestId: caller.requestId }) };
    }
  };
}

/**
 * The most a line can cost at `multiplier` (a line sent to a provider's batch API holds this before it is sent), its
 * body checked as its route checks it: a ValidationError when the route would refuse it.
 */
export function batchLineEstimate(engine: RelayEngine): BatchLineEstimate {
  const ctx = engine.context;
  const want = (line: ReturnType<typeof checked>, route: Parameters<BatchLineEstimate>[2]): UsageEstimate => {
    switch (line.endpoint) {
      case '/v1/chat/completions':
        return chatEndpoint.hold(line.req, route, ctx);
      case '/v1/embeddings':
        return embeddingsEndpoint.hold(line.req, route, ctx);
      case '/v1/responses':
        return responsesEndpoint.hold(line.req, route, ctx);
      case '/v1/messages':
        return messagesEndpoint.hold(line.req, route, ctx);
    }
  };
  return (endpoint, body, route, multiplier) => {
    const w = want(checked(endpoint, body), route);
    return { prompt: Number(w.promptTokens ?? 0), amount: estimateCost(route.price, w, multiplier) };
  };
}
