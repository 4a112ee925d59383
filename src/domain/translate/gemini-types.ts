/**
 * The parts of the Gemini API's wire format (generateContent, its stream, embedContent) the translators read and
 * write. Loose on purpose, like ./types.ts: every object keeps what it does not declare. The API reads both
 * camelCase and snake_case field names; `geminiField` reads either.
 */

export interface GeminiFunctionCall {
  name: string;
  args?: Record<string, unknown>;
  id?: string;
  [k: string]: unknown;
}

export interface GeminiFunctionResponse {
  name: string;
  response?: unknown;
  id?: string;
  [k: string]: unknown;
}

export interface GeminiPart {
  text?: string;
  /** A thought summary (text) when true. */
  thought?: boolean;
  /** Gemini 3's opaque signature of the thinking behind this part; a tool round must send it back. */
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType?: string; fileUri: string };
  functionCall?: GeminiFunctionCall;
  functionResponse?: GeminiFunctionResponse;
  [k: string]: unknown;
}

export interface GeminiContent {
  role?: string;
  parts: GeminiPart[];
  [k: string]: unknown;
}

export interface GeminiFunctionDeclaration {
  name: string;
  description?: string;
  parameters?: unknown;
  parametersJsonSchema?: unknown;
  [k: string]: unknown;
}

export interface GeminiTool {
  functionDeclarations?: GeminiFunctionDeclaration[];
  [k: string]: unknown;
}

export interface GeminiRequest {
  contents: GeminiContent[];
  systemInstruction?: GeminiContent | string;
  tools?: GeminiTool[];
  toolConfig?: { functionCallingConfig?: { mode?: string; allowedFunctionNames?: string[] } };
  generationConfig?: Record<string, unknown>;
  safetySettings?: unknown[];
  [k: string]: unknown;
}

export interface GeminiUsageMetadata {
  promptTokenCount?: number;
  cachedContentTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
  totalTokenCount?: number;
  [k: string]: unknown;
}

export interface GeminiCandidate {
  content?: GeminiContent;
  finishReason?: string;
  index?: number;
  [k: string]: unknown;
}

export interface GeminiResponse {
  candidates?: GeminiCandidate[];
  usageMetadata?: GeminiUsageMetadata;
  modelVersion?: string;
  responseId?: string;
  [k: string]: unknown;
}

/** `obj.camelName ?? obj.snake_name`: the Gemini API accepts both spellings of every field. */
export function geminiField<T = unknown>(obj: unknown, camel: string): T | undefined {
  if (obj === null || typeof obj !== 'object') return undefined;
  const o = obj as Record<string, unknown>;
  if (o[camel] !== undefined) return o[camel] as T;
  const snake = camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return o[snake] as T | undefined;
}
