/** What a model does; decides which endpoint family serves it. */
export type ModelKind = 'chat' | 'embedding' | 'image' | 'video' | 'speech' | 'transcription' | 'rerank' | 'moderation';

export interface SimulatorModel {
  id: string;
  /** Provider, as `owned_by` in /v1/models. */
  owned_by: string;
  kind: ModelKind;
}

/**
 * The models the built-in upstream simulator answers for. Without GATEWAY_CONFIG the built-in config
 * (src/gateway-config/builtin.ts) serves them all through the simulator, with list prices, so every endpoint
 * works on a fresh install.
 */
export const SIMULATOR_MODELS: readonly SimulatorModel[] = [
  // Chat and reasoning
  { id: 'gpt-4o', owned_by: 'openai', kind: 'chat' },
  { id: 'gpt-4o-mini', owned_by: 'openai', kind: 'chat' },
  { id: 'gpt-4.1', owned_by: 'openai', kind: 'chat' },
  { id: 'gpt-4.1-mini', owned_by: 'openai', kind: 'chat' },
  { id: 'o1', owned_by: 'openai', kind: 'chat' },
  { id: 'o3-mini', owned_by: 'openai', kind: 'chat' },
  { id: 'o4-mini', owned_by: 'openai', kind: 'chat' },
  { id: 'claude-sonnet-4', owned_by: 'anthropic', kind: 'chat' },
  { id: 'claude-opus-4', owned_by: 'anthropic', kind: 'chat' },
  { id: 'claude-3-5-haiku', owned_by: 'anthropic', kind: 'chat' },
  { id: 'gemini-2.5-pro', owned_by: 'google', kind: 'chat' },
  { id: 'gemini-2.5-flash', owned_by: 'google', kind: 'chat' },
  { id: 'gemini-3-pro-preview', owned_by: 'google', kind: 'chat' },
  { id: 'gemini-3.5-flash', owned_by: 'google', kind: 'chat' },
  { id: 'gemini-3.5-flash-lite', owned_by: 'google', kind: 'chat' },
  { id: 'deepseek-chat', owned_by: 'deepseek', kind: 'chat' },
  { id: 'deepseek-reasoner', owned_by: 'deepseek', kind: 'chat' },
  { id: 'qwen-max', owned_by: 'qwen', kind: 'chat' },
  { id: 'llama-3.3-70b-instruct', owned_by: 'meta', kind: 'chat' },
  { id: 'mistral-large', owned_by: 'mistral', kind: 'chat' },
  // Embeddings
  { id: 'text-embedding-3-small', owned_by: 'openai', kind: 'embedding' },
  { id: 'text-embedding-3-large', owned_by: 'openai', kind: 'embedding' },
  { id: 'text-embedding-ada-002', owned_by: 'openai', kind: 'embedding' },
  { id: 'gemini-embedding-001', owned_by: 'google', kind: 'embedding' },
  // Images
  { id: 'dall-e-3', owned_by: 'openai', kind: 'image' },
  { id: 'gpt-image-1', owned_by: 'openai', kind: 'image' },
  { id: 'flux-1.1-pro', owned_by: 'black-forest-labs', kind: 'image' },
  { id: 'flux-kontext-pro', owned_by: 'black-forest-labs', kind: 'image' },
  { id: 'stable-diffusion-3.5-large', owned_by: 'stability', kind: 'image' },
  // Speech (/v1/audio/speech); the gpt-4o one can also stream server-sent events
  { id: 'tts-1', owned_by: 'openai', kind: 'speech' },
  { id: 'tts-1-hd', owned_by: 'openai', kind: 'speech' },
  { id: 'gpt-4o-mini-tts', owned_by: 'openai', kind: 'speech' },
  // Transcription (/v1/audio/transcriptions; translations: whisper-1 only)
  { id: 'whisper-1', owned_by: 'openai', kind: 'transcription' },
  { id: 'gpt-4o-transcribe', owned_by: 'openai', kind: 'transcription' },
  { id: 'gpt-4o-mini-transcribe', owned_by: 'openai', kind: 'transcription' },
  // Rerank (/v2/rerank Cohere shape, /v1/rerank Jina / vLLM shape)
  { id: 'rerank-v3.5', owned_by: 'cohere', kind: 'rerank' },
  { id: 'jina-reranker-v2-base-multilingual', owned_by: 'jina', kind: 'rerank' },
  { id: 'bge-reranker-v2-m3', owned_by: 'baai', kind: 'rerank' },
  // Moderation (/v1/moderations)
  { id: 'omni-moderation-latest', owned_by: 'openai', kind: 'moderation' },
  { id: 'text-moderation-latest', owned_by: 'openai', kind: 'moderation' },
  // Video, family A (/v1/videos)
  { id: 'video-3.1', owned_by: 'video', kind: 'video' },
  { id: 'video-3.1-fl', owned_by: 'video', kind: 'video' },
  { id: 'video-3.1-fast', owned_by: 'video', kind: 'video' },
  { id: 'video-3.1-fast-fl', owned_by: 'video', kind: 'video' },
  { id: 'video-3.1-landscape', owned_by: 'video', kind: 'video' },
  { id: 'video-3.1-landscape-fl', owned_by: 'video', kind: 'video' },
  { id: 'video-3.1-landscape-fast', owned_by: 'video', kind: 'video' },
  { id: 'video-3.1-landscape-fast-fl', owned_by: 'video', kind: 'video' },
  // Video, family B (/vendorA/... reference-to-video)
  { id: 'vendorA-2.7-r2v', owned_by: 'vendorA', kind: 'video' },
  { id: 'vendorA-2.6-r2v', owned_by: 'vendorA', kind: 'video' },
  { id: 'vendorA-2.6-r2v-flash', owned_by: 'vendorA', kind: 'video' },
  { id: 'vendorC-1.0-r2v', owned_by: 'vendorC', kind: 'video' },
  // Video, family C (/vendorB/...)
  { id: 'video3', owned_by: 'vendorB', kind: 'video' },
  { id: 'video3-fast', owned_by: 'vendorB', kind: 'video' },
  { id: 'video3-pro', owned_by: 'vendorB', kind: 'video' },
  { id: 'video3-pro-frames', owned_by: 'vendorB', kind: 'video' },
];

const BY_ID = new Map(SIMULATOR_MODELS.map((m) => [m.id, m]));

export function simulatorModel(id: string): SimulatorModel | undefined {
  return BY_ID.get(id);
}
