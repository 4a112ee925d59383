import type { InputTokensBody, ResponsesBody } from '../api/schemas/openai-responses';
import type { TokenUsage } from '../domain/pricing/usage';
import type { UpstreamAdapter, UpstreamCall } from './adapter';
import { UpstreamError } from './errors';
import { type ChatTranslation, ChatToResponsesStream, chatToResponse, type ResponsesEvent, responsesToChatRequest } from './translate/responses-to-chat';
import { NO_TOKENS } from '../domain/pricing/usage';
import { usageFromOpenAi } from './usage';

/**
 * The seam of POST /v1/responses: one upstream call answering a Responses request in Responses shapes. Same
 * contract as UpstreamAdapter. Implemented natively for `openai` channels that declare `responses_api: true`
 * (src/upstream/openai-adapter.ts) and by translation over any chat adapter (here), which makes `anthropic`
 * channels serve it too (chat -> Messages inside their chat adapter).
 */

/** POST /v1/responses as the route validated it (src/api/schemas/openai-responses.ts is the one source of its shape). */
export type ResponsesRequest = ResponsesBody;

/** POST /v1/responses/input_tokens as the route validated it. */
export type ResponsesCountRequest = InputTokensBody;

export interface ResponsesResult {
  body: Record<string, unknown>;
  usage: TokenUsage | null;
}

export interface ResponsesStreamEvent {
  event: ResponsesEvent;
  /** The event's JSON exactly as received, when unchanged. */
  raw?: string;
}

/** A started stream. Iterating yields events up to and including the terminal one (response.completed...). */
export interface ResponsesStream extends AsyncIterable<ResponsesStreamEvent> {
  usage(): TokenUsage | null;
  cancel(): void;
  /** The `error` event to send when the stream fails after it started. */
  errorEvent(code: string, message: string): ResponsesEvent;
}

/** A request about a Response the upstream stores: GET / DELETE `/responses/{id}`, POST `/{id}/cancel`, GET `/{id}/input_items`. */
export interface StoredResponseRequest {
  method: 'GET' | 'POST' | 'DELETE';
  /** The upstream's id of the Response. */
  upstreamId: string;
  /** '' , '/cancel' or '/input_items'. */
  suffix: '' | '/cancel' | '/input_items';
  /** The client's query string, without `?` ('' for none). */
  query: string;
}

export interface ResponsesAdapter {
  responses(req: ResponsesRequest, call: UpstreamCall): Promise<ResponsesResult>;
  responsesStream(req: ResponsesRequest, call: UpstreamCall): Promise<ResponsesStream>;
  /** Native channels only: POST /responses/input_tokens as the upstream counts it. */
  inputTokens?(req: ResponsesCountRequest, call: UpstreamCall): Promise<Record<string, unknown>>;
  /** Native channels only: a stored Response's endpoints, the upstream's JSON answer unchanged. */
  stored?(req: StoredResponseRequest, call: UpstreamCall): Promise<Record<string, unknown>>;
}

/** Events that end a Responses stream that delivered an answer (`response.failed` is an upstream failure). */
export const TERMINAL_EVENTS = new Set(['response.completed', 'response.incomplete']);

/** The Responses API over a chat adapter: the request translated, the answer and its stream translated back. */
export function responsesOverChat(chat: UpstreamAdapter): ResponsesAdapter {
  return {
    async responses(req, call) {
      const t: ChatTranslation = responsesToChatRequest({ ...req, stream: false }, call.upstreamModel);
      const result = await chat.chat(t.chat, call);
      const usage = result.usage;
      const body = chatToResponse(result.body, req, t.tools, usage ?? NO_TOKENS);
      return { body, usage };
    },

    async responsesStream(req, call) {
      const t = responsesToChatRequest({ ...req, stream: true }, call.upstreamModel);
      const upstream = await chat.chatStream(t.chat, call);
      const translator = new ChatToResponsesStream(req, t.tools);
      let usage: TokenUsage | null = null;
      async function* events(): AsyncGenerator<ResponsesStreamEvent> {
        let any = false;
        for await (const ev of upstream) {
          if (!any) for (const event of translator.start()) yield { event };
          any = true;
          if (ev.usage) usage = ev.usage;
          else if (ev.chunk.usage != null) usage = usageFromOpenAi(ev.chunk.usage) ?? usage;
          for (const event of translator.push(ev.chunk)) yield { event };
        }
        if (!any) throw new UpstreamError('protocol', 'the upstream stream ended before its first chunk');
        for (const event of translator.end(usage ?? NO_TOKENS)) yield { event };
      }
      const it = events();
      return {
        [Symbol.asyncIterator]: () => it,
        usage: () => usage,
        errorEvent: (code, message) => translator.error(code, message),
        cancel() {
          upstream.cancel();
          void it.return(undefined).catch(() => undefined);
        },
      };
    },
  };
}
