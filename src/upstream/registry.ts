import type { UpstreamAdapter } from '../domain/ports/upstream';
import type { MessagesAdapter } from '../domain/ports/messages';
import type { GeminiAdapter } from '../domain/ports/gemini';
import type { ChannelType } from '../gateway-config/schema';
import type { ResponsesAdapter } from '../domain/ports/responses';
import type { UpstreamAdapters } from '../domain/ports/adapters';
import { responsesOverChat } from './responses-over-chat';
import type { AdapterRegistry } from '../domain/ports/upstream';
import { createAnthropicAdapter } from './anthropic-adapter';
import { messagesOverChat } from './messages-over-chat';
import { createOpenAiAdapter, createOpenAiResponsesAdapter } from './openai-adapter';
import { videoAdapterOf } from './video';
import { createOpenAiAudioAdapter } from './openai-audio';
import { cohereRerankAdapter, jinaRerankAdapter } from './rerank-adapters';
import { createGeminiAdapter } from './gemini-adapter';
import { geminiOverChat } from './gemini-over-chat';
import { byPublisher } from './cloud/by-publisher';
import { createConverseAdapter } from './cloud/bedrock-converse';
import { bedrockEmbeddings } from './cloud/bedrock-embeddings';
import { chatOverMessages } from './chat-over-messages';

/** The adapters of every channel type, implementing the domain's ports; the composition root makes one set per process. */
export function createUpstreamAdapters(): UpstreamAdapters {
  const openai = createOpenAiAdapter();
  const anthropic = createAnthropicAdapter();
  const gemini = createGeminiAdapter();
  // Azure OpenAI speaks OpenAI's wire format: the same adapters, at Azure's addresses with its credentials (openai-http.ts).
  // Vertex AI serves Claude in Anthropic's format and every other model in Google's, on one channel.
  const vertex = byPublisher<UpstreamAdapter>(anthropic, gemini);
  // Bedrock serves Anthropic's models through InvokeModel with the Messages body (cloud/bedrock.ts), every other
  // model through Converse (cloud/bedrock-converse.ts), embedding models through InvokeModel (cloud/bedrock-embeddings.ts).
  const converse = createConverseAdapter();
  const claudeOnBedrock: MessagesAdapter = { messages: anthropic.messages, messagesStream: anthropic.messagesStream };
  const bedrockMessages = byPublisher<MessagesAdapter>(claudeOnBedrock, converse);
  const bedrock = byPublisher<UpstreamAdapter>(anthropic, { ...chatOverMessages(converse), embeddings: bedrockEmbeddings });
  const chat: AdapterRegistry = { openai, anthropic, gemini, azure: openai, vertex, bedrock };
  const nativeResponses = createOpenAiResponsesAdapter();
  const overChat = new Map<ChannelType, ResponsesAdapter>();
  const audio = createOpenAiAudioAdapter();
  return {
    chat,
    messages: { anthropic, openai: messagesOverChat(openai), gemini: messagesOverChat(gemini), azure: messagesOverChat(openai), vertex: byPublisher<MessagesAdapter>(anthropic, messagesOverChat(gemini)), bedrock: bedrockMessages },
    gemini: { gemini, openai: geminiOverChat(openai), anthropic: geminiOverChat(anthropic), azure: geminiOverChat(openai), vertex: byPublisher<GeminiAdapter>(geminiOverChat(anthropic), gemini), bedrock: geminiOverChat(bedrock) },
    responses(channel) {
      if ((channel.type === 'openai' || channel.type === 'azure') && channel.responses_api) return nativeResponses;
      const base = chat[channel.type];
      if (!base) return undefined;
      let a = overChat.get(channel.type);
      if (!a) overChat.set(channel.type, (a = responsesOverChat(base)));
      return a;
    },
    video: videoAdapterOf,
    audio: { openai: audio, azure: audio },
    rerank: { cohere: cohereRerankAdapter, jina: jinaRerankAdapter, openai: jinaRerankAdapter },
  };
}
