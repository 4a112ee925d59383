import type { z } from 'zod';
import type { BatchEndpoint } from './batch-record';
import type { BatchLineCall, BatchLineEstimate } from './ports';
import { estimateCost } from '../pricing/cost';
import type { UsageEstimate } from '../pricing/cost';
import { plainUsage, type TokenUsage } from '../pricing/usage';
import { usageFromAnthropic, usageFromOpenAi, usageFromResponses } from '../pricing/usage-readers';
import type { EngineContext, UnaryEndpoint } from '../relay/engine';
import type { ModelRoute } from '../relay/resolve';
import { DomainError, ValidationError } from '../errors';
import { DEFAULT_ANTHROPIC_VERSION } from '../ports/messages';
import { chatEndpoint } from '../relay/endpoints/chat';
import { embeddingsEndpoint } from '../relay/endpoints/embeddings';
import { messagesCall, messagesEndpoint } from '../relay/endpoints/messages';
import { responsesEndpoint } from '../relay/endpoints/responses';
import type { RelayEngine } from '../relay/engine';
import type { RelayCaller } from '../relay/caller';
import { formatError } from '../../schemas/error-families';
import { toWireError } from '../../schemas/wire-error';
import { chatCompletionBody } from '../../schemas/chat';
import { embeddingsBody } from '../../schemas/embeddings';
import { messagesBody } from '../../schemas/messages';
import { responsesBody } from '../../schemas/openai-responses';

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

/**
 * What the gateway knows of each endpoint a batch line may call, in one table: the schema its route checks a body
 * with, whether the route can stream, how a checked body becomes the engine's request, the engine's endpoint, the
 * error format of its API, the channel type that runs its lines in a provider's batch API, and how that provider's
 * answer reports usage.
 */
interface LineEndpoint<Body, Req extends { model: string }> {
  schema: z.ZodType<Body>;
  /** The body as the engine's endpoint takes it. */
  request(body: Body): Req;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  relay: UnaryEndpoint<Req, any, any, any>;
  errorFamily: 'openai' | 'anthropic';
  /** The channel type that speaks this API natively (a provider batch goes there). */
  nativeType: 'openai' | 'anthropic';
  /** The usage an answer of this endpoint reports, or null when it reports no split of its own. */
  usage(usage: unknown): TokenUsage | null;
}

const lineEndpoint = <Body, Req extends { model: string }>(e: LineEndpoint<Body, Req>) => e;
const noStream = <B extends { stream?: unknown }>(body: B): B => {
  if (body.stream === true) throw new ValidationError('stream: batch requests cannot be streamed', 'stream');
  return body;
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each row is typed by lineEndpoint; the table holds them all
export const LINE_ENDPOINTS: Record<BatchEndpoint, LineEndpoint<any, { model: string }>> = {
  '/v1/chat/completions': lineEndpoint({
    schema: chatCompletionBody,
    request: noStream,
    relay: chatEndpoint,
    errorFamily: 'openai',
    nativeType: 'openai',
    usage: usageFromOpenAi,
  }),
  '/v1/embeddings': lineEndpoint({ schema: embeddingsBody, request: (b) => b, relay: embeddingsEndpoint, errorFamily: 'openai', nativeType: 'openai', usage: () => null }),
  '/v1/responses': lineEndpoint({
    schema: responsesBody,
    request: noStream,
    relay: responsesEndpoint,
    errorFamily: 'openai',
    nativeType: 'openai',
    usage: usageFromResponses,
  }),
  '/v1/messages': lineEndpoint({
    schema: messagesBody,
    request: (b) => messagesCall(noStream(b), { version: DEFAULT_ANTHROPIC_VERSION }),
    relay: messagesEndpoint,
    errorFamily: 'anthropic',
    nativeType: 'anthropic',
    usage: usageFromAnthropic,
  }),
};

/** A line's body checked as the route of its endpoint checks it (a ValidationError when that route would refuse it). */
function checked(endpoint: BatchEndpoint, body: unknown) {
  const spec = LINE_ENDPOINTS[endpoint];
  return { spec, req: spec.request(parsed(spec.schema, body)) };
}

/** The line's usage as the provider's answer reports it (a local count of the prompt when it reports none). */
export function lineUsage(endpoint: BatchEndpoint, body: unknown, prompt: () => number): TokenUsage {
  const usage = (body as { usage?: unknown } | null)?.usage;
  const read = LINE_ENDPOINTS[endpoint].usage(usage);
  if (read) return read;
  const promptTokens = (usage as { prompt_tokens?: unknown } | undefined)?.prompt_tokens;
  return plainUsage(typeof promptTokens === 'number' ? promptTokens : prompt(), 0);
}

export function batchLineCall(engine: RelayEngine): BatchLineCall {
  return async (endpoint, body, caller: RelayCaller) => {
    try {
      const { spec, req } = checked(endpoint, body);
      return { ok: true, body: await engine.unary(spec.relay, req, caller) };
    } catch (err) {
      const wire = toWireError(err);
      const retryAfterSeconds = err instanceof DomainError ? err.retryAfterSeconds : undefined;
      return { ok: false, status: wire.status, code: wire.code, retryAfterSeconds, body: formatError(LINE_ENDPOINTS[endpoint].errorFamily, wire, { requestId: caller.requestId }) };
    }
  };
}

/**
 * The most a line can cost at `multiplier` (a line sent to a provider's batch API holds this before it is sent), its
 * body checked as its route checks it: a ValidationError when the route would refuse it.
 */
export function batchLineEstimate(engine: RelayEngine): BatchLineEstimate {
  const ctx: EngineContext = engine.context;
  return (endpoint, body, route: ModelRoute, multiplier) => {
    const { spec, req } = checked(endpoint, body);
    const w: UsageEstimate = spec.relay.hold(req, route, ctx);
    return { prompt: Number(w.promptTokens ?? 0), amount: estimateCost(route.price, w, multiplier) };
  };
}
