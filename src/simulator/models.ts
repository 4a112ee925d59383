import { SIMULATOR_MODELS, simulatorModel } from './catalog';
import { anthropicError, openaiError } from './errors';
import { json } from './reply';
import type { Reply } from './types';

/** A fixed creation time for every model (2024-01-01T00:00:00Z): the lists are precomputed once. */
const CREATED = 1704067200;

const openaiEntry = (m: { id: string; owned_by: string }) => ({ id: m.id, object: 'model', created: CREATED, owned_by: m.owned_by });
const OPENAI_LIST = JSON.stringify({ object: 'list', data: SIMULATOR_MODELS.map(openaiEntry) });

const ANTHROPIC_MODELS = SIMULATOR_MODELS.filter((m) => m.owned_by === 'anthropic');
const anthropicEntry = (m: { id: string }) => ({ type: 'model', id: m.id, display_name: m.id, created_at: new Date(CREATED * 1000).toISOString() });
const ANTHROPIC_LIST = JSON.stringify({
  data: ANTHROPIC_MODELS.map(anthropicEntry),
  has_more: false,
  first_id: ANTHROPIC_MODELS[0]?.id ?? null,
  last_id: ANTHROPIC_MODELS[ANTHROPIC_MODELS.length - 1]?.id ?? null,
});

function precomputed(body: string): Reply {
  return { status: 200, headers: { 'content-type': 'application/json' }, pieces: [body], stream: false };
}

/** GET /v1/models: every simulator model (OpenAI list format). */
export function openaiModels(): Reply {
  return precomputed(OPENAI_LIST);
}

/** GET /v1/models/{id}. */
export function openaiModel(id: string): Reply {
  const m = simulatorModel(id);
  return m ? json(200, openaiEntry(m)) : openaiError(404, { message: `The model '${id}' does not exist`, param: 'model', code: 'model_not_found' });
}

/** GET /v1/models with `anthropic-version`: the Anthropic-owned simulator models (Anthropic list format). */
export function anthropicModels(): Reply {
  return precomputed(ANTHROPIC_LIST);
}

export function anthropicModel(id: string): Reply {
  const m = simulatorModel(id);
  return m && m.owned_by === 'anthropic' ? json(200, anthropicEntry(m)) : anthropicError(404, { message: `model: ${id}` });
}
