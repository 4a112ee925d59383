import { z } from 'zod';

/**
 * POST /v1/responses (the OpenAI Responses API): the one source of the request's shape. `model` and `input` are
 * what the gateway needs; temperature and top_p keep the chat bounds of the contract. Everything else (items, tools
 * of any type, reasoning, text formats, unknown fields) is loose: passed as sent to a native channel, translated or
 * refused by name on the others (src/domain/translate/responses-to-chat.ts).
 */
const number = (min: number, max: number) =>
  z
    .number({ error: 'must be a number' })
    .min(min, `must be between ${min} and ${max}`)
    .max(max, `must be between ${min} and ${max}`);

export const responsesBody = z.looseObject({
  model: z.string({ error: 'must be a string' }).min(1, 'is required'),
  input: z.union([z.string(), z.array(z.looseObject({}), { error: 'must be an array of input items' })], {
    error: 'is required: a string or an array of input items',
  }),
  instructions: z.string({ error: 'must be a string' }).nullish(),
  temperature: number(0, 2).nullish(),
  top_p: number(0, 1).nullish(),
  max_output_tokens: z.number({ error: 'must be an integer' }).int('must be an integer').min(1, 'must be at least 1').nullish(),
  stream: z.boolean({ error: 'must be a boolean' }).nullish(),
  tools: z.array(z.looseObject({ type: z.string({ error: 'must be a string' }) }), { error: 'must be an array of tools' }).nullish(),
  previous_response_id: z.string({ error: 'must be a string' }).nullish(),
});

export type ResponsesBody = z.infer<typeof responsesBody>;

/** POST /v1/responses/input_tokens: a Responses request whose prompt is counted (nothing generated or billed). */
export const inputTokensBody = responsesBody.omit({ stream: true }).extend({
  input: responsesBody.shape.input.optional(),
});

export type InputTokensBody = z.infer<typeof inputTokensBody>;

/** The path of a stored Response's endpoints. */
export const storedResponseParams = z.object({ id: z.string().min(1).max(1024, 'is not a response id') });
