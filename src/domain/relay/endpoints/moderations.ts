import type { ModelPrice } from '../../../gateway-config/schema';
import type { ModerationsRequest, ModerationsResult, UpstreamAdapter } from '../../ports/upstream';
import { ZERO } from '../../pricing/decimal';
import { usageFromOpenAi } from '../../pricing/usage-readers';
import { localUsage, type UnaryEndpoint } from '../engine';
import { estimateEmbeddingTokens } from '../metering';

/** The price of a moderation model the config gives none: free (a ledger row of 0 credits), not refused. */
const FREE: ModelPrice = Object.freeze({ input_per_1m: ZERO, output_per_1m: ZERO, kind: 'moderation', reasoning: false, thinking: false });

/** The text of a moderation input (strings, or the text parts of multimodal input). */
function inputText(input: ModerationsRequest['input']): string[] {
  if (typeof input === 'string') return [input];
  return input.map((p) => (typeof p === 'string' ? p : typeof p.text === 'string' ? p.text : ''));
}

/**
 * POST /v1/moderations: relayed as is; billed per input token when priced: the tokens the upstream reports in `usage`
 * (some do), else a local count (OpenAI reports none).
 */
export const moderationsEndpoint: UnaryEndpoint<ModerationsRequest, UpstreamAdapter, ModerationsResult, ModerationsResult['body']> = {
  name: 'moderations',
  reason: 'moderations',
  unpriced: FREE,
  adapterOf: (adapters, channel) => (adapters.chat[channel.type]?.moderations ? adapters.chat[channel.type] : undefined),
  hold: (req) => ({ promptTokens: estimateEmbeddingTokens(inputText(req.input)), maxCompletionTokens: 0 }),
  call: (adapter, req, call) => adapter.moderations!(req, call),
  metered: (r, estimate) => {
    const reported = usageFromOpenAi((r.body as { usage?: unknown }).usage);
    return reported ? { usage: reported } : localUsage(estimate.prompt, 0);
  },
  body: (r) => r.body,
};
