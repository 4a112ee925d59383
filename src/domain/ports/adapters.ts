import type { ChannelConfig, ChannelType } from '../../gateway-config/schema';
import type { AudioAdapter } from './audio';
import type { GeminiAdapter } from './gemini';
import type { MessagesAdapter } from './messages';
import type { RerankAdapter } from './rerank';
import type { ResponsesAdapter } from './responses';
import type { AdapterRegistry } from './upstream';
import type { VideoAdapter } from './video';

export type MessagesAdapterRegistry = Partial<Record<ChannelType, MessagesAdapter>>;

/**
 * Every upstream adapter by channel type and endpoint family: what the relay engine and the video runner are given
 * by the composition root (src/runtime/services.ts, from src/upstream/registry.ts). The domain never builds one.
 */
export interface UpstreamAdapters {
  /** Chat, embeddings and images (`openai` natively, `anthropic` and `gemini` by translation). */
  chat: AdapterRegistry;
  /** /v1/messages (`anthropic` natively, `openai` and `gemini` by translation over their chat adapters). */
  messages: MessagesAdapterRegistry;
  /** The Gemini API (`gemini` natively, `openai` and `anthropic` by translation over their chat adapters). */
  gemini: Partial<Record<ChannelType, GeminiAdapter>>;
  /** /v1/responses: natively on `openai` channels with `responses_api: true`, else over the channel's chat adapter. */
  responses(channel: ChannelConfig): ResponsesAdapter | undefined;
  /** Speech and transcription (`openai`). */
  audio: Partial<Record<ChannelType, AudioAdapter>>;
  /** Rerank (`cohere`, `jina`, and `openai` upstreams that serve /rerank, such as vLLM). */
  rerank: Partial<Record<ChannelType, RerankAdapter>>;
  /** The video adapter of a channel type; null for a type that serves no video. */
  video(channelType: string): VideoAdapter | null;
}
