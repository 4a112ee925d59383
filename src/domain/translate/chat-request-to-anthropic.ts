import { ValidationError } from '../errors';
import type {
  AnthropicBlock,
  AnthropicImageBlock,
  AnthropicMessage,
  AnthropicRequest,
  AnthropicTextBlock,
  AnthropicTool,
  AnthropicToolChoice,
  ChatContentPart,
  ChatMessage,
  ChatRequest,
} from './types';

/** max_tokens sent upstream when a chat request gives none (the Messages API requires one). */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 4096;

/**
 * A chat-completions request as an Anthropic Messages request, for a model on an `anthropic` channel.
 *
 * - system (and developer) messages -> `system`, joined by a blank line;
 * - user/assistant messages keep their order; consecutive messages of one role are merged (tool results
 *   must share the user turn that follows the assistant's tool calls);
 * - `image_url` parts -> image blocks: a base64 data URI -> `source: base64`, an http(s) URL -> `source: url`;
 * - assistant `tool_calls` (and the legacy `function_call`) -> `tool_use` blocks; `tool` (and `function`)
 *   messages -> `tool_result` blocks in a user turn;
 * - tools / tool_choice / parallel_tool_calls -> tools / tool_choice / disable_parallel_tool_use;
 * - stop -> stop_sequences; max_completion_tokens or max_tokens, else DEFAULT_ANTHROPIC_MAX_TOKENS;
 * - temperature is clamped to the Messages API's 0..1; user -> metadata.user_id.
 * `n` > 1 and content parts the Messages API has no block for are refused (ValidationError, 400).
 * - `thinking` (Anthropic's own object, which LiteLLM-style clients and the Gemini translation send) is passed on,
 *   and then temperature and top_p, which the Messages API refuses beside it, are not;
 * - `response_format` with a JSON schema becomes an instruction in `system` (the Messages API has no such field).
 * Penalties, logprobs and seed have no equivalent and are dropped.
 */
export function chatToAnthropicRequest(req: ChatRequest, upstreamModel: string): AnthropicRequest {
  if (req.n != null && req.n !== 1) {
    throw new ValidationError('n: this model answers one choice per request (n must be 1)', 'n');
  }
  const system: string[] = [];
  const turns: AnthropicMessage[] = [];
  const push = (role: 'user' | 'assistant', blocks: AnthropicBlock[]): void => {
    if (blocks.length === 0) return;
    const last = turns[turns.length - 1];
    if (last && last.role === role) (last.content as AnthropicBlock[]).push(...blocks);
    else turns.push({ role, content: blocks });
  };

  req.messages.forEach((m, i) => {
    switch (m.role) {
      case 'system':
      case 'developer': {
        const text = textOf(m.content, i);
        if (text) system.push(text);
        break;
      }
      case 'user':
        push('user', userBlocks(m, i));
        break;
      case 'assistant':
        push('assistant', assistantBlocks(m, i));
        break;
      case 'tool':
      case 'function':
        push('user', [toolResult(m, i)]);
        break;
      default:
        throw new ValidationError(`messages[${i}].role: '${m.role}' is not supported for this model`, `messages[${i}].role`);
    }
  });
  if (turns.length === 0) throw new ValidationError('messages: at least one user or assistant message is required', 'messages');

  const out: AnthropicRequest = {
    model: upstreamModel,
    max_tokens: req.max_completion_tokens ?? req.max_tokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
    messages: turns.map(collapse),
  };
  const format = jsonFormatInstruction(req.response_format);
  if (format) system.push(format);
  if (system.length) out.system = system.join('\n\n');
  const thinking = (req as { thinking?: unknown }).thinking;
  if (thinking !== null && typeof thinking === 'object') out.thinking = thinking;
  else {
    if (req.temperature != null) out.temperature = Math.min(1, Math.max(0, req.temperature));
    if (req.top_p != null) out.top_p = req.top_p;
  }
  const stop = req.stop == null ? [] : typeof req.stop === 'string' ? [req.stop] : req.stop;
  if (stop.length) out.stop_sequences = [...stop];
  if (req.stream) out.stream = true;
  if (typeof req.user === 'string' && req.user) out.metadata = { user_id: req.user };
  if (req.tools?.length) {
    out.tools = req.tools.map((t, i): AnthropicTool => {
      if (t.type !== 'function' || !t.function) throw new ValidationError(`tools[${i}].type: only function tools are supported for this model`, `tools[${i}].type`);
      return {
        name: t.function.name,
        ...(t.function.description ? { description: t.function.description } : {}),
        input_schema: t.function.parameters ?? { type: 'object', properties: {} },
      };
    });
  }
  const choice = toolChoice(req.tool_choice, req.parallel_tool_calls);
  if (choice && (out.tools || choice.type === 'none')) out.tool_choice = choice;
  return out;
}

/** What a chat `response_format` asks for, said in words the model reads (JSON only, to a schema when given). */
function jsonFormatInstruction(format: unknown): string | undefined {
  const f = format as { type?: unknown; json_schema?: { schema?: unknown } } | null | undefined;
  if (f?.type === 'json_object') return 'Respond with a single JSON object and nothing else.';
  if (f?.type === 'json_schema' && f.json_schema?.schema !== undefined) {
    return `Respond with a single JSON value that matches this JSON Schema, and nothing else:\n${JSON.stringify(f.json_schema.schema)}`;
  }
  return undefined;
}

function toolChoice(choice: ChatRequest['tool_choice'], parallel: boolean | null | undefined): AnthropicToolChoice | undefined {
  const noParallel = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice == null) return parallel === false ? { type: 'auto', ...noParallel } : undefined;
  if (choice === 'none') return { type: 'none' };
  if (choice === 'auto') return { type: 'auto', ...noParallel };
  if (choice === 'required') return { type: 'any', ...noParallel };
  const fn = typeof choice === 'object' ? (choice.function as { name?: unknown } | undefined) : undefined;
  if (typeof fn?.name === 'string' && fn.name) return { type: 'tool', name: fn.name, ...noParallel };
  return undefined;
}

/** A turn that is one text block is sent as a plain string (the shortest, most common form). */
function collapse(m: AnthropicMessage): AnthropicMessage {
  const blocks = m.content as AnthropicBlock[];
  if (blocks.length === 1 && blocks[0].type === 'text') return { role: m.role, content: (blocks[0] as AnthropicTextBlock).text };
  return m;
}

/** The text of a content that may only hold text (system messages, tool results given as parts). */
function textOf(content: ChatMessage['content'], i: number): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content
    .map((p, j) => {
      if (p.type !== 'text' || typeof p.text !== 'string') {
        throw new ValidationError(`messages[${i}].content[${j}]: only text parts are allowed here`, `messages[${i}].content`);
      }
      return p.text;
    })
    .join('\n');
}

function userBlocks(m: ChatMessage, i: number): AnthropicBlock[] {
  if (m.content == null) throw new ValidationError(`messages[${i}].content: is required`, `messages[${i}].content`);
  if (typeof m.content === 'string') return m.content ? [{ type: 'text', text: m.content }] : [];
  return m.content.map((p, j) => contentBlock(p, i, j)).filter((b): b is AnthropicBlock => b !== null);
}

function contentBlock(p: ChatContentPart, i: number, j: number): AnthropicBlock | null {
  const where = `messages[${i}].content[${j}]`;
  if (p.type === 'text') {
    const text = (p as { text?: unknown }).text;
    if (typeof text !== 'string') throw new ValidationError(`${where}.text: must be a string`, where);
    return text ? { type: 'text', text } : null;
  }
  if (p.type === 'image_url') {
    const image = (p as { image_url?: { url?: unknown } | string }).image_url;
    const url = typeof image === 'string' ? image : image?.url;
    if (typeof url !== 'string') throw new ValidationError(`${where}.image_url.url: must be a string`, where);
    return imageBlock(url, where);
  }
  throw new ValidationError(`${where}: content part type '${p.type}' is not supported for this model`, where);
}

const DATA_URI = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+);base64,(.*)$/is;

/** A data URI with base64 -> `source: base64`; an http(s) URL -> `source: url`; anything else is refused. */
export function imageBlock(url: string, where: string): AnthropicImageBlock {
  const data = DATA_URI.exec(url);
  if (data) return { type: 'image', source: { type: 'base64', media_type: data[1].toLowerCase(), data: data[2] } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw new ValidationError(`${where}: image_url must be an http(s) URL or a base64 data URI`, where);
}

function assistantBlocks(m: ChatMessage, i: number): AnthropicBlock[] {
  const blocks: AnthropicBlock[] = [];
  if (typeof m.content === 'string') {
    if (m.content) blocks.push({ type: 'text', text: m.content });
  } else if (Array.isArray(m.content)) {
    for (const [j, p] of m.content.entries()) {
      // An assistant's refusal part is text to the Messages API.
      const text = p.type === 'text' ? p.text : p.type === 'refusal' ? p.refusal : undefined;
      if (typeof text !== 'string') {
        throw new ValidationError(`messages[${i}].content[${j}]: only text parts are allowed in an assistant message`, `messages[${i}].content`);
      }
      if (text) blocks.push({ type: 'text', text });
    }
  }
  for (const [j, call] of (m.tool_calls ?? []).entries()) {
    blocks.push({ type: 'tool_use', id: call.id, name: call.function?.name, input: parseArguments(call.function?.arguments, `messages[${i}].tool_calls[${j}].function.arguments`) });
  }
  if (m.function_call) {
    blocks.push({ type: 'tool_use', id: legacyCallId(m.function_call.name), name: m.function_call.name, input: parseArguments(m.function_call.arguments, `messages[${i}].function_call.arguments`) });
  }
  return blocks;
}

/** The legacy function-call API has no call ids: the function's name pairs a call with its result. */
function legacyCallId(name: string): string {
  return `call_${name}`;
}

function parseArguments(args: unknown, where: string): unknown {
  if (args === undefined || args === null || args === '') return {};
  if (typeof args !== 'string') throw new ValidationError(`${where}: must be a JSON string`, where);
  try {
    const parsed: unknown = JSON.parse(args);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    return parsed;
  } catch {
    throw new ValidationError(`${where}: must be a JSON object`, where);
  }
}

function toolResult(m: ChatMessage, i: number): AnthropicBlock {
  const id = m.role === 'function' ? legacyCallId(m.name ?? '') : m.tool_call_id;
  if (typeof id !== 'string' || !id) throw new ValidationError(`messages[${i}].tool_call_id: is required`, `messages[${i}].tool_call_id`);
  if (m.content == null || typeof m.content === 'string') return { type: 'tool_result', tool_use_id: id, content: m.content ?? '' };
  const content = m.content
    .map((p, j) => contentBlock(p, i, j))
    .filter((b): b is AnthropicTextBlock | AnthropicImageBlock => b !== null && (b.type === 'text' || b.type === 'image'));
  return { type: 'tool_result', tool_use_id: id, content };
}
