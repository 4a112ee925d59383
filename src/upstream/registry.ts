import type { ChannelConfig, ChannelType } from '../gateway-config/schema';
import { type ResponsesAdapter, responsesOverChat } from './responses-adapter';
import type { AdapterRegistry } from './adapter';
import { createAnthropicAdapter } from './anthropic-adapter';
import type { MessagesAdapter } from './messages-adapter';
import { messagesOverChat } from './messages-over-chat';
import { createOpenAiAdapter, createOpenAiResponsesAdapter } from './openai-adapter';

export type MessagesAdapterRegistry = Partial<Record<ChannelType, MessagesAdapter>>;

/** Every upstream adapter by channel type and endpoint family; the composition root makes one set per process. */
export interface UpstreamAdapters {
  /** Chat, embeddings and images (`openai` natively, `anthropic` by translation). */
  chat: AdapterRegistry;
  /** /v1/messages (`anthropic` natively, `openai` by translation over its chat adapter). */
  messages: MessagesAdapterRegistry;
  /** /v1/responses: natively on `openai` channels with `responses_api: true`, else over the channel's chat adapter. */
  responses(channel: ChannelConfig): ResponsesAdapter | undefined;
}

export function createUpstreamAdapters(): UpstreamAdapters {
  const openai = createOpenAiAdapter();
  const anthropic = createAnthropicAdapter();
  const chat: AdapterRegistry = { openai, anthropic };
  const nativeResponses = createOpenAiResponsesAdapter();
  const overChat = new Map<ChannelType, ResponsesAdapter>();
  return {
    chat,
    messages: { anthropic, openai: messagesOverChat(openai) },
    responses(channel) {
      if (channel.type === 'openai' && channel.responses_api) return nativeResponses;
      const base = chat[channel.type];
      if (!base) return undefined;
      let a = overChat.get(channel.type);
      if (!a) overChat.set(channel.type, (a = responsesOverChat(base)));
      return a;
    },
  };
}
