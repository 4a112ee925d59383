import type { ChannelConfig } from '../../gateway-config/schema';
import { createUpstreamAdapters, type UpstreamAdapters } from '../../upstream/registry';
import { type ResponsesRequest, type ResponsesStreamEvent, TERMINAL_EVENTS } from '../../upstream/responses-adapter';
import { costOfUsage, estimateCost } from '../pricing/cost';
import { plainUsage, type TokenUsage } from '../pricing/usage';
import type { RelayCaller } from './caller';
import { endpointEngine, type EndpointOptions, type NamedEventSink, upstreamCallFor } from './endpoint';
import type { StreamDriver, StreamOutcome } from './metered-call';
import { DEFAULT_COMPLETION_CAP, estimateTokens } from './metering';
import { type ModelRoute, resolveModel } from './resolve';

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
}

/** Where a Responses stream goes: named SSE events (`event: <type>` + `data: <json>`). */
export type ResponsesSink = NamedEventSink;

export interface ResponsesRelay {
  responses(req: ResponsesRequest, caller: RelayCaller): Promise<Record<string, unknown>>;
  responsesStream(req: ResponsesRequest, caller: RelayCaller, sink: ResponsesSink): Promise<StreamOutcome>;
}

/**
 * Prompt tokens of a Responses request, counted locally from everything it sends (a native channel reads items
 * a translation drops: encrypted reasoning, files, hosted-tool calls), so a hold may be generous, never short.
 */
function estimateResponsesPromptTokens(req: ResponsesRequest): number {
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

  function hold(req: ResponsesRequest, route: ModelRoute) {
    const prompt = estimateResponsesPromptTokens(req);
    const cap = typeof req.max_output_tokens === 'number' ? req.max_output_tokens : defaultCap;
    return { prompt, amount: estimateCost(route.price, { promptTokens: prompt, maxCompletionTokens: cap }, route.multiplier) };
  }
  const charge = (route: ModelRoute, usage: TokenUsage) => ({ quota: costOfUsage(route.price, usage, route.multiplier), usage });

  return {
    async responses(req, caller) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const chs = candidates(route);
      const { prompt, amount } = hold(req, route);
      const result = await metered.unary(
        caller,
        route,
        chs,
        { amount, reason: 'responses', ttlSeconds: metered.unaryTtl(chs) },
        (ch) => adapterOf(ch).responses(req, call(ch, route.model, caller)),
        (r) => charge(route, r.usage ?? plainUsage(prompt, estimateTokens(JSON.stringify(r.body.output ?? [])))),
      );
      return result.body;
    },

    responsesStream(req, caller, sink) {
      const route = resolveModel(opts.config.current(), caller.key, req.model);
      const chs = candidates(route);
      const { prompt, amount } = hold(req, route);
      let stream: Awaited<ReturnType<ReturnType<typeof adapterOf>['responsesStream']>> | null = null;
      let local = 0;
      let terminal: { type: string; data: string } | null = null;
      const driver: StreamDriver<ResponsesStreamEvent> = {
        start: () => sink.start(),
        forward(ev) {
          local += eventTokens(ev.event);
          const data = ev.raw ?? JSON.stringify(ev.event);
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
          stream = await adapterOf(ch).responsesStream(req, call(ch, route.model, caller));
          return stream;
        },
        driver,
      );
    },
  };
}
