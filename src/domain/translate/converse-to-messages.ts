import type { ConverseResponse, ConverseStopReason, ConverseStreamEvent, ConverseUsage } from './converse-types';
import type { AnthropicBlock, AnthropicResponse, AnthropicStopReason, AnthropicStreamEvent, AnthropicUsage } from './types';

/**
 * Bedrock Converse answers read as Messages answers (the other half of messages-to-converse.ts): `text`, `toolUse`
 * and `reasoningContent` blocks become `text`, `tool_use` and `thinking` / `redacted_thinking`; the stop reason
 * maps one to one, a guardrail or content filter to `refusal`; usage keeps its dimensions (cache reads and writes
 * apart from input, as the Messages API counts them).
 */

export function stopReasonOf(r: ConverseStopReason | undefined): AnthropicStopReason | null {
  if (r === undefined || r === null) return null;
  if (r === 'end_turn' || r === 'tool_use' || r === 'max_tokens' || r === 'stop_sequence') return r;
  if (r === 'guardrail_intervened' || r === 'content_filtered') return 'refusal';
  return 'end_turn';
}

export function usageOfConverse(u: ConverseUsage | undefined): AnthropicUsage | null {
  if (!u || !Number.isSafeInteger(u.inputTokens)) return null;
  return {
    input_tokens: u.inputTokens as number,
    output_tokens: Number.isSafeInteger(u.outputTokens) ? (u.outputTokens as number) : 0,
    cache_read_input_tokens: Number.isSafeInteger(u.cacheReadInputTokens) ? (u.cacheReadInputTokens as number) : 0,
    cache_creation_input_tokens: Number.isSafeInteger(u.cacheWriteInputTokens) ? (u.cacheWriteInputTokens as number) : 0,
  };
}

function blockOf(b: unknown): AnthropicBlock | null {
  if (!b || typeof b !== 'object') return null;
  const c = b as Record<string, Record<string, unknown> | string | undefined>;
  if (typeof c.text === 'string') return { type: 'text', text: c.text };
  const tool = c.toolUse as { toolUseId?: unknown; name?: unknown; input?: unknown } | undefined;
  if (tool && typeof tool === 'object') return { type: 'tool_use', id: String(tool.toolUseId ?? ''), name: String(tool.name ?? ''), input: tool.input ?? {} };
  const reasoning = c.reasoningContent as { reasoningText?: { text?: unknown; signature?: unknown }; redactedContent?: unknown } | undefined;
  if (reasoning && typeof reasoning === 'object') {
    if (typeof reasoning.redactedContent === 'string') return { type: 'redacted_thinking', data: reasoning.redactedContent };
    const r = reasoning.reasoningText;
    if (r && typeof r.text === 'string') return { type: 'thinking', thinking: r.text, signature: typeof r.signature === 'string' ? r.signature : '' };
  }
  return null;
}

/** A Converse answer as a Messages answer; null when it has no output message. */
export function converseToMessagesResponse(body: ConverseResponse, id: string, model: string): AnthropicResponse | null {
  const content = body.output?.message?.content;
  if (!Array.isArray(content)) return null;
  return {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content: content.map(blockOf).filter((b): b is AnthropicBlock => b !== null),
    stop_reason: stopReasonOf(body.stopReason),
    stop_sequence: null,
    usage: usageOfConverse(body.usage) ?? { input_tokens: 0, output_tokens: 0 },
  };
}

type OpenBlock = 'text' | 'tool_use' | 'thinking' | 'redacted_thinking';

/**
 * A ConverseStream read as a Messages event stream, one event at a time. Converse sends its usage (`metadata`) after
 * `messageStop`, so the Messages `message_delta` and `message_stop` wait for it (or for the stream's end).
 */
export class ConverseToMessagesStream {
  private started = false;
  private readonly open = new Map<number, OpenBlock>();
  private stop: AnthropicStopReason | null = null;
  private stopped = false;
  private usage: AnthropicUsage | null = null;
  done = false;

  constructor(
    private readonly id: string,
    private readonly model: string,
  ) {}

  /** The usage Converse reported; null before its `metadata` event. */
  reported(): AnthropicUsage | null {
    return this.usage;
  }

  push(event: ConverseStreamEvent): AnthropicStreamEvent[] {
    const out: AnthropicStreamEvent[] = [];
    if (!this.started && event.type !== 'metadata') out.push(this.start());
    const p = event.payload as Record<string, unknown>;
    const index = Number.isSafeInteger(p.contentBlockIndex) ? (p.contentBlockIndex as number) : 0;
    switch (event.type) {
      case 'contentBlockStart': {
        const tool = (p.start as { toolUse?: { toolUseId?: unknown; name?: unknown } } | undefined)?.toolUse;
        if (tool && !this.open.has(index)) {
          this.open.set(index, 'tool_use');
          out.push({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: String(tool.toolUseId ?? ''), name: String(tool.name ?? ''), input: {} } });
        }
        break;
      }
      case 'contentBlockDelta': {
        const d = (p.delta ?? {}) as { text?: unknown; toolUse?: { input?: unknown }; reasoningContent?: { text?: unknown; signature?: unknown; redactedContent?: unknown } };
        if (typeof d.text === 'string') {
          out.push(...this.ensure(index, 'text'), { type: 'content_block_delta', index, delta: { type: 'text_delta', text: d.text } });
        } else if (d.toolUse && typeof d.toolUse.input === 'string') {
          out.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: d.toolUse.input } });
        } else if (d.reasoningContent) {
          const r = d.reasoningContent;
          if (typeof r.redactedContent === 'string') out.push(...this.ensure(index, 'redacted_thinking', r.redactedContent));
          if (typeof r.text === 'string') out.push(...this.ensure(index, 'thinking'), { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: r.text } });
          if (typeof r.signature === 'string') out.push(...this.ensure(index, 'thinking'), { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: r.signature } });
        }
        break;
      }
      case 'contentBlockStop':
        if (this.open.delete(index)) out.push({ type: 'content_block_stop', index });
        break;
      case 'messageStop':
        out.push(...this.closeAll());
        this.stop = stopReasonOf((p as { stopReason?: ConverseStopReason }).stopReason);
        this.stopped = true;
        break;
      case 'metadata':
        this.usage = usageOfConverse((p as { usage?: ConverseUsage }).usage) ?? this.usage;
        if (this.stopped) out.push(...this.finish());
        break;
      default:
        break;
    }
    return out;
  }

  /** The events still owed when the stream ended; throws when it ended before `messageStop`. */
  end(): AnthropicStreamEvent[] {
    if (this.done) return [];
    if (!this.stopped) throw new Error('the stream ended before messageStop');
    return this.finish();
  }

  private start(): AnthropicStreamEvent {
    this.started = true;
    return {
      type: 'message_start',
      message: { id: this.id, type: 'message', role: 'assistant', model: this.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } },
    };
  }

  private ensure(index: number, kind: OpenBlock, data?: string): AnthropicStreamEvent[] {
    if (this.open.has(index)) return [];
    this.open.set(index, kind);
    const block: AnthropicBlock =
      kind === 'text' ? { type: 'text', text: '' } : kind === 'thinking' ? { type: 'thinking', thinking: '', signature: '' } : kind === 'redacted_thinking' ? { type: 'redacted_thinking', data: data ?? '' } : { type: kind };
    return [{ type: 'content_block_start', index, content_block: block }];
  }

  private closeAll(): AnthropicStreamEvent[] {
    const out: AnthropicStreamEvent[] = [...this.open.keys()].map((index) => ({ type: 'content_block_stop' as const, index }));
    this.open.clear();
    return out;
  }

  private finish(): AnthropicStreamEvent[] {
    this.done = true;
    const usage = this.usage ?? { input_tokens: 0, output_tokens: 0 };
    return [{ type: 'message_delta', delta: { stop_reason: this.stop ?? 'end_turn', stop_sequence: null }, usage }, { type: 'message_stop' }];
  }
}
