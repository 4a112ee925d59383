import { randomUUID } from 'node:crypto';
import type { UpstreamCall } from '../../domain/ports/upstream';
import { UpstreamError } from '../../domain/ports/upstream-error';
import type { MessagesAdapter, MessagesResult, MessagesStream, MessagesStreamEvent } from '../../domain/ports/messages';
import { usageFromAnthropic } from '../../domain/pricing/usage-readers';
import { messagesToConverse } from '../../domain/translate/messages-to-converse';
import { ConverseToMessagesStream, converseToMessagesResponse, usageOfConverse } from '../../domain/translate/converse-to-messages';
import type { ConverseResponse, ConverseStreamEvent } from '../../domain/translate/converse-types';
import type { AnthropicRequest } from '../../domain/translate/types';
import { readJsonObject } from '../http';
import { awsEventStream, bedrockModelCall } from './bedrock';

/**
 * Bedrock's Converse API (`/model/{modelId}/converse`, `/converse-stream`) for the models Bedrock serves only through
 * it (Llama, Mistral, Nova, DeepSeek, gpt-oss...), read and written as the Messages API (messages-to-converse.ts,
 * converse-to-messages.ts): every front door reaches it as it reaches an `anthropic` channel, chat, Responses and
 * Gemini through the chat translation over this.
 */
export function createConverseAdapter(): MessagesAdapter {
  return { messages, messagesStream };
}

function translated(req: AnthropicRequest, call: UpstreamCall) {
  const dropped: string[] = [];
  const body = messagesToConverse(req, dropped);
  for (const name of dropped) call.droppedTools?.add(name);
  return body;
}

const messageId = () => `msg_bdrk_${randomUUID().replace(/-/g, '')}`;

async function messages(req: AnthropicRequest, call: UpstreamCall): Promise<MessagesResult> {
  const body = (await readJsonObject(await bedrockModelCall(call, 'converse', translated(req, call), false))) as ConverseResponse;
  const message = converseToMessagesResponse(body, messageId(), req.model);
  if (!message) throw new UpstreamError('protocol', 'the upstream answer has no output message');
  return { body: message, usage: usageFromAnthropic(usageOfConverse(body.usage)) };
}

async function messagesStream(req: AnthropicRequest, call: UpstreamCall): Promise<MessagesStream> {
  const res = await bedrockModelCall(call, 'converse-stream', translated(req, call), true);
  if (!String(res.headers['content-type'] ?? '').startsWith('application/vnd.amazon.eventstream')) {
    res.destroy();
    throw new UpstreamError('protocol', 'the upstream did not answer with an event stream');
  }
  const translator = new ConverseToMessagesStream(messageId(), req.model);
  let cancelled = false;
  async function* events(): AsyncGenerator<MessagesStreamEvent> {
    try {
      for await (const event of awsEventStream(res.body as AsyncIterable<Uint8Array>)) {
        for (const out of translator.push(event as ConverseStreamEvent)) yield { event: out };
        if (translator.done) return;
      }
      let rest;
      try {
        rest = translator.end();
      } catch {
        throw new UpstreamError('protocol', 'the upstream stream ended before messageStop');
      }
      for (const out of rest) yield { event: out };
    } finally {
      if (!cancelled) res.destroy();
    }
  }
  const it = events();
  return {
    [Symbol.asyncIterator]: () => it,
    usage: () => usageFromAnthropic(translator.reported()),
    cancel() {
      if (cancelled) return;
      cancelled = true;
      res.destroy();
      void it.return(undefined).catch(() => undefined);
    },
  };
}
