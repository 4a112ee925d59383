import { videoFamilyOf, type VideoFamily } from '../domain/video/validation';
import { type GatewayConfig, type GatewayConfigFileInput, type ModelKind, type ModelPriceInput, validateGatewayConfig } from './schema';

/** A model the built-in config serves: its id, its provider (`owned_by`) and what it does. */
export interface BuiltInModel {
  id: string;
  owned_by: string;
  kind: ModelKind;
}

/**
 * Built-in list prices (USD) for every model the upstream simulator serves, so metering works on a fresh
 * install. Token prices are per 1M tokens; images and videos per unit (one image, one video of the model's
 * default length). Strings, so they are exact as written.
 */
export const SIMULATOR_PRICES: Readonly<Record<string, ModelPriceInput>> = {
  // Chat and reasoning
  'gpt-4o': { input_per_1m: '2.5', output_per_1m: '10', cache_read_per_1m: '1.25' },
  'gpt-4o-mini': { input_per_1m: '0.15', output_per_1m: '0.6', cache_read_per_1m: '0.075' },
  'gpt-4.1': { input_per_1m: '2', output_per_1m: '8', cache_read_per_1m: '0.5' },
  'gpt-4.1-mini': { input_per_1m: '0.4', output_per_1m: '1.6', cache_read_per_1m: '0.1' },
  o1: { input_per_1m: '15', output_per_1m: '60', cache_read_per_1m: '7.5', reasoning_per_1m: '60', reasoning: true },
  'o3-mini': { input_per_1m: '1.1', output_per_1m: '4.4', cache_read_per_1m: '0.55', reasoning_per_1m: '4.4', reasoning: true },
  'o4-mini': { input_per_1m: '1.1', output_per_1m: '4.4', cache_read_per_1m: '0.275', reasoning_per_1m: '4.4', reasoning: true },
  'claude-sonnet-4': { input_per_1m: '3', output_per_1m: '15', cache_read_per_1m: '0.3', cache_write_per_1m: '3.75', cache_write_1h_per_1m: '6', thinking: true },
  'claude-opus-4': { input_per_1m: '15', output_per_1m: '75', cache_read_per_1m: '1.5', cache_write_per_1m: '18.75', cache_write_1h_per_1m: '30', thinking: true },
  'claude-3-5-haiku': { input_per_1m: '0.8', output_per_1m: '4', cache_read_per_1m: '0.08', cache_write_per_1m: '1', cache_write_1h_per_1m: '1.6' },
  'gemini-2.5-pro': {
    input_per_1m: '1.25',
    output_per_1m: '10',
    cache_read_per_1m: '0.31',
    above_200k: { input_per_1m: '2.5', output_per_1m: '15', cache_read_per_1m: '0.625' },
    thinking: true,
  },
  'gemini-2.5-flash': { input_per_1m: '0.3', output_per_1m: '2.5', cache_read_per_1m: '0.075', audio_input_per_1m: '1', thinking: true },
  'gemini-3-pro-preview': { input_per_1m: '2', output_per_1m: '12', cache_read_per_1m: '0.2', reasoning_per_1m: '12', thinking: true },
  'gemini-3.5-flash': { input_per_1m: '0.3', output_per_1m: '2.5', cache_read_per_1m: '0.03', reasoning_per_1m: '2.5', thinking: true },
  'gemini-3.5-flash-lite': { input_per_1m: '0.1', output_per_1m: '0.4', cache_read_per_1m: '0.01', reasoning_per_1m: '0.4', thinking: true },
  'deepseek-chat': { input_per_1m: '0.27', output_per_1m: '1.1', cache_read_per_1m: '0.07' },
  'deepseek-reasoner': { input_per_1m: '0.55', output_per_1m: '2.19', cache_read_per_1m: '0.14', reasoning_per_1m: '2.19', reasoning: true },
  'qwen-max': { input_per_1m: '1.6', output_per_1m: '6.4' },
  'llama-3.3-70b-instruct': { input_per_1m: '0.59', output_per_1m: '0.79' },
  'mistral-large': { input_per_1m: '2', output_per_1m: '6' },
  // Embeddings
  'text-embedding-3-small': { input_per_1m: '0.02', kind: 'embedding' },
  'text-embedding-3-large': { input_per_1m: '0.13', kind: 'embedding' },
  'text-embedding-ada-002': { input_per_1m: '0.1', kind: 'embedding' },
  'gemini-embedding-001': { input_per_1m: '0.15', kind: 'embedding' },
  // Images, per image
  'dall-e-3': { per_unit: '0.04' },
  'gpt-image-1': { per_unit: '0.042' },
  'flux-1.1-pro': { per_unit: '0.04' },
  'flux-kontext-pro': { per_unit: '0.04' },
  'stable-diffusion-3.5-large': { per_unit: '0.065' },
  // Speech: per 1M characters, or by tokens where the upstream reports them (gpt-4o-mini-tts's SSE does)
  'tts-1': { input_characters_per_1m: '15' },
  'tts-1-hd': { input_characters_per_1m: '30' },
  'gpt-4o-mini-tts': { input_per_1m: '0.6', audio_output_per_1m: '12', input_characters_per_1m: '15' },
  // Transcription: per minute of audio, or by tokens where the upstream reports them
  'whisper-1': { per_minute: '0.006' },
  'gpt-4o-transcribe': { input_per_1m: '2.5', audio_input_per_1m: '6', output_per_1m: '10', per_minute: '0.006' },
  'gpt-4o-mini-transcribe': { input_per_1m: '1.25', audio_input_per_1m: '3', output_per_1m: '5', per_minute: '0.003' },
  // Rerank: per search unit (Cohere), or per token (Jina, BGE on an OpenAI-compatible server)
  'rerank-v3.5': { per_search_unit: '0.002' },
  'jina-reranker-v2-base-multilingual': { input_per_1m: '0.02' },
  'bge-reranker-v2-m3': { input_per_1m: '0.01' },
  // Moderation: free, as at OpenAI (a moderation model the config gives no price is free too)
  'omni-moderation-latest': { input_per_1m: '0' },
  'text-moderation-latest': { input_per_1m: '0' },
  // Video family A, per video (8 s)
  'video-3.1': { per_unit: '3.2', kind: 'video' },
  'video-3.1-fl': { per_unit: '3.2', kind: 'video' },
  'video-3.1-fast': { per_unit: '1.2', kind: 'video' },
  'video-3.1-fast-fl': { per_unit: '1.2', kind: 'video' },
  'video-3.1-landscape': { per_unit: '3.2', kind: 'video' },
  'video-3.1-landscape-fl': { per_unit: '3.2', kind: 'video' },
  'video-3.1-landscape-fast': { per_unit: '1.2', kind: 'video' },
  'video-3.1-landscape-fast-fl': { per_unit: '1.2', kind: 'video' },
  // Video family B, per video (5 s default)
  'vendorA-2.7-r2v': { per_unit: '0.75', kind: 'video' },
  'vendorA-2.6-r2v': { per_unit: '0.75', kind: 'video' },
  'vendorA-2.6-r2v-flash': { per_unit: '0.25', kind: 'video' },
  'vendorC-1.0-r2v': { per_unit: '0.5', kind: 'video' },
  // Video family C, per video
  video3: { per_unit: '1', kind: 'video' },
  'video3-fast': { per_unit: '0.5', kind: 'video' },
  'video3-pro': { per_unit: '2', kind: 'video' },
  'video3-pro-frames': { per_unit: '2', kind: 'video' },
};

/**
 * The config used when GATEWAY_CONFIG is unset: the upstream simulator at `${simulatorUrl}/v1` as channel
 * `simulator` (type openai) for every simulator model except the Anthropic and video ones; the Anthropic ones are
 * served by `simulator-anthropic` (type anthropic, native messages API) and each video family by
 * `simulator-video-a|b|c` (types video-a|b|c, rooted at the simulator), Cohere's and Jina's rerank models by
 * `simulator-cohere` (rooted at the simulator) and `simulator-jina` (at its /v1), Google's models by `simulator-gemini`
 * (type gemini, the Gemini API rooted at the simulator), all with built-in prices.
 */
export function builtInGatewayConfig(simulatorUrl: string, SIMULATOR_MODELS: readonly BuiltInModel[]): GatewayConfig {
  const baseUrl = `${simulatorUrl.replace(/\/+$/, '')}/v1`;
  const anthropic = SIMULATOR_MODELS.filter((m) => m.owned_by === 'anthropic');
  const video = (family: VideoFamily) => SIMULATOR_MODELS.filter((m) => m.kind === 'video' && videoFamilyOf(m.id) === family).map((m) => m.id);
  const byOwner = (owner: string) => SIMULATOR_MODELS.filter((m) => m.kind === 'rerank' && m.owned_by === owner).map((m) => m.id);
  const google = SIMULATOR_MODELS.filter((m) => m.owned_by === 'google');
  const others = SIMULATOR_MODELS.filter(
    (m) => m.owned_by !== 'anthropic' && m.owned_by !== 'google' && m.kind !== 'video' && !(m.kind === 'rerank' && (m.owned_by === 'cohere' || m.owned_by === 'jina')),
  );
  // The video families' upstream contracts are rooted at the simulator itself, not at its /v1.
  const root = simulatorUrl.replace(/\/+$/, '');
  const models: Record<string, ModelPriceInput> = {};
  for (const m of SIMULATOR_MODELS) {
    const price = SIMULATOR_PRICES[m.id];
    if (price) models[m.id] = { ...price, kind: m.kind, owned_by: m.owned_by };
  }
  const input: GatewayConfigFileInput = {
    channels: [
      { name: 'simulator', type: 'openai', base_url: baseUrl, key: 'simulator', models: others.map((m) => m.id), responses_api: true },
      { name: 'simulator-anthropic', type: 'anthropic', base_url: baseUrl, key: 'simulator', models: anthropic.map((m) => m.id) },
      { name: 'simulator-gemini', type: 'gemini', base_url: root, key: 'simulator', models: google.map((m) => m.id) },
      { name: 'simulator-cohere', type: 'cohere', base_url: root, key: 'simulator', models: byOwner('cohere') },
      { name: 'simulator-jina', type: 'jina', base_url: baseUrl, key: 'simulator', models: byOwner('jina') },
      { name: 'simulator-video-a', type: 'video-a', base_url: root, key: 'simulator', models: video('A') },
      { name: 'simulator-video-b', type: 'video-b', base_url: root, key: 'simulator', models: video('B') },
      { name: 'simulator-video-c', type: 'video-c', base_url: root, key: 'simulator', models: video('C') },
    ],
    models,
  };
  const result = validateGatewayConfig(input, 'built-in');
  if (!result.ok) throw new Error(`built-in gateway config is invalid:\n${result.problems.join('\n')}`);
  return result.config;
}
