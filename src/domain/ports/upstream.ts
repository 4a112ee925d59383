import type { CallSignal } from './call-signal';
import type { ChatCompletionBody } from '../../schemas/chat';
import type { EmbeddingsBody } from '../../schemas/embeddings';
import type { ImageGenerationBody } from '../../schemas/images';
import type { ModerationsBody } from '../../schemas/moderations';
import type { TokenUsage } from '../pricing/usage';
import type { ChatChunk, ChatCompletion } from '../translate/types';
import type { ChannelConfig, ChannelType } from '../../gateway-config/schema';

/**
 * The seam between the relay core (src/domain/relay) and one kind of upstream. The relay picks channels,
 * fails over, meters and bills; an adapter only turns an OpenAI-shaped request into one upstream call and its
 * answer back into OpenAI shapes. One adapter per channel `type` ('openai' here; 'anthropic' implements chat by
 * translation). A method an adapter does not implement means the channel type cannot serve that endpoint.
 *
 * Contract for every method:
 * - throw `UpstreamError` (src/domain/ports/upstream-error.ts) for every failure; `retryable` decides failover;
 * - `call.signal` aborts the call (client gone); the adapter must stop reading and release the connection;
 * - never put the upstream host, key or raw error body in an error message (sanitizeUpstreamMessage);
 * - usage is the upstream's own count by dimension (src/domain/pricing/usage-readers.ts), or null when it gave none (the relay then
 *   counts locally).
 */

/** POST /v1/chat/completions body as the route validated it (src/schemas/chat.ts is the one source of its shape). */
export type ChatRequest = ChatCompletionBody;

export type ChatMessage = ChatRequest['messages'][number];

export type { ChatContentPart } from '../../schemas/chat';

export type { ChatChunk, ChatCompletion } from '../translate/types';

export interface ChatStreamEvent {
  chunk: ChatChunk;
  /** The chunk's JSON exactly as received, when the adapter did not change it (forwarded without re-serializing). */
  raw?: string;
  /** The usage this chunk reports, when the adapter read it from another format (the relay reads `chunk.usage` otherwise). */
  usage?: TokenUsage;
}

export interface ChatResult {
  body: ChatCompletion;
  usage: TokenUsage | null;
}

/** A started stream: the upstream accepted the call (2xx). Iterating yields chunks as they arrive. */
export interface ChatStream extends AsyncIterable<ChatStreamEvent> {
  /** Stops reading and drops the upstream connection (client gone, or the relay gave up). Idempotent. */
  cancel(): void;
}

/** POST /v1/embeddings body as the route validated it (src/schemas/embeddings.ts). */
export type EmbeddingsRequest = EmbeddingsBody;

export interface EmbeddingsResult {
  body: Record<string, unknown> & { data: unknown[] };
  /** prompt tokens of the upstream's usage; null when it gave none. */
  promptTokens: number | null;
}

/** POST /v1/images/generations body as the route validated it (src/schemas/images.ts). */
export type ImagesRequest = ImageGenerationBody;

/** An image of an edit request: an uploaded file, or a URL / data URI the client gave as text. */
export type ImageInput =
  | { kind: 'file'; data: Buffer; filename: string; contentType: string }
  | { kind: 'url'; url: string };

export interface ImageEditRequest {
  model: string;
  prompt: string;
  images: ImageInput[];
  mask?: ImageInput;
  n?: number;
  size?: string;
  /** Every other text field of the form, passed through unchanged. */
  fields: Record<string, string>;
}

/** `{created, data:[{url | b64_json, revised_prompt?}]}`. */
export interface ImagesResult {
  body: Record<string, unknown> & { data: unknown[] };
}

/** POST /v1/moderations body as the route validated it (src/schemas/moderations.ts). */
export type ModerationsRequest = ModerationsBody;

/** `{id, model, results}` as the upstream sent it. */
export interface ModerationsResult {
  body: Record<string, unknown> & { results: unknown[] };
}

/** One upstream call's context, fixed by the relay for one attempt on one channel. */
export interface UpstreamCall {
  channel: ChannelConfig;
  /** The model id to send upstream (channel model_mapping applied). */
  upstreamModel: string;
  /** Aborted when the client disconnects or the relay gives up on this attempt. */
  signal: CallSignal;
  /** Our x-request-id (adapters may forward it as a correlation header). */
  requestId: string;
  /** Where a translating adapter names the hosted tools it dropped (the client sees `x-gateway-dropped-tools`). */
  droppedTools?: Set<string>;
}

export interface UpstreamAdapter {
  /** A non-streamed chat completion. */
  chat(req: ChatRequest, call: UpstreamCall): Promise<ChatResult>;
  /**
   * A streamed chat completion. Resolves once the upstream accepted it (status 2xx); a failure before that is
   * thrown. The adapter always asks the upstream for usage (it ends up on a chunk's `usage`); the relay decides
   * what the client sees. Errors while iterating are UpstreamError too.
   */
  chatStream(req: ChatRequest, call: UpstreamCall): Promise<ChatStream>;
  embeddings?(req: EmbeddingsRequest, call: UpstreamCall): Promise<EmbeddingsResult>;
  imagesGenerate?(req: ImagesRequest, call: UpstreamCall): Promise<ImagesResult>;
  imagesEdit?(req: ImageEditRequest, call: UpstreamCall): Promise<ImagesResult>;
  moderations?(req: ModerationsRequest, call: UpstreamCall): Promise<ModerationsResult>;
}

/** Adapters by channel type. The relay refuses a channel whose type has no adapter (it is skipped). */
export type AdapterRegistry = Partial<Record<ChannelType, UpstreamAdapter>>;
