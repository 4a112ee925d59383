import type {
  AnthropicResponse,
  AnthropicStopReason,
  AnthropicStreamEvent,
  AnthropicUsage,
  ChatChunk,
  ChatChunkDelta,
  ChatCompletion,
  ChatFinishReason,
  ChatToolCall,
  ChatUsage,
  TokenCounts,
} from './types';

/**
 * Anthropic Messages answers as chat completions: a message as `chat.completion`, a stream of Messages events
 * as `chat.completion.chunk`s. Usage: input_tokens -> prompt_tokens, output_tokens -> completion_tokens.
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

export function chatUsageOf(u: Partial<AnthropicUsage> | undefined): ChatUsage {
  const prompt = u?.input_tokens ?? 0;
  const completion = u?.output_tokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
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
    usage: chatUsageOf(msg.usage),
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
  private input = 0;
  private output = 0;
  private finish: ChatFinishReason | null = null;
  /** Anthropic block index -> chat tool_calls index. */
  private readonly toolIndex = new Map<number, number>();
  private tools = 0;
  done = false;

  constructor(
    private readonly model: string,
    private readonly includeUsage: boolean,
    created = nowSeconds(),
  ) {
    this.created = created;
  }

  usage(): TokenCounts {
    return { promptTokens: this.input, completionTokens: this.output };
  }

  /** Whether message_delta reported why the answer ended (a stream cut before it is incomplete). */
  finished(): boolean {
    return this.finish !== null;
  }

  push(event: AnthropicStreamEvent): ChatChunk[] {
    switch (event.type) {
      case 'message_start': {
        this.id = event.message.id;
        this.input = event.message.usage?.input_tokens ?? 0;
        this.output = event.message.usage?.output_tokens ?? 0;
        return [this.chunk({ role: 'assistant', content: '' })];
      }
      case 'content_block_start': {
        const block = event.content_block;
        if (block.type === 'tool_use') {
          const index = this.tools++;
          this.toolIndex.set(event.index, index);
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
          const index = this.toolIndex.get(event.index);
          if (index === undefined || !d.partial_json) return [];
          return [this.chunk({ tool_calls: [{ index, function: { arguments: d.partial_json } }] })];
        }
        if (d.type === 'thinking_delta' && typeof d.thinking === 'string') return d.thinking ? [this.chunk({ reasoning_content: d.thinking })] : [];
        return [];
      }
      case 'message_delta': {
        // output_tokens is cumulative; input_tokens appears here too on newer API versions.
        if (typeof event.usage?.output_tokens === 'number') this.output = event.usage.output_tokens;
        if (typeof event.usage?.input_tokens === 'number') this.input = event.usage.input_tokens;
        this.finish = finishReasonOf(event.delta?.stop_reason) ?? 'stop';
        return [this.chunk({}, this.finish)];
      }
      case 'message_stop': {
        this.done = true;
        if (!this.includeUsage) return [];
        return [{ ...this.head(), choices: [], usage: chatUsageOf({ input_tokens: this.input, output_tokens: this.output }) }];
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
