import { z } from 'zod';

/**
 * POST /v1/messages (the Anthropic Messages API): the one source of the request's shape (validation and the
 * OpenAPI document). `model`, `max_tokens` and `messages` are required, as the Messages API has them; objects are
 * loose and roles are any name, so content blocks (images, documents, tool_use / tool_result...), tool
 * definitions, roles (a `system` message inside `messages`, as Claude Code sends) and any unknown field pass
 * through to a native upstream unchanged. Errors answer 400 invalid_request_error naming the field.
 */

const block = z.looseObject({ type: z.string({ error: 'must be a string' }).min(1, 'is required') });
const textBlock = z.looseObject({ type: z.literal('text', { error: "must be 'text'" }), text: z.string({ error: 'must be a string' }) });

export const anthropicMessage = z.looseObject({
  role: z.string({ error: 'must be a string' }).min(1, 'is required').max(64, 'must be at most 64 characters'),
  content: z.union([z.string(), z.array(block)], { error: 'must be a string or an array of content blocks' }),
});

export const messagesBody = z.looseObject({
  model: z.string({ error: 'is required' }).min(1, 'is required'),
  max_tokens: z.number({ error: 'is required and must be an integer' }).int('must be an integer').min(1, 'must be at least 1'),
  messages: z.array(anthropicMessage, { error: 'must be an array of messages' }).min(1, 'must contain at least one message'),
  system: z.union([z.string(), z.array(textBlock)], { error: 'must be a string or an array of text blocks' }).optional(),
  temperature: z.number({ error: 'must be a number' }).min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1').optional(),
  top_p: z.number({ error: 'must be a number' }).min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1').optional(),
  top_k: z.number({ error: 'must be an integer' }).int('must be an integer').min(0, 'must be at least 0').optional(),
  stop_sequences: z.array(z.string({ error: 'must be a string' }), { error: 'must be an array of strings' }).optional(),
  stream: z.boolean({ error: 'must be a boolean' }).optional(),
  tools: z.array(z.looseObject({ name: z.string({ error: 'must be a string' }).min(1, 'is required') }), { error: 'must be an array of tools' }).optional(),
  tool_choice: z.looseObject({ type: z.string({ error: 'must be a string' }) }).optional(),
  metadata: z.looseObject({ user_id: z.string({ error: 'must be a string' }).nullish() }).optional(),
});

export type MessagesBody = z.infer<typeof messagesBody>;

/** POST /v1/messages/count_tokens: a Messages request without max_tokens (nothing is generated or billed). */
export const countTokensBody = messagesBody.omit({ max_tokens: true, stream: true });

export type CountTokensBody = z.infer<typeof countTokensBody>;

/** A version string for `X-Vendor-Version` / `anthropic-version`: a date like 2023-06-01 or a short token. */
export const VERSION_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
