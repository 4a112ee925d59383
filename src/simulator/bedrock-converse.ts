import { isObject } from './validate';

/**
 * Bedrock's Converse API as the simulator speaks it (`/model/{modelId}/converse` and `/converse-stream`): the body is
 * checked as Converse checks it, then answered by the simulator's Messages handler (the model behaves the same on
 * every wire), and its answer turned into Converse's shapes: a JSON `output.message`, or an AWS event stream of
 * `messageStart`, `contentBlockStart`/`Delta`/`Stop`, `messageStop` and `metadata` (usage last, as Bedrock sends it).
 * A request with a `cachePoint` reads half of its prompt from the cache (`cacheReadInputTokens`), so tests can see
 * that dimension billed.
 */

const TOP_LEVEL = new Set(['messages', 'system', 'inferenceConfig', 'toolConfig', 'additionalModelRequestFields', 'additionalModelResponseFieldPaths', 'guardrailConfig', 'promptVariables', 'requestMetadata', 'performanceConfig']);
const IMAGE_FORMATS = new Set(['png', 'jpeg', 'gif', 'webp']);
const DOCUMENT_FORMATS = new Set(['pdf', 'csv', 'doc', 'docx', 'xls', 'xlsx', 'html', 'txt', 'md']);
const DOCUMENT_NAME = /^(?!.*\s\s)[A-Za-z0-9\s\-()[\]]{1,200}$/;
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export interface ConverseAsMessages {
  /** The Messages body that answers it. */
  body: Record<string, unknown>;
  /** Whether the request had a cachePoint. */
  cached: boolean;
}

/** The Messages body answering a Converse request, or the ValidationException message refusing it. */
export function converseToMessages(model: string, body: unknown, stream: boolean): ConverseAsMessages | string {
  if (!isObject(body)) return 'Malformed input request, please reformat your input and try again.';
  for (const key of Object.keys(body)) if (!TOP_LEVEL.has(key)) return `Malformed input request: extraneous key [${key}] is not permitted, please reformat your input and try again.`;
  let cached = false;
  const toolIds = new Set<string>();
  const usesTools = JSON.stringify(body.messages ?? []).includes('"toolUse"') || JSON.stringify(body.messages ?? []).includes('"toolResult"');
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
  const messages: Array<Record<string, unknown>> = [];
  for (const [i, m] of (body.messages as unknown[]).entries()) {
    if (!isObject(m) || (m.role !== 'user' && m.role !== 'assistant')) return `The value at messages.${i}.role is not valid.`;
    if (i === 0 && m.role !== 'user') return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
    if (i > 0 && (body.messages as Array<{ role?: unknown }>)[i - 1].role === m.role) return 'A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.';
    if (!Array.isArray(m.content) || m.content.length === 0) return `The content field in the Message object at messages.${i} is empty. Add a ContentBlock object to the content field and try again.`;
    const content: Array<Record<string, unknown>> = [];
    for (const [j, b] of (m.content as unknown[]).entries()) {
      const where = `messages.${i}.content.${j}`;
      if (!isObject(b) || Object.keys(b).length !== 1) return `The ContentBlock object at ${where} must set exactly one of its members.`;
      if ('cachePoint' in b) {
        if (!isObject(b.cachePoint) || b.cachePoint.type !== 'default') return `The cachePoint at ${where} is not valid.`;
        cached = true;
        continue;
      }
      const block = blockOf(b, where, toolIds);
      if (typeof block === 'string') return block;
      content.push(block);
    }
    messages.push({ role: m.role, content });
  }
  const system = systemOf(body.system);
  if (typeof system === 'string' && system.startsWith('!')) return system.slice(1);
  if (Array.isArray(body.system) && (body.system as unknown[]).some((s) => isObject(s) && 'cachePoint' in s)) cached = true;
  const inference = isObject(body.inferenceConfig) ? body.inferenceConfig : {};
  const maxTokens = inference.maxTokens;
  if (maxTokens !== undefined && !(Number.isInteger(maxTokens) && (maxTokens as number) >= 1)) return 'The value at inferenceConfig.maxTokens must be an integer greater than or equal to 1.';
  for (const k of ['temperature', 'topP'] as const) {
    const v = inference[k];
    if (v !== undefined && !(typeof v === 'number' && v >= 0 && v <= 1)) return `The value at inferenceConfig.${k} must be a number between 0 and 1.`;
  }
  const out: Record<string, unknown> = { model, max_tokens: maxTokens ?? 4096, messages };
  if (typeof system === 'string' && system) out.system = system;
  if (Array.isArray(inference.stopSequences)) out.stop_sequences = inference.stopSequences;
  if (stream) out.stream = true;
  if (usesTools && !isObject(body.toolConfig)) return 'The toolConfig field must be defined when using toolUse and toolResult content blocks.';
  if (isObject(body.toolConfig)) {
    const tools = toolsOf(body.toolConfig);
    if (typeof tools === 'string') return tools;
    if (tools.cached) cached = true;
    out.tools = tools.tools;
    if (tools.choice) out.tool_choice = tools.choice;
  }
  return { body: out, cached };
}

function blockOf(b: Record<string, unknown>, where: string, toolIds: Set<string>): Record<string, unknown> | string {
  if ('text' in b) {
    if (typeof b.text !== 'string' || !b.text.trim()) return `The text field in the ContentBlock object at ${where} is blank. Add text to the text field, and try again.`;
    return { type: 'text', text: b.text };
  }
  if ('image' in b) {
    const img = b.image as { format?: unknown; source?: { bytes?: unknown } } | undefined;
    if (!IMAGE_FORMATS.has(String(img?.format))) return `The format of the image at ${where} is not supported.`;
    if (typeof img?.source?.bytes !== 'string' || !BASE64.test(img.source.bytes)) return `The image at ${where} has no valid bytes.`;
    return { type: 'image', source: { type: 'base64', media_type: `image/${img.format}`, data: img.source.bytes } };
  }
  if ('document' in b) {
    const doc = b.document as { format?: unknown; name?: unknown; source?: { bytes?: unknown } } | undefined;
    if (!DOCUMENT_FORMATS.has(String(doc?.format))) return `The format of the document at ${where} is not supported.`;
    if (typeof doc?.name !== 'string' || !DOCUMENT_NAME.test(doc.name)) return `The document name at ${where} is not valid: it may hold letters, digits, single spaces, hyphens, parentheses and square brackets.`;
    if (typeof doc.source?.bytes !== 'string' || !BASE64.test(doc.source.bytes)) return `The document at ${where} has no valid bytes.`;
    const text = doc.format === 'pdf' ? `[document ${doc.name}]` : Buffer.from(doc.source.bytes, 'base64').toString('utf8');
    return { type: 'text', text };
  }
  if ('toolUse' in b) {
    const t = b.toolUse as { toolUseId?: unknown; name?: unknown; input?: unknown } | undefined;
    if (typeof t?.toolUseId !== 'string' || !t.toolUseId || typeof t.name !== 'string' || !isObject(t.input)) return `The toolUse at ${where} is not valid.`;
    toolIds.add(t.toolUseId);
    return { type: 'tool_use', id: t.toolUseId, name: t.name, input: t.input };
  }
  if ('toolResult' in b) {
    const r = b.toolResult as { toolUseId?: unknown; content?: unknown; status?: unknown } | undefined;
    if (typeof r?.toolUseId !== 'string' || !toolIds.has(r.toolUseId)) return `The toolResult at ${where} does not answer a toolUse of the conversation.`;
    if (!Array.isArray(r.content)) return `The toolResult at ${where} has no content.`;
    if (r.status !== undefined && r.status !== 'success' && r.status !== 'error') return `The toolResult status at ${where} is not valid.`;
    const text = (r.content as unknown[]).map((c) => (isObject(c) ? (typeof c.text === 'string' ? c.text : 'json' in c ? JSON.stringify(c.json) : '') : '')).join('\n');
    return { type: 'tool_result', tool_use_id: r.toolUseId, content: text };
  }
  if ('reasoningContent' in b) {
    const r = b.reasoningContent as { reasoningText?: { text?: unknown }; redactedContent?: unknown } | undefined;
    if (typeof r?.reasoningText?.text !== 'string' && typeof r?.redactedContent !== 'string') return `The reasoningContent at ${where} is not valid.`;
    return { type: 'text', text: ' ' };
  }
  return `The ContentBlock object at ${where} has an unknown member [${Object.keys(b)[0]}].`;
}

/** The system text; `!` and a message when it is not Converse's. */
function systemOf(system: unknown): string | undefined {
  if (system === undefined) return undefined;
  if (!Array.isArray(system)) return '!The value at system must be a list of SystemContentBlock objects.';
  const texts: string[] = [];
  for (const s of system as unknown[]) {
    if (isObject(s) && typeof s.text === 'string') texts.push(s.text);
    else if (!(isObject(s) && isObject(s.cachePoint))) return '!The value at system must be a list of SystemContentBlock objects.';
  }
  return texts.join('\n');
}

function toolsOf(config: Record<string, unknown>): { tools: unknown[]; choice?: unknown; cached: boolean } | string {
  if (!Array.isArray(config.tools) || config.tools.length === 0) return 'The value at toolConfig.tools must contain at least one tool.';
  const tools: unknown[] = [];
  let cached = false;
  for (const [i, t] of (config.tools as unknown[]).entries()) {
    if (isObject(t) && isObject(t.cachePoint)) {
      cached = true;
      continue;
    }
    const spec = isObject(t) ? (t.toolSpec as { name?: unknown; description?: unknown; inputSchema?: { json?: unknown } } | undefined) : undefined;
    if (typeof spec?.name !== 'string' || !TOOL_NAME.test(spec.name)) return `The value at toolConfig.tools.${i}.toolSpec.name failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+`;
    if (!isObject(spec.inputSchema?.json)) return `The value at toolConfig.tools.${i}.toolSpec.inputSchema.json must be a JSON object.`;
    tools.push({ name: spec.name, description: spec.description, input_schema: spec.inputSchema.json });
  }
  const c = config.toolChoice;
  if (c === undefined) return { tools, cached };
  if (!isObject(c) || Object.keys(c).length !== 1) return 'The value at toolConfig.toolChoice must set exactly one of auto, any and tool.';
  if ('auto' in c) return { tools, cached, choice: { type: 'auto' } };
  if ('any' in c) return { tools, cached, choice: { type: 'any' } };
  const name = (c.tool as { name?: unknown } | undefined)?.name;
  if (typeof name === 'string') return { tools, cached, choice: { type: 'tool', name } };
  return 'The value at toolConfig.toolChoice is not valid.';
}

interface MessagesUsage {
  input_tokens?: number;
  output_tokens?: number;
}

/** Converse's usage of a Messages usage: with a cachePoint, half the prompt read from the cache. */
export function converseUsage(u: MessagesUsage, cached: boolean) {
  const prompt = u.input_tokens ?? 0;
  const read = cached ? Math.floor(prompt / 2) : 0;
  const output = u.output_tokens ?? 0;
  return { inputTokens: prompt - read, outputTokens: output, totalTokens: prompt + output, cacheReadInputTokens: read, cacheWriteInputTokens: 0 };
}

const STOP: Record<string, string> = { end_turn: 'end_turn', tool_use: 'tool_use', max_tokens: 'max_tokens', stop_sequence: 'stop_sequence', refusal: 'content_filtered' };

/** A Messages answer as Converse answers. */
export function converseResponse(message: Record<string, unknown>, cached: boolean): Record<string, unknown> {
  const content = ((message.content as Array<Record<string, unknown>>) ?? []).map((b) =>
    b.type === 'tool_use' ? { toolUse: { toolUseId: b.id, name: b.name, input: b.input } } : { text: b.text },
  );
  return {
    output: { message: { role: 'assistant', content } },
    stopReason: STOP[String(message.stop_reason)] ?? 'end_turn',
    usage: converseUsage(message.usage as MessagesUsage, cached),
    metrics: { latencyMs: 1 },
  };
}

/** The Converse stream events of a Messages event stream's events, in order. */
export function converseStreamEvents(events: Array<Record<string, unknown>>, cached: boolean): Array<{ type: string; payload: unknown }> {
  const out: Array<{ type: string; payload: unknown }> = [];
  let input = 0;
  let output = 0;
  for (const e of events) {
    const index = e.index as number;
    switch (e.type) {
      case 'message_start':
        input = ((e.message as { usage?: MessagesUsage }).usage?.input_tokens) ?? 0;
        out.push({ type: 'messageStart', payload: { role: 'assistant' } });
        break;
      case 'content_block_start': {
        const b = e.content_block as Record<string, unknown>;
        if (b.type === 'tool_use') out.push({ type: 'contentBlockStart', payload: { contentBlockIndex: index, start: { toolUse: { toolUseId: b.id, name: b.name } } } });
        break;
      }
      case 'content_block_delta': {
        const d = e.delta as Record<string, unknown>;
        const delta = d.type === 'input_json_delta' ? { toolUse: { input: d.partial_json } } : { text: d.text };
        out.push({ type: 'contentBlockDelta', payload: { contentBlockIndex: index, delta } });
        break;
      }
      case 'content_block_stop':
        out.push({ type: 'contentBlockStop', payload: { contentBlockIndex: index } });
        break;
      case 'message_delta':
        output = ((e.usage as MessagesUsage | undefined)?.output_tokens) ?? 0;
        out.push({ type: 'messageStop', payload: { stopReason: STOP[String((e.delta as { stop_reason?: unknown }).stop_reason)] ?? 'end_turn' } });
        break;
      case 'message_stop':
        out.push({ type: 'metadata', payload: { usage: converseUsage({ input_tokens: input, output_tokens: output }, cached), metrics: { latencyMs: 1 } } });
        break;
      default:
        break;
    }
  }
  return out;
}
