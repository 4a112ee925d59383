import type { EmbeddingsRequest, EmbeddingsResult, UpstreamAdapter } from '../../ports/upstream';
import { plainUsage } from '../../pricing/usage';
import type { UnaryEndpoint } from '../engine';
import { estimateEmbeddingTokens } from '../metering';

/** POST /v1/embeddings: channel types whose adapter embeds (`openai`); billed per input token. */
export const embeddingsEndpoint: UnaryEndpoint<EmbeddingsRequest, UpstreamAdapter, EmbeddingsResult, EmbeddingsResult['body']> = {
  name: 'embeddings',
  reason: 'embeddings',
  adapterOf: (adapters, channel) => (adapters.chat[channel.type]?.embeddings ? adapters.chat[channel.type] : undefined),
  hold: (req) => ({ promptTokens: estimateEmbeddingTokens(req.input), maxCompletionTokens: 0 }),
  call: (adapter, req, call) => adapter.embeddings!(req, call),
  metered: (r, estimate) => ({ usage: plainUsage(r.promptTokens ?? estimate.prompt, 0) }),
  body: (r) => r.body,
};
