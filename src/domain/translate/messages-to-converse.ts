import { ValidationError } from '../errors';
import type {
  ConverseBlock,
  ConverseDocument,
  ConverseDocumentFormat,
  ConverseImage,
  ConverseImageFormat,
  ConverseMessage,
  ConverseRequest,
  ConverseSystemBlock,
  ConverseTool,
  ConverseToolChoice,
  ConverseToolResultContent,
} from './converse-types';
import type { AnthropicRequest } from './types';

/**
 * A Messages request as a Bedrock Converse request, for a model that Bedrock serves only through Converse (every
 * model but Anthropic's, which keep the Messages body through InvokeModel). The two are close kin:
 *
 * - `system` (and `system` turns inside `messages`, as Claude Code sends them) -> `system` text blocks;
 * - turns keep their order, consecutive turns of one role merged (Converse wants them alternating);
 * - text -> `text`; base64 images -> `image` bytes; base64 and plain-text documents -> `document` bytes named by
 *   their title; `tool_use` / `tool_result` -> `toolUse` / `toolResult`; `thinking` / `redacted_thinking` ->
 *   `reasoningContent`; `cache_control` on a block, a system block or a tool -> a `cachePoint` after it;
 * - `max_tokens`, `temperature`, `top_p`, `stop_sequences` -> `inferenceConfig`;
 * - client tools -> `toolConfig.tools`; `tool_choice` auto / any / tool -> `auto` / `any` / `tool` (`none` sends no
 *   tools unless the conversation already used them: Converse has no `none`);
 * - `thinking` -> `additionalModelRequestFields.thinking`, as Bedrock takes it for the models that reason.
 *
 * Converse takes images and documents only as bytes: one given by URL is refused (400). Server tools (web search,
 * code execution...) and blocks Converse has no member for are dropped and named in `dropped`; `top_k`, `metadata`
 * and `disable_parallel_tool_use` have no Converse field and are not sent.
 */
export function messagesToConverse(req: AnthropicRequest, dropped: string[]): ConverseRequest {
  const system: ConverseSystemBlock[] = [];
  systemBlocks(req.system, 'system', system);
  const turns: ConverseMessage[] = [];
  let documents = 0;
  const nextDocument = () => ++documents;
  req.messages.forEach((m, i) => {
    if (m.role === 'system') {
      systemBlocks(m.content, `messages[${i}].content`, system);
      return;
    }
    if (m.role !== 'user' && m.role !== 'assistant') {
      throw new ValidationError(`messages[${i}].role: '${m.role}' is not supported for this model`, `messages[${i}].role`);
    }
    const blocks = contentBlocks(m.content as unknown, `messages[${i}].content`, dropped, nextDocument);
    if (blocks.length === 0) return;
    const last = turns[turns.length - 1];
    if (last && last.role === m.role) last.content.push(...blocks);
    else turns.push({ role: m.role, content: blocks });
  });
  if (turns.length === 0) throw new ValidationError('messages: at least one user or assistant message with content is required', 'messages');

  const out: ConverseRequest = { messages: turns };
  if (system.length) out.system = system;
  const inference: NonNullable<ConverseRequest['inferenceConfig']> = { maxTokens: req.max_tokens };
  if (req.temperature != null) inference.temperature = req.temperature;
  if (req.top_p != null) inference.topP = req.top_p;
  if (req.stop_sequences?.length) inference.stopSequences = [...req.stop_sequences];
  out.inferenceConfig = inference;

  const tools = toolsOf(req.tools, dropped);
  const choice = req.tool_choice as { type?: string; name?: unknown } | undefined;
  const usedTools = turns.some((t) => t.content.some((b) => 'toolUse' in b || 'toolResult' in b));
  if (tools.length && (choice?.type !== 'none' || usedTools)) {
    out.toolConfig = { tools };
    const c = toolChoiceOf(choice);
    if (c) out.toolConfig.toolChoice = c;
  }
  const thinking = (req as { thinking?: unknown }).thinking;
  if (thinking !== null && typeof thinking === 'object') out.additionalModelRequestFields = { thinking };
  return out;
}

type Block = Record<string, unknown>;

const CACHE_POINT = { cachePoint: { type: 'default' as const } };

function isObject(v: unknown): v is Block {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function systemBlocks(content: unknown, where: string, out: ConverseSystemBlock[]): void {
  if (content == null) return;
  if (typeof content === 'string') {
    if (content) out.push({ text: content });
    return;
  }
  if (!Array.isArray(content)) throw new ValidationError(`${where}: must be a string or an array of text blocks`, where);
  for (const b of content as unknown[]) {
    if (!isObject(b) || b.type !== 'text' || typeof b.text !== 'string') continue;
    if (b.text) out.push({ text: b.text });
    if (b.cache_control) out.push(CACHE_POINT);
  }
}

function contentBlocks(content: unknown, where: string, dropped: string[], nextDocument: () => number): ConverseBlock[] {
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  const out: ConverseBlock[] = [];
  (content as unknown[]).forEach((b, j) => {
    if (!isObject(b)) return;
    const at = `${where}[${j}]`;
    const block = contentBlock(b, at, dropped, nextDocument);
    if (!block) return;
    out.push(block);
    if (b.cache_control) out.push(CACHE_POINT);
  });
  return out;
}

function contentBlock(b: Block, at: string, dropped: string[], nextDocument: () => number): ConverseBlock | null {
  switch (b.type) {
    case 'text':
      return typeof b.text === 'string' && b.text ? { text: b.text } : null;
    case 'image':
      return { image: imageOf(b.source, at) };
    case 'document':
      return { document: documentOf(b, at, nextDocument()) };
    case 'tool_use':
      return { toolUse: { toolUseId: String(b.id ?? ''), name: String(b.name ?? ''), input: isObject(b.input) ? b.input : {} } };
    case 'tool_result':
      return {
        toolResult: {
          toolUseId: String(b.tool_use_id ?? ''),
          content: toolResultContent(b.content, at, nextDocument),
          ...(b.is_error === true ? { status: 'error' as const } : {}),
        },
      };
    case 'thinking':
      return typeof b.thinking === 'string'
        ? { reasoningContent: { reasoningText: { text: b.thinking, ...(typeof b.signature === 'string' && b.signature ? { signature: b.signature } : {}) } } }
        : null;
    case 'redacted_thinking':
      return typeof b.data === 'string' ? { reasoningContent: { redactedContent: b.data } } : null;
    default:
      if (typeof b.type === 'string' && !dropped.includes(b.type)) dropped.push(b.type);
      return null;
  }
}

function toolResultContent(content: unknown, at: string, nextDocument: () => number): ConverseToolResultContent[] {
  if (content == null) return [];
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  if (!Array.isArray(content)) return [];
  const out: ConverseToolResultContent[] = [];
  content.forEach((b: unknown, k) => {
    if (!isObject(b)) return;
    if (b.type === 'text' && typeof b.text === 'string' && b.text) out.push({ text: b.text });
    else if (b.type === 'image') out.push({ image: imageOf(b.source, `${at}.content[${k}]`) });
    else if (b.type === 'document') out.push({ document: documentOf(b, `${at}.content[${k}]`, nextDocument()) });
  });
  return out;
}

const IMAGE_FORMATS: Record<string, ConverseImageFormat> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/jpg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };

function imageOf(source: unknown, at: string): ConverseImage {
  const s = isObject(source) ? source : {};
  if (s.type !== 'base64' || typeof s.data !== 'string') {
    throw new ValidationError(`${at}.source: this model takes images as bytes only: send the image as base64 (a data URI in chat)`, at);
  }
  const format = IMAGE_FORMATS[String(s.media_type).toLowerCase()];
  if (!format) throw new ValidationError(`${at}.source.media_type: must be image/png, image/jpeg, image/gif or image/webp`, at);
  return { format, source: { bytes: s.data } };
}

const DOCUMENT_FORMATS: Record<string, ConverseDocumentFormat> = {
  'application/pdf': 'pdf',
  'text/plain': 'txt',
  'text/csv': 'csv',
  'text/html': 'html',
  'text/markdown': 'md',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
};

function documentOf(b: Block, at: string, n: number): ConverseDocument {
  const s = isObject(b.source) ? b.source : {};
  let bytes: string;
  if (s.type === 'base64' && typeof s.data === 'string') bytes = s.data;
  else if (s.type === 'text' && typeof s.data === 'string') bytes = Buffer.from(s.data, 'utf8').toString('base64');
  else throw new ValidationError(`${at}.source: this model takes documents as bytes only: send the document as base64 or text`, at);
  const format = DOCUMENT_FORMATS[String(s.media_type ?? (s.type === 'text' ? 'text/plain' : '')).toLowerCase()];
  if (!format) throw new ValidationError(`${at}.source.media_type: ${String(s.media_type)} is not a document type this model reads`, at);
  return { format, name: documentName(b.title, n), source: { bytes } };
}

/** Converse allows letters, digits, single spaces, hyphens, parentheses and brackets in a name; each must differ. */
function documentName(title: unknown, n: number): string {
  const clean = typeof title === 'string' ? title.replace(/[^A-Za-z0-9\s\-()[\]]/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 180) : '';
  return clean ? `${clean} (${n})` : `document-${n}`;
}

function toolsOf(tools: unknown, dropped: string[]): ConverseTool[] {
  if (!Array.isArray(tools)) return [];
  const out: ConverseTool[] = [];
  for (const t of tools as unknown[]) {
    if (!isObject(t) || typeof t.name !== 'string') continue;
    // A server tool (a `type` other than `custom`, no input schema) runs at Anthropic, which Converse does not reach.
    if (t.input_schema === undefined || (typeof t.type === 'string' && t.type !== 'custom')) {
      const name = typeof t.type === 'string' ? t.type : t.name;
      if (!dropped.includes(name)) dropped.push(name);
      continue;
    }
    out.push({ toolSpec: { name: t.name, ...(typeof t.description === 'string' && t.description ? { description: t.description } : {}), inputSchema: { json: t.input_schema } } });
    if (t.cache_control) out.push(CACHE_POINT);
  }
  return out;
}

function toolChoiceOf(choice: { type?: string; name?: unknown } | undefined): ConverseToolChoice | undefined {
  if (choice?.type === 'any') return { any: {} };
  if (choice?.type === 'tool' && typeof choice.name === 'string') return { tool: { name: choice.name } };
  if (choice?.type === 'auto') return { auto: {} };
  return undefined;
}
