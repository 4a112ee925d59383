import type { FastifyPluginAsync } from 'fastify';
import type { GatewayDeps } from '../../deps';
import { fileRoutes } from './files';
import { messageBatchRoutes } from './message-batches';
import { openAiBatchRoutes } from './openai-batches';

/** Batch inference: the Files API, the OpenAI Batch API and Anthropic Message Batches (each its own error family). */
export const batchRoutes: FastifyPluginAsync<{ deps: GatewayDeps }> = async (app, { deps }) => {
  await app.register(fileRoutes, { deps });
  await app.register(openAiBatchRoutes, { deps });
  await app.register(messageBatchRoutes, { deps });
};
