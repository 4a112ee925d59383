import type { TokenUsage } from '../domain/pricing/usage';
import { NO_TOKENS } from '../domain/pricing/usage';
import { usageFromOpenAi } from '../domain/pricing/usage-readers';
import type { ResponsesAdapter, ResponsesStreamEvent } from '../domain/ports/responses';
import type { UpstreamAdapter, UpstreamCall } from '../domain/ports/upstream';
import { UpstreamError } from '../domain/ports/upstream-error';
import { type ChatTranslation, ChatToResponsesStream, chatToResponse, responsesToChatRequest } from '../domain/translate/responses-to-chat';
import { withFields } from '../with-fields';

/** The Responses API over a chat adapter: the request translated, the answer and its stream translated back. */
export function responsesOverChat(chat: UpstreamAdapter): ResponsesAdapter {
  return {
    async responses(req, call) {
      const t: ChatTranslation = translated(withFields(req, { stream: false }), call);
      const result = await chat.chat(t.chat, call);
      const usage = result.usage;
      const body = chatToResponse(result.body, req, t.tools, usage ?? NO_TOKENS);
      return { body, usage };
    },

    async responsesStream(req, call) {
      const t = translated(withFields(req, { stream: true }), call);
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

/** The chat request, and the hosted tools it dropped named on the call. */
function translated(req: Record<string, unknown>, call: UpstreamCall): ChatTranslation {
  const t = responsesToChatRequest(req, call.upstreamModel);
  for (const name of t.dropped) call.droppedTools?.add(name);
  return t;
}
