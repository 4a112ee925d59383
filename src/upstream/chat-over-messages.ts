import type { ChatRequest, ChatStream, ChatStreamEvent, UpstreamAdapter, UpstreamCall } from '../domain/ports/upstream';
import { UpstreamError } from '../domain/ports/upstream-error';
import { DEFAULT_ANTHROPIC_VERSION, type MessagesAdapter, type MessagesOptions } from '../domain/ports/messages';
import { AnthropicStreamError, AnthropicToChatStream, anthropicToChatCompletion } from '../domain/translate/anthropic-response-to-chat';
import { chatToAnthropicRequest } from '../domain/translate/chat-request-to-anthropic';
import { translatedStream } from './translated-stream';
import { withFields } from '../with-fields';

const CHAT_OPTIONS: MessagesOptions = { version: DEFAULT_ANTHROPIC_VERSION };

/**
 * Chat completions on an upstream that speaks Messages (the `anthropic` type, Claude on Bedrock and Vertex, and
 * Bedrock's Converse, which is read and written as Messages): the chat request translated to a Messages request, its
 * answer (or stream) translated back.
 */
export function chatOverMessages(messages: Pick<MessagesAdapter, 'messages' | 'messagesStream'>): Pick<UpstreamAdapter, 'chat' | 'chatStream'> {
  return {
    async chat(req: ChatRequest, call: UpstreamCall) {
      const body = chatToAnthropicRequest(withFields(req, { stream: false }), call.upstreamModel);
      const result = await messages.messages(body, call, CHAT_OPTIONS);
      return { body: anthropicToChatCompletion(result.body, req.model), usage: result.usage };
    },

    async chatStream(req: ChatRequest, call: UpstreamCall): Promise<ChatStream> {
      const body = chatToAnthropicRequest(withFields(req, { stream: true }), call.upstreamModel);
      const upstream = await messages.messagesStream(body, call, CHAT_OPTIONS);
      // Always with the usage chunk: the relay bills from it and shows it only to clients that asked.
      const translator = new AnthropicToChatStream(req.model, true);
      async function* chunks(): AsyncGenerator<ChatStreamEvent> {
        for await (const { event } of upstream) {
          let out;
          try {
            out = translator.push(event);
          } catch (err) {
            if (err instanceof AnthropicStreamError) throw new UpstreamError('protocol', 'the upstream reported an error in the stream');
            throw err;
          }
          for (const chunk of out) yield { chunk, usage: chunk.usage ? translator.usage() : undefined };
        }
      }
      return translatedStream(chunks(), upstream);
    },
  };
}
