/**
 * The parts of AWS Bedrock's Converse API (`POST /model/{modelId}/converse` and `/converse-stream`) the translators
 * read and write, as its REST form carries them: blobs (image and document bytes, redacted reasoning) are base64
 * strings in the JSON.
 */

export type ConverseImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';
export type ConverseDocumentFormat = 'pdf' | 'csv' | 'doc' | 'docx' | 'xls' | 'xlsx' | 'html' | 'txt' | 'md';

export interface ConverseImage {
  format: ConverseImageFormat;
  source: { bytes: string };
}

export interface ConverseDocument {
  format: ConverseDocumentFormat;
  name: string;
  source: { bytes: string };
}

export type ConverseToolResultContent = { text: string } | { json: unknown } | { image: ConverseImage } | { document: ConverseDocument };

export type ConverseBlock =
  | { text: string }
  | { image: ConverseImage }
  | { document: ConverseDocument }
  | { toolUse: { toolUseId: string; name: string; input: unknown } }
  | { toolResult: { toolUseId: string; content: ConverseToolResultContent[]; status?: 'success' | 'error' } }
  | { reasoningContent: { reasoningText: { text: string; signature?: string } } | { redactedContent: string } }
  | { cachePoint: { type: 'default' } };

export interface ConverseMessage {
  role: 'user' | 'assistant';
  content: ConverseBlock[];
}

export type ConverseSystemBlock = { text: string } | { cachePoint: { type: 'default' } };

export type ConverseTool = { toolSpec: { name: string; description?: string; inputSchema: { json: unknown } } } | { cachePoint: { type: 'default' } };

export type ConverseToolChoice = { auto: Record<string, never> } | { any: Record<string, never> } | { tool: { name: string } };

export interface ConverseRequest {
  messages: ConverseMessage[];
  system?: ConverseSystemBlock[];
  inferenceConfig?: { maxTokens?: number; temperature?: number; topP?: number; stopSequences?: string[] };
  toolConfig?: { tools: ConverseTool[]; toolChoice?: ConverseToolChoice };
  additionalModelRequestFields?: Record<string, unknown>;
}

export type ConverseStopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'guardrail_intervened' | 'content_filtered' | string;

export interface ConverseUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

export interface ConverseResponse {
  output?: { message?: { role?: string; content?: unknown[] } };
  stopReason?: ConverseStopReason;
  usage?: ConverseUsage;
  additionalModelResponseFields?: Record<string, unknown>;
  [k: string]: unknown;
}

/** One ConverseStream event: its `:event-type` and its JSON payload. */
export type ConverseStreamEvent =
  | { type: 'messageStart'; payload: { role?: string } }
  | { type: 'contentBlockStart'; payload: { contentBlockIndex?: number; start?: { toolUse?: { toolUseId?: string; name?: string } } } }
  | {
      type: 'contentBlockDelta';
      payload: {
        contentBlockIndex?: number;
        delta?: { text?: string; toolUse?: { input?: string }; reasoningContent?: { text?: string; signature?: string; redactedContent?: string } };
      };
    }
  | { type: 'contentBlockStop'; payload: { contentBlockIndex?: number } }
  | { type: 'messageStop'; payload: { stopReason?: ConverseStopReason; additionalModelResponseFields?: Record<string, unknown> } }
  | { type: 'metadata'; payload: { usage?: ConverseUsage; metrics?: unknown } }
  | { type: string; payload: Record<string, unknown> };
