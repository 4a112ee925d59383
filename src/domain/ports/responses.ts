import type { InputTokensBody, ResponsesBody } from '../../schemas/openai-responses';
import type { TokenUsage } from '../pricing/usage';
import type { UpstreamCall } from './upstream';
import type { ResponsesEvent } from '../translate/responses-to-chat';

/**
 * The seam of POST /v1/responses: one upstream call answering a Responses request in Responses shapes. Same
 * contract as UpstreamAdapter. Implemented natively for `openai` channels that declare `responses_api: true`
 * (src/upstream/openai-adapter.ts) and by translation over any chat adapter (src/upstream/responses-over-chat.ts), which
 * makes `anthropic` channels serve it too (chat -> Messages inside their chat adapter).
 */

/** POST /v1/responses as the route validated it (src/schemas/openai-responses.ts is the one source of its shape). */
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
