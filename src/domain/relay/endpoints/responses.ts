import { channelForGroup } from '../../../gateway-config/lookup';
import type { ChannelConfig } from '../../../gateway-config/schema';
import type { ConfigStore } from '../../../gateway-config/store';
import type { UpstreamAdapters } from '../../ports/adapters';
import {
  type ResponsesAdapter,
  type ResponsesCountRequest,
  type ResponsesRequest,
  type ResponsesResult,
  type ResponsesStream,
  type ResponsesStreamEvent,
  type StoredResponseRequest,
  TERMINAL_EVENTS,
} from '../../ports/responses';
import { NotFoundError, ValidationError } from '../../errors';
import type { NamedEventSink, RelayCaller } from '../caller';
import { type CallPlan, type CountEndpoint, type EngineContext, localUsage, relayErrorOf, type StreamEndpoint, type UnaryEndpoint } from '../engine';
import { estimateTokens } from '../metering';
import type { ModelRoute } from '../resolve';
import type { ResponseIds } from '../response-ids';

/**
 * POST /v1/responses, its input_tokens count, and a stored Response's endpoints. `openai` channels with
 * `responses_api: true` answer natively; every other channel through its chat adapter, translated.
 */

/** A channel that stores Responses: it speaks the API natively. */
function isNative(a: ResponsesAdapter | undefined): a is ResponsesAdapter & Required<Pick<ResponsesAdapter, 'stored' | 'inputTokens'>> {
  return a !== undefined && a.stored !== undefined && a.inputTokens !== undefined;
}

const adapterOf = (adapters: UpstreamAdapters, channel: ChannelConfig) => adapters.responses(channel);

/**
 * Prompt tokens of a Responses request, counted locally from everything it sends (a native channel reads items
 * a translation drops: encrypted reasoning, files, hosted-tool calls), so a hold may be generous, never short.
 */
function estimateResponsesPromptTokens(req: ResponsesCountRequest): number {
  return estimateTokens(JSON.stringify({ instructions: req.instructions, input: req.input, tools: req.tools }));
}

/**
 * The channels to try and the request each gets. With `previous_response_id`, only the channel that made that
 * Response, which must still serve the model to the key natively, and the upstream's own id in the request.
 */
function plan<R extends ResponsesCountRequest>(req: R, caller: RelayCaller, _route: ModelRoute, ordered: ChannelConfig[], ctx: EngineContext): CallPlan<R> {
  // A background Response finishes after the call that created it: nothing here would bill its answer.
  if (req.background === true) throw new ValidationError('background: background responses are not supported through the gateway; stream the response instead', 'background');
  const prev = req.previous_response_id;
  if (prev === undefined || prev === null) return { channels: ordered, req };
  const ref = ctx.responseIds.unwrap(caller.key.accountId, prev);
  const ch = ref && ordered.find((c) => c.name === ref.channel && isNative(ctx.adapters.responses(c)));
  if (!ref || !ch) {
    throw new ValidationError(
      "previous_response_id: no stored response with this id for this model; it works on channels with a native Responses API (otherwise send the whole conversation in 'input' with store: false)",
      'previous_response_id',
    );
  }
  return { channels: [ch], req: { ...req, previous_response_id: ref.upstreamId } };
}

/** A native channel's Response gets an id that routes back to it; a translated one keeps the translation's. */
function clientId(ctx: EngineContext, ch: ChannelConfig, caller: RelayCaller, upstreamId: unknown): unknown {
  return typeof upstreamId === 'string' && isNative(ctx.adapters.responses(ch)) ? ctx.responseIds.wrap(caller.key.accountId, { channel: ch.name, upstreamId }) : upstreamId;
}

const common = {
  name: 'responses',
  adapterOf,
  plan,
  hold: (req: ResponsesRequest, _route: ModelRoute, ctx: EngineContext) => ({
    promptTokens: estimateResponsesPromptTokens(req),
    maxCompletionTokens: typeof req.max_output_tokens === 'number' ? req.max_output_tokens : ctx.defaultCompletionCap,
  }),
};

export const responsesEndpoint: UnaryEndpoint<ResponsesRequest, ResponsesAdapter, ResponsesResult> = {
  ...common,
  reason: 'responses',
  async call(adapter, req, call, channel, caller, ctx) {
    const r = await adapter.responses(req, call);
    return { ...r, body: { ...r.body, id: clientId(ctx, channel, caller, r.body.id) } };
  },
  metered: (r, estimate) => (r.usage ? { usage: r.usage } : localUsage(estimate.prompt, estimateTokens(JSON.stringify(r.body.output ?? [])))),
  body: (r) => r.body,
};

export const responsesStreamEndpoint: StreamEndpoint<ResponsesRequest, ResponsesAdapter, ResponsesStreamEvent, NamedEventSink> = {
  ...common,
  reason: 'responses_stream',
  open: (adapter, req, call) => adapter.responsesStream(req, call),
  wire({ estimate, caller, sink, stream, channel, ctx }) {
    const upstream = stream as ResponsesStream;
    let local = 0;
    let terminal: { type: string; data: string } | null = null;
    /** An event carrying the Response (created, in_progress, completed...) with its id as the client must see it. */
    const withClientId = (ev: ResponsesStreamEvent): string | undefined => {
      const r = ev.event.response as { id?: unknown } | undefined;
      if (!r || typeof r !== 'object' || typeof r.id !== 'string') return undefined;
      const id = clientId(ctx, channel, caller, r.id);
      return id === r.id ? undefined : JSON.stringify({ ...ev.event, response: { ...r, id } });
    };
    return {
      forward(ev) {
        const e = ev.event;
        if (e.type.endsWith('.delta') && typeof e.delta === 'string') local += estimateTokens(e.delta);
        const data = withClientId(ev) ?? ev.raw ?? JSON.stringify(e);
        // The terminal event waits for the settle: a client that saw it may rely on the call being complete.
        if (TERMINAL_EVENTS.has(e.type)) {
          terminal = { type: e.type, data };
          return true;
        }
        return sink.send(e.type, data);
      },
      metered: () => {
        const usage = upstream.usage();
        return usage ? { usage } : localUsage(estimate.prompt, local);
      },
      complete: () => (terminal ? sink.send(terminal.type, terminal.data) : true),
      error: (code, message) => sink.send('error', JSON.stringify(upstream.errorEvent(code, message))),
    };
  },
};

/** POST /v1/responses/input_tokens: the native channel's count, else a local one. Never billed. */
export const responsesCountEndpoint: CountEndpoint<ResponsesCountRequest, ResponsesAdapter, Record<string, unknown>> = {
  name: 'input_tokens',
  adapterOf,
  plan,
  native: (adapter, req, call) => (isNative(adapter) ? adapter.inputTokens(req, call) : undefined),
  local: (req) => ({ object: 'response.input_tokens', input_tokens: estimateResponsesPromptTokens(req) }),
};

/** GET / DELETE /v1/responses/{id}, POST .../cancel, GET .../input_items: on the channel that made the Response. */
export async function storedResponse(
  deps: { config: ConfigStore; context: EngineContext },
  id: string,
  op: Omit<StoredResponseRequest, 'upstreamId'>,
  caller: RelayCaller,
): Promise<Record<string, unknown>> {
  const ids: ResponseIds = deps.context.responseIds;
  const ref = ids.unwrap(caller.key.accountId, id);
  const ch = ref && channelForGroup(deps.config.current(), ref.channel, caller.key.group);
  const adapter = ch ? deps.context.adapters.responses(ch) : undefined;
  if (!ref || !ch || !isNative(adapter)) throw new NotFoundError(`No response found with id '${id}'.`);
  let body: Record<string, unknown>;
  try {
    body = await adapter.stored({ ...op, upstreamId: ref.upstreamId }, { channel: ch, upstreamModel: '', signal: caller.signal, requestId: caller.requestId });
  } catch (err) {
    throw relayErrorOf(err);
  }
  return body.id === ref.upstreamId ? { ...body, id } : body;
}
