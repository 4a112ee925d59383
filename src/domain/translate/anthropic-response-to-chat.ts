import type {
  AnthropicResponse,
  AnthropicStopReason,
  AnthropicStreamEvent,
  ChatChunk,
  ChatChunkDelta,
  ChatCompletion,
  ChatFinishReason,
  ChatToolCall,
} from './types';
import { NO_TOKENS, type TokenUsage } from '../pricing/usage';
import { AnthropicUsageTracker, toChatUsage, usageFromAnthropic } from '../pricing/usage-readers';

/**
 * Anthropic Messages answers as chat completions: a message as `chat.completion`, a stream of Messages events
 * as `chat.completion.chunk`s. Usage: prompt_tokens = input + cache reads + cache writes, cached_tokens = cache
 * reads, completion_tokens = output_tokens (src/domain/pricing/usage-readers.ts).
 */

const FINISH: Record<AnthropicStopReason, ChatFinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  pause_turn: 'stop',
  refusal: 'content_filter',
};

export function finishReasonOf(stop: AnthropicStopReason | string | null | undefined): ChatFinishReason | null {
  if (stop == null) return null;
  return FINISH[stop as AnthropicStopReason] ?? 'stop';
}

/** `model` is the id the client asked for (the channel may have mapped it to another upstream id). */
export function anthropicToChatCompletion(msg: AnthropicResponse, model: string, created = nowSeconds()): ChatCompletion {
  let text = '';
  let thinking = '';
  const calls: ChatToolCall[] = [];
  for (const block of msg.content ?? []) {
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'thinking' && typeof block.thinking === 'string') thinking += block.thinking;
    else if (block.type === 'tool_use') {
      calls.push({ id: String(block.id), type: 'function', function: { name: String(block.name), arguments: JSON.stringify(block.input ?? {}) } });
    }
  }
  const message: ChatCompletion['choices'][number]['message'] = { role: 'assistant', content: text || (calls.length ? null : '') };
  if (calls.length) message.tool_calls = calls;
  if (thinking) message.reasoning_content = thinking;
  return {
    id: msg.id,
    object: 'chat.completion',
    created,
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReasonOf(msg.stop_reason) ?? 'stop' }],
    usage: toChatUsage(usageFromAnthropic(msg.usage) ?? NO_TOKENS),
  };
}

/**
 * Turns a Messages event stream into chat chunks, one event at a time. `push` returns the chunks to send for
 * an event (often none); after `message_stop`, `done` is true and `usage()` has the counts to bill.
 * The usage chunk (`choices: []`) is emitted only when the client asked for it (`stream_options.include_usage`).
 * An `error` event throws AnthropicStreamError: the caller ends the stream as failed (not billed).
 */
export class AnthropicToChatStream {
  private id = '';
  private readonly created: number;
  private readonly tracker = new AnthropicUsageTracker();
  private finish: ChatFinishReason | null = null;
  /** Anthropic block index -> chat tool_calls index, and whether any argument text was sent for it. */
  private readonly toolIndex = new Map<number, { index: number; args: boolean }>();
  private tools = 0;
  done = false;

  constructor(
    private readonly model: string,
    private readonly includeUsage: boolean,
    created = nowSeconds(),
  ) {
    this.created = created;
  }

  /** The usage reported so far (zero before message_start). */
  usage(): TokenUsage {
    return this.tracker.usage() ?? NO_TOKENS;
  }

  /** Whether message_delta reported why the answer ended (a stream cut before it is incomplete). */
  finished(): boolean {
    return this.finish !== null;
  }

  push(event: AnthropicStreamEvent): ChatChunk[] {
    this.tracker.see(event);
    switch (event.type) {
      case 'message_start': {
        this.id = event.message.id;
        return [this.chunk({ role: 'assistant', content: '' })];
      }
      case 'content_block_start': {
        const block = event.content_block;
        if (block.type === 'tool_use') {
          const index = this.tools++;
          this.toolIndex.set(event.index, { index, args: false });
          return [
            this.chunk({
              tool_calls: [{ index, id: String(block.id), type: 'function', function: { name: String(block.name), arguments: '' } }],
            }),
          ];
        }
        // A text block may start with text already (it does not in practice, but the format allows it).
        if (block.type === 'text' && typeof block.text === 'string' && block.text) return [this.chunk({ content: block.text })];
        return [];
      }
      case 'content_block_delta': {
        const d = event.delta;
        if (d.type === 'text_delta' && typeof d.text === 'string') return d.text ? [this.chunk({ content: d.text })] : [];
        if (d.type === 'input_json_delta' && typeof d.partial_json === 'string') {
          const tool = this.toolIndex.get(event.index);
          if (tool === undefined || !d.partial_json) return [];
          tool.args = true;
          return [this.chunk({ tool_calls: [{ index: tool.index, function: { arguments: d.partial_json } }] })];
        }
        if (d.type === 'thinking_delta' && typeof d.thinking === 'string') return d.thinking ? [this.chunk({ reasoning_content: d.thinking })] : [];
        return [];
      }
      case 'content_block_stop': {
        // A tool called without arguments streams none (or one empty fragment): chat clients parse "{}", as the
        // non-streamed answer has it, never "".
        const tool = this.toolIndex.get(event.index);
        if (!tool || tool.args) return [];
        tool.args = true;
        return [this.chunk({ tool_calls: [{ index: tool.index, function: { arguments: '{}' } }] })];
      }
      case 'message_delta': {
        this.finish = finishReasonOf(event.delta?.stop_reason) ?? 'stop';
        return [this.chunk({}, this.finish)];
      }
      case 'message_stop': {
        this.done = true;
        if (!this.includeUsage) return [];
        return [{ ...this.head(), choices: [], usage: toChatUsage(this.usage()) }];
      }
      case 'error':
        throw new AnthropicStreamError(event.error?.type ?? 'api_error', event.error?.message ?? 'upstream stream error');
      default:
        return [];
    }
  }

  private head() {
    return { id: this.id, object: 'chat.completion.chunk' as const, created: this.created, model: this.model };
  }

  private chunk(delta: ChatChunkDelta, finish: ChatFinishReason | null = null): ChatChunk {
    const c: ChatChunk = { ...this.head(), choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] };
    if (this.includeUsage) c.usage = null;
    return c;
  }
}

/** An `error` event inside an upstream Messages stream (overloaded mid-answer, for one). */
export class AnthropicStreamError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
    this.name = 'AnthropicStreamError';
  }
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
