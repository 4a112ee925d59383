import type {
  AnthropicBlock,
  AnthropicResponse,
  AnthropicStopReason,
  AnthropicStreamEvent,
  ChatChunk,
  ChatCompletion,
  ChatFinishReason,
} from './types';
import { NO_TOKENS, type TokenUsage } from '../pricing/usage';
import { toAnthropicUsage, usageFromOpenAi } from '../pricing/usage-readers';

/**
 * Chat-completions answers as Messages answers, for /v1/messages on an `openai` channel: a `chat.completion`
 * as a `message`, a stream of chunks as the Messages event sequence (message_start, ping, per block
 * content_block_start / content_block_delta / content_block_stop, message_delta, message_stop).
 * Usage: input_tokens = prompt_tokens - cached_tokens, cache_read_input_tokens = cached_tokens, output_tokens =
 * completion_tokens (src/domain/pricing/usage-readers.ts).
 */

const STOP: Record<ChatFinishReason, AnthropicStopReason> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

export function stopReasonOf(finish: ChatFinishReason | string | null | undefined): AnthropicStopReason {
  return (finish && STOP[finish as ChatFinishReason]) || 'end_turn';
}

/** Tool arguments are a JSON string in chat and an object in Messages; a malformed string is kept under `_raw`. */
function inputOf(args: string | undefined): unknown {
  if (!args) return {};
  try {
    const v: unknown = JSON.parse(args);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : { _raw: args };
  } catch {
    return { _raw: args };
  }
}

function messageId(id: string): string {
  return id.startsWith('msg_') ? id : `msg_${id}`;
}

/** `model` is the id the client asked for. */
export function chatToAnthropicResponse(c: ChatCompletion, model: string): AnthropicResponse {
  const choice = c.choices?.[0];
  const content: AnthropicBlock[] = [];
  const text = choice?.message?.content;
  if (typeof text === 'string' && text) content.push({ type: 'text', text });
  for (const call of choice?.message?.tool_calls ?? []) {
    content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: inputOf(call.function.arguments) });
  }
  const fc = choice?.message?.function_call as { name: string; arguments: string } | undefined;
  if (fc) content.push({ type: 'tool_use', id: `call_${fc.name}`, name: fc.name, input: inputOf(fc.arguments) });
  return {
    id: messageId(c.id),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReasonOf(choice?.finish_reason),
    stop_sequence: null,
    usage: toAnthropicUsage(usageFromOpenAi(c.usage) ?? NO_TOKENS),
  };
}

type OpenBlock = { kind: 'text'; index: number } | { kind: 'tool'; index: number; chatIndex: number };

/**
 * Turns chat chunks into Messages events, one chunk at a time. `push(chunk)` returns the events for it;
 * `end()` closes the message (message_delta with the stop reason and usage, message_stop) once the upstream
 * stream is over. `usage()` has the counts to bill (from the usage chunk the request asked for).
 */
export class ChatToAnthropicStream {
  private started = false;
  private id = '';
  private open: OpenBlock | null = null;
  private blocks = 0;
  private finish: ChatFinishReason | null = null;
  private usageSeen: TokenUsage | null = null;

  constructor(private readonly model: string) {}

  /** The usage of the chunk that reported it; null before (or without) one. */
  usage(): TokenUsage | null {
    return this.usageSeen;
  }

  /** Whether the upstream said why the answer ended (a stream cut before that is incomplete). */
  finished(): boolean {
    return this.finish !== null;
  }

  push(chunk: ChatChunk): AnthropicStreamEvent[] {
    const out: AnthropicStreamEvent[] = [];
    if (!this.started) out.push(...this.start(chunk.id));
    if (chunk.usage) this.usageSeen = usageFromOpenAi(chunk.usage) ?? this.usageSeen;
    const choice = chunk.choices?.find((c) => c.index === 0);
    if (!choice) return out;
    const d = choice.delta ?? {};
    if (typeof d.content === 'string' && d.content) {
      if (this.open?.kind !== 'text') out.push(...this.openBlock({ kind: 'text', index: this.blocks }, { type: 'text', text: '' }));
      out.push({ type: 'content_block_delta', index: this.open!.index, delta: { type: 'text_delta', text: d.content } });
    }
    for (const call of d.tool_calls ?? []) {
      const sameCall = this.open?.kind === 'tool' && this.open.chatIndex === call.index;
      if (!sameCall) {
        out.push(
          ...this.openBlock(
            { kind: 'tool', index: this.blocks, chatIndex: call.index },
            { type: 'tool_use', id: call.id ?? `call_${call.index}`, name: call.function?.name ?? '', input: {} },
          ),
        );
      }
      const args = call.function?.arguments;
      if (args) out.push({ type: 'content_block_delta', index: this.open!.index, delta: { type: 'input_json_delta', partial_json: args } });
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
    return out;
  }

  /** The closing events; call once when the upstream stream ended (after [DONE] or the last chunk). */
  end(): AnthropicStreamEvent[] {
    const out: AnthropicStreamEvent[] = [];
    if (!this.started) out.push(...this.start(''));
    out.push(...this.closeBlock());
    out.push({
      type: 'message_delta',
      delta: { stop_reason: stopReasonOf(this.finish), stop_sequence: null },
      usage: toAnthropicUsage(this.usageSeen ?? NO_TOKENS),
    });
    out.push({ type: 'message_stop' });
    return out;
  }

  private start(id: string): AnthropicStreamEvent[] {
    this.started = true;
    this.id = messageId(id || `${Date.now()}`);
    return [
      {
        type: 'message_start',
        message: {
          id: this.id,
          type: 'message',
          role: 'assistant',
          model: this.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          // Chat streams report usage only at the end: message_delta carries the real counts.
          usage: { input_tokens: 0, output_tokens: 0 },
        },
      },
      { type: 'ping' },
    ];
  }

  private openBlock(next: OpenBlock, block: AnthropicBlock): AnthropicStreamEvent[] {
    const out = this.closeBlock();
    this.open = next;
    this.blocks++;
    out.push({ type: 'content_block_start', index: next.index, content_block: block });
    return out;
  }

  private closeBlock(): AnthropicStreamEvent[] {
    if (!this.open) return [];
    const index = this.open.index;
    this.open = null;
    return [{ type: 'content_block_stop', index }];
  }
}
