import type { FastifyPluginAsync } from 'fastify';
import type { JsonShapeLimits } from '../../../domain/json-shape';
import { declareFamily } from '../../errors/route-family';
import type { GatewayDeps } from '../../deps';
import { audioRoutes } from './audio';
import { billingRoutes } from './billing';
import { chatRoutes } from './chat';
import { embeddingsRoutes } from './embeddings';
import { geminiRoutes } from './gemini';
import { imagesRoutes } from './images';
import { messagesRoutes } from './messages';
import { moderationsRoutes } from './moderations';
import { modelsRoutes } from './models';
import { rerankRoutes } from './rerank';
import { responsesRoutes } from './responses';

/** `/v1/*` and the video prefixes: API-key routes answering in their family's format. */
export const inferenceRoutes: FastifyPluginAsync<{ deps: GatewayDeps; multipartLimitBytes?: number; responsesWebSocket?: boolean; webSocketMaxBytes?: number; jsonLimits?: JsonShapeLimits }> = async (
  app,
  { deps, multipartLimitBytes, responsesWebSocket, webSocketMaxBytes, jsonLimits },
) => {
  declareFamily(app, 'openai');
  await app.register(modelsRoutes, { deps });
  await app.register(billingRoutes, { deps });
  await app.register(chatRoutes, { deps });
  await app.register(embeddingsRoutes, { deps });
  await app.register(imagesRoutes, { deps, multipartLimitBytes });
  await app.register(responsesRoutes, { deps, webSocket: responsesWebSocket, webSocketMaxBytes, jsonLimits });
  await app.register(audioRoutes, { deps });
  await app.register(rerankRoutes, { deps });
  await app.register(moderationsRoutes, { deps });
  // These declare their own families: anthropic, gemini.
  await app.register(messagesRoutes, { deps });
  await app.register(geminiRoutes, { deps });
};
