import type { GeminiAdapter, GeminiEmbedRequest, GeminiEmbedResult, GeminiOptions, GeminiResult, GeminiStream, GeminiStreamEvent } from '../domain/ports/gemini';
import type { UpstreamAdapter, UpstreamCall } from '../domain/ports/upstream';
import { UpstreamError } from '../domain/ports/upstream-error';
import { ChatToGeminiStream, chatToGeminiResponse } from '../domain/translate/chat-response-to-gemini';
import { geminiField, type GeminiRequest } from '../domain/translate/gemini-types';
import { geminiToChatRequest, type ThinkingTarget } from '../domain/translate/gemini-request-to-chat';
import { usageFromOpenAi } from '../domain/pricing/usage-readers';
import { translatedStream } from './translated-stream';
import type { TokenUsage } from '../domain/pricing/usage';

/**
 * The Gemini API on a channel that speaks chat completions (`openai`, or `anthropic` through its chat adapter): the
 * request translated to chat, sent through the channel's chat adapter, and its answer (or stream) translated back.
 * Embeddings go through the chat adapter's embeddings, where it has them.
 */
export function geminiOverChat(chatAdapter: UpstreamAdapter): GeminiAdapter {
  const adapter: GeminiAdapter = {
    async generate(req, call, opts): Promise<GeminiResult> {
      const result = await chatAdapter.chat(translated(req, call, opts, false), call);
      return { body: chatToGeminiResponse(result.body, call.upstreamModel, result.usage, wantsThoughts(req)), usage: result.usage };
    },

    async generateStream(req, call, opts): Promise<GeminiStream> {
      const upstream = await chatAdapter.chatStream(translated(req, call, opts, true), call);
      const translator = new ChatToGeminiStream(call.upstreamModel, wantsThoughts(req));
      let usage: TokenUsage | null = null;
      async function* events(): AsyncGenerator<GeminiStreamEvent> {
        let any = false;
        for await (const ev of upstream) {
          any = true;
          const u = ev.usage ?? (ev.chunk.usage ? usageFromOpenAi(ev.chunk.usage) : null);
          if (u) usage = u;
          for (const response of translator.push(ev.chunk)) yield { response };
        }
        if (!any) throw new UpstreamError('protocol', 'the upstream stream ended before its first chunk');
        yield { response: translator.end(usage) };
      }
      return { ...translatedStream(events(), upstream), usage: () => usage };
    },

    async embed(req: GeminiEmbedRequest, call: UpstreamCall): Promise<GeminiEmbedResult> {
      if (!chatAdapter.embeddings) throw new UpstreamError('status', 'this model does not embed', 400, 'invalid_request', null);
      const input = req.requests.map((r) => (r.content?.parts ?? []).map((p) => (typeof p.text === 'string' ? p.text : '')).join(''));
      const dims = geminiField<number>(req.requests[0], 'outputDimensionality');
      const result = await chatAdapter.embeddings({ model: call.upstreamModel, input, ...(typeof dims === 'number' ? { dimensions: dims } : {}) }, call);
      const embeddings = result.body.data.map((d) => ({ values: (d as { embedding?: unknown }).embedding ?? [] }));
      return { body: { embeddings }, promptTokens: result.promptTokens };
    },
  };
  return adapter;
}

function wantsThoughts(req: GeminiRequest): boolean {
  return geminiField(geminiField(geminiField(req, 'generationConfig'), 'thinkingConfig'), 'includeThoughts') === true;
}

function translated(req: GeminiRequest, call: UpstreamCall, opts: GeminiOptions | undefined, stream: boolean) {
  const dropped: string[] = [];
  // Channels whose chat adapter speaks Messages (Claude on anthropic, bedrock and vertex, Bedrock's Converse) take
  // Anthropic's `thinking`; the others OpenAI's `reasoning_effort`.
  const speaksMessages = call.channel.type === 'anthropic' || call.channel.type === 'bedrock' || call.channel.type === 'vertex';
  const thinking: ThinkingTarget = !opts?.thinking ? 'none' : speaksMessages ? 'budget' : 'effort';
  const chatReq = geminiToChatRequest(req, call.upstreamModel, { stream, dropped, thinking });
  for (const name of dropped) call.droppedTools?.add(name);
  return chatReq;
}
