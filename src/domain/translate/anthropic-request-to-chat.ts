import { ValidationError } from '../errors';
import type {
  AnthropicBlock,
  AnthropicRequest,
  ChatContentPart,
  ChatMessage,
  ChatRequest,
  ChatToolCall,
  ChatToolChoice,
} from './types';

/**
 * A Messages request as a chat-completions request, for /v1/messages on a model served by an `openai` channel.
 *
 * - `system` -> a first system message;
 * - text blocks -> text parts (a turn that is only text becomes a plain string); image blocks -> `image_url`
 *   parts (base64 -> a data URI, url -> the URL);
 * - assistant `tool_use` blocks -> `tool_calls`; user `tool_result` blocks -> `tool` messages, placed before
 *   the rest of that user turn (chat wants each result right after the assistant's calls);
 * - a `system` message inside `messages` -> a system message in its place (text blocks joined); other roles chat
 *   has no equivalent for are dropped;
 * - thinking blocks, server-tool blocks and other block types chat cannot carry are dropped (docs/translation.md);
 * - tools / tool_choice / disable_parallel_tool_use -> tools / tool_choice / parallel_tool_calls; server tools
 *   Anthropic runs (web search, web fetch, code execution, tool search, MCP) are only offered: dropped, and named in
 *   `dropped`; a tool_choice that forces one is refused (400 naming tool_choice);
 * - stop_sequences -> stop; metadata.user_id -> user; a stream asks for usage (`stream_options.include_usage`)
 *   because the gateway bills from it.
 */
export function anthropicToChatRequest(req: AnthropicRequest, upstreamModel: string, dropped: string[] = []): ChatRequest {
  const messages: ChatMessage[] = [];
  const system = typeof req.system === 'string' ? req.system : Array.isArray(req.system) ? req.system.map((b) => b.text).join('\n') : '';
  if (system) messages.push({ role: 'system', content: system });

  req.messages.forEach((m, i) => {
    if (m.role === 'system') {
      const text = typeof m.content === 'string' ? m.content : m.content.flatMap((b) => (b.type === 'text' ? [String(b.text ?? '')] : [])).join('\n');
      if (text) messages.push({ role: 'system', content: text });
      return;
    }
    if (m.role !== 'user' && m.role !== 'assistant') return;
    if (typeof m.content === 'string') {
      messages.push({ role: m.role, content: m.content });
      return;
    }
    if (m.role === 'assistant') messages.push(assistantMessage(m.content));
    else messages.push(...userMessages(m.content, i));
  });

  const out: ChatRequest = { model: upstreamModel, messages, max_tokens: req.max_tokens };
  if (req.temperature != null) out.temperature = req.temperature;
  if (req.top_p != null) out.top_p = req.top_p;
  if (req.stop_sequences?.length) out.stop = [...req.stop_sequences];
  if (req.stream) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  if (req.metadata?.user_id) out.user = req.metadata.user_id;
  const offered = (req.tools ?? []).filter((t) => {
    if (!isServerTool(t)) return true;
    if (!dropped.includes(t.name)) dropped.push(t.name);
    return false;
  });
  const c = req.tool_choice;
  if (c?.type === 'tool' && typeof c.name === 'string' && dropped.includes(c.name)) {
    throw new ValidationError(`tool_choice: forces the server tool '${c.name}', which is not available for this model (its channel is not Anthropic's)`, 'tool_choice');
  }
  if (offered.length) {
    out.tools = offered.map((t) => ({
      type: 'function' as const,
      function: { name: t.name, ...(typeof t.description === 'string' && t.description ? { description: t.description } : {}), parameters: t.input_schema ?? { type: 'object', properties: {} } },
    }));
  }
  const { choice, parallel } = toolChoice(req.tool_choice);
  if (choice !== undefined) out.tool_choice = choice;
  if (parallel === false && out.tools) out.parallel_tool_calls = false;
  if (!out.tools) delete out.tool_choice;
  return out;
}

/**
 * A tool Anthropic runs itself: a versioned `type` of web search, web fetch, code execution, tool search or MCP
 * (`web_search_20250305`, `code_execution_20250825`...). Client tools have no type (or `custom`); Anthropic-defined
 * client tools (bash, text editor, computer) run on the client and are passed on.
 */
export function isServerTool(t: Record<string, unknown>): boolean {
  return typeof t.type === 'string' && /^(web_search|web_fetch|code_execution|tool_search|mcp)/.test(t.type);
}

/** The validated body's tool_choice is any object with a `type`; the known types map, others are dropped. */
function toolChoice(c: AnthropicRequest['tool_choice']): { choice?: ChatToolChoice; parallel?: boolean } {
  if (!c) return {};
  const parallel = c.disable_parallel_tool_use === true ? false : undefined;
  switch (c.type) {
    case 'auto':
      return { choice: 'auto', parallel };
    case 'any':
      return { choice: 'required', parallel };
    case 'none':
      return { choice: 'none' };
    case 'tool':
      return typeof c.name === 'string' ? { choice: { type: 'function', function: { name: c.name } }, parallel } : {};
    default:
      return {};
  }
}

function assistantMessage(blocks: AnthropicBlock[]): ChatMessage {
  let text = '';
  const calls: ChatToolCall[] = [];
  for (const b of blocks) {
    if (b.type === 'text') text += String(b.text ?? '');
    else if (b.type === 'tool_use') {
      calls.push({ id: String(b.id), type: 'function', function: { name: String(b.name), arguments: JSON.stringify(b.input ?? {}) } });
    }
    // Other blocks (thinking, server tools) have no chat equivalent and are dropped.
  }
  const m: ChatMessage = { role: 'assistant', content: text || (calls.length ? null : '') };
  if (calls.length) m.tool_calls = calls;
  return m;
}

function userMessages(blocks: AnthropicBlock[], i: number): ChatMessage[] {
  const results: ChatMessage[] = [];
  const parts: ChatContentPart[] = [];
  blocks.forEach((b, j) => {
    const where = `messages.${i}.content.${j}`;
    if (b.type === 'tool_result') {
      results.push({ role: 'tool', tool_call_id: String(b.tool_use_id), content: toolResultContent(b.content, b.is_error === true, where) });
    } else {
      const p = part(b, where);
      if (p) parts.push(p);
    }
  });
  if (parts.length === 0) return results;
  const onlyText = parts.every((p) => p.type === 'text');
  const content = onlyText ? parts.map((p) => (p as { text: string }).text).join('\n') : parts;
  return [...results, { role: 'user', content }];
}

/** A user block as a chat content part; null for a block chat cannot carry (dropped). */
function part(b: AnthropicBlock, where: string): ChatContentPart | null {
  if (b.type === 'text') return { type: 'text', text: String(b.text ?? '') };
  if (b.type === 'image') {
    const src = b.source as { type?: string; media_type?: string; data?: string; url?: string } | undefined;
    if (src?.type === 'base64' && typeof src.data === 'string') {
      return { type: 'image_url', image_url: { url: `data:${src.media_type ?? 'image/png'};base64,${src.data}` } };
    }
    if (src?.type === 'url' && typeof src.url === 'string') return { type: 'image_url', image_url: { url: src.url } };
    throw new ValidationError(`${where}.source: must be a base64 or url image source`, where);
  }
  if (b.type === 'document' && (b.source as { type?: string; data?: unknown } | undefined)?.type === 'text') {
    return { type: 'text', text: String((b.source as { data?: unknown }).data ?? '') };
  }
  return null;
}

/** A tool result's text for a chat `tool` message (chat tool messages carry text only). */
function toolResultContent(content: unknown, isError: boolean, where: string): string {
  let text: string;
  if (content == null) text = '';
  else if (typeof content === 'string') text = content;
  else if (Array.isArray(content)) {
    text = content
      .map((b: AnthropicBlock) => {
        if (b.type === 'text') return String(b.text ?? '');
        if (b.type === 'image') return '[image]';
        return `[${String(b.type).slice(0, 40)}]`;
      })
      .join('\n');
  } else throw new ValidationError(`${where}.content: must be a string or a list of blocks`, where);
  return isError ? `Error: ${text}` : text;
}
