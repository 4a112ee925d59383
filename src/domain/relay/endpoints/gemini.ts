import type { GeminiAdapter, GeminiEmbedRequest, GeminiEmbedResult, GeminiResult, GeminiStream, GeminiStreamEvent, GeminiTokenCount } from '../../ports/gemini';
import { plainUsage } from '../../pricing/usage';
import { geminiField, type GeminiRequest, type GeminiResponse } from '../../translate/gemini-types';
import { geminiToChatRequest } from '../../translate/gemini-request-to-chat';
import type { StreamSink } from '../caller';
import { type CountEndpoint, localUsage, type StreamEndpoint, type UnaryEndpoint } from '../engine';
import { estimatePromptTokens, estimateTokens } from '../metering';
import type { ModelRoute } from '../resolve';

/**
 * The Gemini API's model actions: generateContent and streamGenerateContent, countTokens, embedContent and
 * batchEmbedContents. `gemini` channels natively, `openai` and `anthropic` ones by translation over their chat
 * adapters. The model comes from the URL path; key rules, holds and billing are those of every other route.
 */
export interface GeminiCall<B = GeminiRequest> {
  model: string;
  body: B;
  /** Set by `check`: the model thinks, so a translation passes `thinkingConfig` on. */
  thinking?: boolean;
}

export function geminiCall<B>(model: string, body: B): GeminiCall<B> {
  return { model, body };
}

/** A Gemini error (`{error: {code, message, status}}`) as one JSON text: the stream's last chunk when it fails. */
export function geminiErrorChunk(code: number, message: string): string {
  return JSON.stringify({ error: { code, message, status: code >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT' } });
}

/**
 * Prompt tokens of a Gemini request, counted locally as its chat translation would be; what that translation drops
 * (non-function tools, file references) is counted from its JSON on top, so a hold may be generous, never short.
 */
export function estimateGeminiPromptTokens(req: GeminiRequest): number {
  const dropped: string[] = [];
  try {
    const chat = geminiToChatRequest(req, '', { stream: false, dropped, thinking: 'none' });
    const extra = dropped.length ? estimateTokens(JSON.stringify(req.tools ?? [])) : 0;
    return estimatePromptTokens(chat) + extra;
  } catch {
    return estimateTokens(JSON.stringify([req.contents, geminiField(req, 'systemInstruction'), req.tools]));
  }
}

function textOf(r: GeminiResponse): string {
  let s = '';
  for (const p of r.candidates?.[0]?.content?.parts ?? []) {
    if (typeof p.text === 'string') s += p.text;
    const fc = geminiField(p, 'functionCall');
    if (fc) s += JSON.stringify(fc);
  }
  return s;
}

const adapterOf = (adapters: { gemini: Partial<Record<string, GeminiAdapter>> }, channel: { type: string }) => adapters.gemini[channel.type];

const generate = {
  name: 'generateContent',
  adapterOf,
  check(req: GeminiCall, route: ModelRoute) {
    req.thinking = route.price.thinking === true;
  },
  hold: (req: GeminiCall, _route: ModelRoute, ctx: { defaultCompletionCap: number }) => {
    const max = Number(geminiField(geminiField(req.body, 'generationConfig'), 'maxOutputTokens'));
    const budget = Number(geminiField(geminiField(geminiField(req.body, 'generationConfig'), 'thinkingConfig'), 'thinkingBudget'));
    const out = Number.isSafeInteger(max) && max > 0 ? max : ctx.defaultCompletionCap;
    return { promptTokens: estimateGeminiPromptTokens(req.body), maxCompletionTokens: out + (Number.isSafeInteger(budget) && budget > 0 ? budget : 0) };
  },
};

export const geminiGenerateEndpoint: UnaryEndpoint<GeminiCall, GeminiAdapter, GeminiResult, GeminiResponse> = {
  ...generate,
  reason: 'gemini',
  call: (adapter, req, call) => adapter.generate(req.body, call, { thinking: req.thinking }),
  metered: (r, estimate) => (r.usage ? { usage: r.usage } : localUsage(estimate.prompt, estimateTokens(textOf(r.body)))),
  body: (r) => r.body,
};

export const geminiStreamEndpoint: StreamEndpoint<GeminiCall, GeminiAdapter, GeminiStreamEvent, StreamSink> = {
  ...generate,
  reason: 'gemini_stream',
  open: (adapter, req, call) => adapter.generateStream(req.body, call, { thinking: req.thinking }),
  wire({ estimate, sink, stream }) {
    const upstream = stream as GeminiStream;
    let completionLocal = 0;
    let held: string | null = null;
    return {
      forward(ev) {
        completionLocal += estimateTokens(textOf(ev.response));
        const payload = ev.raw ?? JSON.stringify(ev.response);
        // The chunk with the finish reason waits for the settle: a client that saw it takes the answer as complete.
        if (ev.response.candidates?.[0]?.finishReason) {
          if (held !== null) {
            const previous = held;
            held = payload;
            return sink.send(previous);
          }
          held = payload;
          return true;
        }
        if (held !== null) {
          const previous = held;
          held = null;
          const sent = sink.send(previous);
          return sent === false ? false : sink.send(payload);
        }
        return sink.send(payload);
      },
      metered: () => {
        const usage = upstream.usage();
        return usage ? { usage } : localUsage(estimate.prompt, completionLocal);
      },
      complete: () => (held !== null ? sink.send(held) : true),
      error: (_code, message) => sink.send(geminiErrorChunk(500, message)),
    };
  },
};

/** countTokens: the first channel's own count where it has one (`gemini`), else a local one. Never held or billed. */
export const geminiCountEndpoint: CountEndpoint<GeminiCall<Record<string, unknown>>, GeminiAdapter, GeminiTokenCount> = {
  name: 'countTokens',
  adapterOf,
  native: (adapter, req, call) => adapter.countTokens?.(req.body, call),
  local: (req) => {
    const inner = geminiField<GeminiRequest>(req.body, 'generateContentRequest');
    return { totalTokens: estimateGeminiPromptTokens(inner ?? (req.body as unknown as GeminiRequest)) };
  },
};

/** The texts of an embed request (what is counted: Gemini reports no usage for embeddings). */
export function embedTokens(req: GeminiEmbedRequest): number {
  let n = 0;
  for (const r of req.requests) for (const p of r.content?.parts ?? []) if (typeof p.text === 'string') n += estimateTokens(p.text);
  return n;
}

export const geminiEmbedEndpoint: UnaryEndpoint<GeminiCall<GeminiEmbedRequest>, GeminiAdapter, GeminiEmbedResult, GeminiEmbedResult['body']> = {
  name: 'embedContent',
  reason: 'embeddings',
  adapterOf,
  hold: (req) => ({ promptTokens: embedTokens(req.body), maxCompletionTokens: 0 }),
  call: (adapter, req, call) => adapter.embed(req.body, call),
  metered: (r, estimate) => ({ usage: plainUsage(r.promptTokens ?? estimate.prompt, 0) }),
  body: (r) => r.body,
};
