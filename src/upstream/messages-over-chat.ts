import type { UpstreamAdapter, UpstreamCall } from '../domain/ports/upstream';
import { UpstreamError } from '../domain/ports/upstream-error';
import type { MessagesAdapter, MessagesResult, MessagesStream, MessagesStreamEvent } from '../domain/ports/messages';
import { anthropicToChatRequest } from '../domain/translate/anthropic-request-to-chat';
import { ChatToAnthropicStream, chatToAnthropicResponse } from '../domain/translate/chat-response-to-anthropic';
import type { AnthropicRequest } from '../domain/translate/types';
import { translatedStream } from './translated-stream';
import { withFields } from '../with-fields';

/**
 * /v1/messages on a channel that speaks chat completions (type `openai`): the Messages request is translated to
 * a chat request, sent through that channel's chat adapter, and its answer (or stream) translated back. The
 * `anthropic-version` has no meaning there and is not sent.
 */
export function messagesOverChat(chatAdapter: UpstreamAdapter): MessagesAdapter {
  return {
    async messages(req: AnthropicRequest, call: UpstreamCall): Promise<MessagesResult> {
      const chatReq = translated(withFields(req, { stream: false }), call);
      const result = await chatAdapter.chat(chatReq, call);
      const body = chatToAnthropicResponse(result.body, req.model);
      return { body, usage: result.usage };
    },

    async messagesStream(req: AnthropicRequest, call: UpstreamCall): Promise<MessagesStream> {
      const chatReq = translated(withFields(req, { stream: true }), call);
      const upstream = await chatAdapter.chatStream(chatReq, call);
      const translator = new ChatToAnthropicStream(req.model);
      async function* events(): AsyncGenerator<MessagesStreamEvent> {
        let any = false;
        for await (const { chunk } of upstream) {
          any = true;
          for (const event of translator.push(chunk)) yield { event };
        }
        if (!any) throw new UpstreamError('protocol', 'the upstream stream ended before its first chunk');
        for (const event of translator.end()) yield { event };
      }
      return { ...translatedStream(events(), upstream), usage: () => translator.usage() };
    },
  };
}


/** The chat request, and the server tools it dropped named on the call. */
function translated(req: AnthropicRequest, call: UpstreamCall) {
  const dropped: string[] = [];
  const chatReq = anthropicToChatRequest(req, call.upstreamModel, dropped);
  for (const name of dropped) call.droppedTools?.add(name);
  return chatReq;
}
