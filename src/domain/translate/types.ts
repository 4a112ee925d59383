import type { CountTokensBody, MessagesBody } from '../../schemas/messages';
/**
 * The parts of the two wire formats the translators read and write: OpenAI chat completions and the Anthropic
 * Messages API. Loose on purpose (an index signature on every object): unknown fields pass through untouched
 * where a format has them, and the translators only rely on what is declared here.
 */

// ---------------------------------------------------------------------------------------------------------
// OpenAI chat completions

export type { ChatContentPart, ChatMessage, ChatRequest } from '../ports/upstream';

/** A tool call as the translators write it (a chat message's `tool_calls` entry). */
export type ChatToolCall = {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
};

/** A function tool as the translators write it. */
export type ChatTool = {
  type: 'function';
  function: { name: string; description?: string; parameters?: unknown; strict?: boolean };
};

export type ChatToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [k: string]: unknown;
}

export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[]; reasoning_content?: string; [k: string]: unknown };
    logprobs?: unknown;
    finish_reason: ChatFinishReason | null;
  }>;
  usage?: ChatUsage;
  [k: string]: unknown;
}

export interface ChatChunkToolCall {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

export interface ChatChunkDelta {
  role?: 'assistant';
  content?: string | null;
  reasoning_content?: string;
  tool_calls?: ChatChunkToolCall[];
  [k: string]: unknown;
}

export interface ChatChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{ index: number; delta: ChatChunkDelta; logprobs?: unknown; finish_reason: ChatFinishReason | null }>;
  usage?: ChatUsage | null;
  [k: string]: unknown;
}

// ---------------------------------------------------------------------------------------------------------
// Anthropic Messages API

export type AnthropicImageSource =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'url'; url: string };

export interface AnthropicTextBlock {
  type: 'text';
  text: string;
  [k: string]: unknown;
}

export interface AnthropicImageBlock {
  type: 'image';
  source: AnthropicImageSource;
  [k: string]: unknown;
}

export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
  [k: string]: unknown;
}

export interface AnthropicToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | Array<AnthropicTextBlock | AnthropicImageBlock>;
  is_error?: boolean;
  [k: string]: unknown;
}

export interface AnthropicThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature?: string;
  [k: string]: unknown;
}

export type AnthropicBlock =
  | AnthropicTextBlock
  | AnthropicImageBlock
  | AnthropicToolUseBlock
  | AnthropicToolResultBlock
  | AnthropicThinkingBlock
  | { type: string; [k: string]: unknown };

export interface AnthropicMessage {
  /** user and assistant; `system` (Claude Code sends one inside messages) and other roles pass through natively. */
  role: string;
  content: string | AnthropicBlock[];
  [k: string]: unknown;
}

export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: unknown;
  [k: string]: unknown;
}

export type AnthropicToolChoice =
  | { type: 'auto'; disable_parallel_tool_use?: boolean }
  | { type: 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

/** POST /v1/messages as the route validated it (src/schemas/messages.ts is the one source of its shape). */
export type AnthropicRequest = MessagesBody;

/** POST /v1/messages/count_tokens as the route validated it: a Messages request without max_tokens. */
export type AnthropicCountRequest = CountTokensBody;

export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'pause_turn' | 'refusal';

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  [k: string]: unknown;
}

export interface AnthropicResponse {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: AnthropicBlock[];
  stop_reason: AnthropicStopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
  [k: string]: unknown;
}

export type AnthropicStreamEvent =
  | { type: 'message_start'; message: AnthropicResponse }
  | { type: 'content_block_start'; index: number; content_block: AnthropicBlock }
  | {
      type: 'content_block_delta';
      index: number;
      delta:
        | { type: 'text_delta'; text: string }
        | { type: 'input_json_delta'; partial_json: string }
        | { type: 'thinking_delta'; thinking: string }
        | { type: 'signature_delta'; signature: string }
        | { type: string; [k: string]: unknown };
    }
  | { type: 'content_block_stop'; index: number }
  | {
      type: 'message_delta';
      delta: { stop_reason: AnthropicStopReason | null; stop_sequence: string | null; [k: string]: unknown };
      usage: Partial<AnthropicUsage>;
    }
  | { type: 'message_stop' }
  | { type: 'ping' }
  | { type: 'error'; error: { type: string; message: string } };
