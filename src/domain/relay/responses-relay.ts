import { channelForGroup } from '../../gateway-config/lookup';
import type { ChannelConfig } from '../../gateway-config/schema';
import { createUpstreamAdapters, type UpstreamAdapters } from '../../upstream/registry';
import { randomBytes } from 'node:crypto';
import { UpstreamError } from '../../upstream/errors';
import { type ResponsesAdapter, type ResponsesCountRequest, type ResponsesRequest, type ResponsesStreamEvent, type StoredResponseRequest, TERMINAL_EVENTS } from '../../upstream/responses-adapter';
import { NotFoundError, ValidationError } from '../errors';
import { costOfUsage, estimateCost } from '../pricing/cost';
import { plainUsage, type TokenUsage } from '../pricing/usage';
import type { RelayCaller } from './caller';
import { endpointEngine, type EndpointOptions, type NamedEventSink, upstreamCallFor } from './endpoint';
import type { StreamDriver, StreamOutcome } from './metered-call';
import { DEFAULT_COMPLETION_CAP, estimateTokens } from './metering';
import { type ModelRoute, resolveModel } from './resolve';
import { ResponseIds } from './response-ids';
import { UpstreamRejectedError } from './errors';
import { toUnavailable } from './failover';

/**
 * POST /v1/responses through the relay engine (createMeteredRelay), like chat and /v1/messages: resolve the model
 * for the key, hold the most it can cost (the prompt counted locally + max_output_tokens), try the channels in the
 * router's order with failover, settle from the upstream's usage by dimension or release. `openai` channels with
 * `responses_api: true` answer natively; every other channel through its chat adapter, translated.
 */

export interface ResponsesRelayOptions extends EndpointOptions {
  adapters?: UpstreamAdapters;
  /** Output tokens held when a request sets no max_output_tokens (default 4096). */
  defaultCompletionCap?: number;
  /** Signs the ids of natively stored Responses; every replica needs the same (made from GATEWAY_SECRET). */
  ids?: ResponseIds;
}

/** Where a Responses stream goes: named SSE events (`event: <type>` + `data: <json>`). */
export type ResponsesSink = NamedEventSink;

export interface ResponsesRelay {
  responses(req: ResponsesRequest, caller: RelayCaller): Promise<Record<string, unknown>>;
  responsesStream(req: ResponsesRequest, caller: RelayCaller, sink: ResponsesSink): Promise<StreamOutcome>;
  /** POST /v1/responses/input_tokens: the native channel's count, else a local one. Never billed. */
  inputTokens(req: ResponsesCountRequest, caller: RelayCaller): Promise<Record<string, unknown>>;
  /** GET / DELETE /v1/responses/{id}, POST .../cancel, GET .../input_items: on the channel that made the Response. */
  stored(id: string, op: Omit<StoredResponseRequest, 'upstreamId'>, caller: RelayCaller): Promise<Record<string, unknown>>;
}

/** A channel that stores Responses: it speaks the API natively. */
function isNative(a: ResponsesAdapter): a is ResponsesAdapter & Required<Pick<ResponsesAdapter, 'stored' | 'inputTokens'>> {
  return a.stored !== undefined && a.inputTokens !== undefined;
}

/** An upstream failure outside the failover engine, as the engine reports one: its 4xx passed on, else 502/504/429. */
function relayErrorOf(err: unknown): unknown {
  if (!(err instanceof UpstreamError)) return err;
  return err.kind === 'status' && !err.retryable ? new UpstreamRejectedError(err.status ?? 400, err.upstreamCode, err.message, err.upstreamParam) : toUnavailable(err);
}

/**
 * Prompt tokens of a Responses request, counted locally from everything it sends (a native channel reads items
 * a translation drops: encrypted reasoning, files, hosted-tool calls), so a hold may be generous, never short.
 */
function estimateResponsesPromptTokens(req: ResponsesCountRequest): number {
  return estimateTokens(JSON.stringify({ instructions: req.instructions, input: req.input, tools: req.tools }));
}

function eventTokens(e: ResponsesStreamEvent['event']): number {
  return e.type.endsWith('.delta') && typeof e.delta === 'string' ? estimateTokens(e.delta) : 0;
}

export function createResponsesRelay(opts: ResponsesRelayOptions): ResponsesRelay {
  const adapters = opts.adapters ?? createUpstreamAdapters();
  const { metered, streamTtl } = endpointEngine(opts);
  const defaultCap = opts.defaultCompletionCap ?? DEFAULT_COMPLETION_CAP;

  const candidates = (route: ModelRoute) => metered.candidates(route, (c) => adapters.responses(c) !== undefined, 'responses');
  const adapterOf = (ch: ChannelConfig) => adapters.responses(ch)!;
  const call = upstreamCallFor;
  const ids = opts.ids ?? new ResponseIds(randomBytes(32).toString('hex'));

  /**
   * The channels to try and the request each gets. With `previous_response_id`, only the channel that made that
   * Response, which must still serve the model to the key natively, and the upstream's own id in the request.
   */
  function plan<R extends ResponsesCountRequest>(req: R, caller: RelayCaller, route: ModelRoute): { chs: ChannelConfig[]; upstreamReq: R } {
    // A background Response finishes after the call that created it: nothing here would bill its answer.
    if (req.background === true) throw new ValidationError('background: background responses are not supported through the gateway; stream the response instead', 'background');
    const prev = req.previous_response_id;
    if (prev === undefined || prev === null) return { chs: candidates(route), upstreamReq: req };
    const ref = ids.unwrap(caller.key.accountId, prev);
    const ch = ref && route.channels.find((c) => c.name === ref.channel && isNative(adapterOf(c)));
    if (!ref || !ch) {
      throw new ValidationError(
        "previous_response_id: no stored response with this id for this model; it works on channels with a native Responses API (otherwise send the whole conversation in 'input' with store: false)",
        'previous_response_id',
      );
    }
    return { chs: [ch], upstreamReq: { ...req, previous_response_id: ref.upstreamId } };
  }

  /** A native channel's Response gets an id that routes back to it; a translated one keeps the translation's. */
  function clientId(ch: ChannelConfig, caller: RelayCaller, upstreamId: unknown): unknown {
    return typeof upstreamId === 'string' && isNative(adapterOf(ch)) ? ids.wrap(caller.key.accountId, { channel: ch.name, upstreamId }) : upstreamId;
  }

  function hold(req: ResponsesRequest, route: ModelRoute) {
    const prompt = estimateResponsesPromptTokens(req);
    const cap = typeof req.max_output_tokens === 'number' ? req.max_output_tokens : defaultCap;
    return { prompt, amount: estimateCost(route.price, { promptTokens: prompt, maxCompletionTokens: cap }, route.multiplier) };
  }
  const charge = (route: ModelRoute, usage: TokenUsage) => ({ quota: costOfUsage(route.price, usage, route.multiplier), usage });

  return {
    async responses(req, caller) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const { chs, upstreamReq } = plan(req, caller, route);
      const { prompt, amount } = hold(req, route);
      const result = await metered.unary(
        caller,
        route,
        chs,
        { amount, reason: 'responses', ttlSeconds: metered.unaryTtl(chs) },
        async (ch) => {
          const r = await adapterOf(ch).responses(upstreamReq, call(ch, route.model, caller));
          return { ...r, body: { ...r.body, id: clientId(ch, caller, r.body.id) } };
        },
        (r) => charge(route, r.usage ?? plainUsage(prompt, estimateTokens(JSON.stringify((r.body as Record<string, unknown>).output ?? [])))),
      );
      return result.body;
    },

    responsesStream(req, caller, sink) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const { chs, upstreamReq } = plan(req, caller, route);
      const { prompt, amount } = hold(req, route);
      let stream: Awaited<ReturnType<ReturnType<typeof adapterOf>['responsesStream']>> | null = null;
      let streamChannel: ChannelConfig | null = null;
      let local = 0;
      let terminal: { type: string; data: string } | null = null;
      /** An event carrying the Response (created, in_progress, completed...) with its id as the client must see it. */
      const withClientId = (ev: ResponsesStreamEvent): string | undefined => {
        const r = ev.event.response as { id?: unknown } | undefined;
        if (!streamChannel || !r || typeof r !== 'object' || typeof r.id !== 'string') return undefined;
        const id = clientId(streamChannel, caller, r.id);
        return id === r.id ? undefined : JSON.stringify({ ...ev.event, response: { ...r, id } });
      };
      const driver: StreamDriver<ResponsesStreamEvent> = {
        start: () => sink.start(),
        forward(ev) {
          local += eventTokens(ev.event);
          const data = withClientId(ev) ?? ev.raw ?? JSON.stringify(ev.event);
          // The terminal event waits for the settle: a client that saw it may rely on the call being complete.
          if (TERMINAL_EVENTS.has(ev.event.type)) {
            terminal = { type: ev.event.type, data };
            return true;
          }
          return sink.send(ev.event.type, data);
        },
        charge: () => charge(route, stream?.usage() ?? plainUsage(prompt, local)),
        complete: () => (terminal ? sink.send(terminal.type, terminal.data) : true),
        fail: (kind) => {
          const message = kind === 'upstream' ? 'The upstream stream failed before it was complete; the call was not billed' : 'The call could not be billed';
          const ev = stream?.errorEvent(kind === 'upstream' ? 'upstream_error' : 'internal_error', message) ?? { type: 'error', code: 'upstream_error', message, param: null };
          return sink.send('error', JSON.stringify(ev));
        },
        end: () => sink.end(),
      };
      return metered.stream(
        caller,
        route,
        chs,
        { amount, reason: 'responses_stream', ttlSeconds: streamTtl },
        async (ch) => {
          stream = await adapterOf(ch).responsesStream(upstreamReq, call(ch, route.model, caller));
          streamChannel = ch;
          return stream;
        },
        driver,
      );
    },

    async inputTokens(req, caller) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const { chs, upstreamReq } = plan(req, caller, route);
      const channel = chs[0];
      const adapter = adapterOf(channel);
      if (isNative(adapter)) {
        try {
          return await adapter.inputTokens(upstreamReq, call(channel, route.model, caller));
        } catch (err) {
          // An upstream without the endpoint (404, 405) or out of service: count locally.
          if (!(err instanceof UpstreamError) || !(err.retryable || err.status === 404 || err.status === 405)) throw relayErrorOf(err);
          caller.log?.warn({ channel: channel.name, kind: err.kind }, 'input_tokens upstream failed; counted locally');
        }
      }
      return { object: 'response.input_tokens', input_tokens: estimateResponsesPromptTokens(req) };
    },

    async stored(id, op, caller) {
      const ref = ids.unwrap(caller.key.accountId, id);
      const ch = ref && channelForGroup(opts.config.current(), ref.channel, caller.key.group);
      const adapter = ch && adapterOf(ch);
      if (!ref || !ch || !adapter || !isNative(adapter)) throw new NotFoundError(`No response found with id '${id}'.`);
      let body: Record<string, unknown>;
      try {
        body = await adapter.stored({ ...op, upstreamId: ref.upstreamId }, { channel: ch, upstreamModel: '', signal: caller.signal, requestId: caller.requestId });
      } catch (err) {
        throw relayErrorOf(err);
      }
      return body.id === ref.upstreamId ? { ...body, id } : body;
    },
  };
}
