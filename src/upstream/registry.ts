import type { ChannelType } from '../gateway-config/schema';
import type { AdapterRegistry } from './adapter';
import { createAnthropicAdapter } from './anthropic-adapter';
import type { MessagesAdapter } from './messages-adapter';
import { messagesOverChat } from './messages-over-chat';
import { createOpenAiAdapter } from './openai-adapter';

export type MessagesAdapterRegistry = Partial<Record<ChannelType, MessagesAdapter>>;

/** Every upstream adapter by channel type and endpoint family; the composition root makes one set per process. */
export interface UpstreamAdapters {
  /** Chat, embeddings and images (`openai` natively, `anthropic` by translation). */
  chat: AdapterRegistry;
  /** /v1/messages (`anthropic` natively, `openai` by translation over its chat adapter). */
  messages: MessagesAdapterRegistry;
}

export function createUpstreamAdapters(): UpstreamAdapters {
  const openai = createOpenAiAdapter();
  const anthropic = createAnthropicAdapter();
  return { chat: { openai, anthropic }, messages: { anthropic, openai: messagesOverChat(openai) } };
}
