import { z } from 'zod';

/**
 * POST /v1/chat/completions: the one source of the request's shape (validation and the OpenAPI document).
 * Every bound of the spec is checked here, with a 400 naming the parameter; objects are loose, so tools,
 * tool_choice, response_format, tool_calls / tool_call_id and any unknown field pass through unchanged.
 * `null` on an optional parameter means "not given", as the OpenAI API reads it.
 */

const number = (min: number, max: number) =>
  z
    .number({ error: 'must be a number' })
    .min(min, `must be between ${min} and ${max}`)
    .max(max, `must be between ${min} and ${max}`);
const atLeastOne = z.number({ error: 'must be an integer' }).int('must be an integer').min(1, 'must be at least 1');

export const CHAT_ROLES = ['system', 'user', 'assistant', 'tool', 'function', 'developer'] as const;

const HTTPS_URL = /^https:\/\/[^\s/?#]+[^\s]*$/i;
const DATA_URI = /^data:image\/[a-z0-9.+-]+;base64,[A-Za-z0-9+/]+={0,2}$/i;

/** An image reference in a chat message: an https URL, or a base64 data URI of an image. */
export function isImageReference(url: string): boolean {
  return HTTPS_URL.test(url) || (url.length > 22 && DATA_URI.test(url));
}

const textPart = z.looseObject({ type: z.literal('text'), text: z.string({ error: 'must be a string' }) });
const imagePart = z.looseObject({
  type: z.literal('image_url'),
  image_url: z.looseObject({
    url: z.string({ error: 'must be a string' }).refine(isImageReference, 'must be an https URL or a base64 data URI (data:image/...;base64,...)'),
    detail: z.string({ error: 'must be a string' }).optional(),
  }),
});
/** Other part types (audio, files...) are the upstream's business: passed through. */
const otherPart = z.looseObject({ type: z.string({ error: 'must be a string' }) });

/** A content part: text, an image, or any other type (checked by its `type`, for a message naming the right field). */
export type ChatContentPart = z.infer<typeof textPart> | z.infer<typeof imagePart> | z.infer<typeof otherPart>;

const contentPart = z.custom<ChatContentPart>().superRefine((part, ctx) => {
  const type = (part as { type?: unknown } | null)?.type;
  const schema = type === 'text' ? textPart : type === 'image_url' ? imagePart : otherPart;
  const r = schema.safeParse(part);
  if (!r.success) for (const issue of r.error.issues) ctx.addIssue({ ...issue, code: 'custom', message: issue.message, path: issue.path } as never);
});

const str = z.string({ error: 'must be a string' });

/** An assistant's tool call: `function` calls carry a name and JSON arguments; other call types pass through. */
const toolCall = z.looseObject({
  id: str.optional(),
  type: str.optional(),
  function: z.looseObject({ name: str.optional(), arguments: str.optional() }).optional(),
});

/** A tool definition: `function` tools name themselves in `function`; other tool types pass through. */
const tool = z.looseObject({
  type: str,
  function: z.looseObject({ name: str, description: str.optional(), parameters: z.unknown().optional() }).optional(),
});

export const chatMessage = z
  .looseObject({
    role: z.enum(CHAT_ROLES, { error: `must be one of ${CHAT_ROLES.join(', ')}` }),
    content: z.union([z.string(), z.array(contentPart).min(1, 'must not be empty')], { error: 'must be a string or an array of content parts' }).nullish(),
    name: z.string({ error: 'must be a string' }).optional(),
    tool_calls: z.array(toolCall, { error: 'must be an array' }).optional(),
    tool_call_id: z.string({ error: 'must be a string' }).optional(),
    function_call: z.looseObject({ name: z.string({ error: 'must be a string' }), arguments: z.string({ error: 'must be a string' }).optional() }).optional(),
  })
  .superRefine((m, ctx) => {
    // Content may be null only on an assistant turn that calls tools or a function.
    if (m.content == null && !(m.role === 'assistant' && (m.tool_calls !== undefined || m.function_call !== undefined))) {
      ctx.addIssue({ code: 'custom', message: 'is required', path: ['content'] });
    }
  });

export const chatCompletionBody = z.looseObject({
  model: z.string({ error: 'must be a string' }).min(1, 'is required'),
  messages: z.array(chatMessage, { error: 'must be an array of messages' }).min(1, 'must contain at least one message'),
  temperature: number(0, 2).nullish(),
  top_p: number(0, 1).nullish(),
  presence_penalty: number(-2, 2).nullish(),
  frequency_penalty: number(-2, 2).nullish(),
  max_tokens: atLeastOne.nullish(),
  max_completion_tokens: atLeastOne.nullish(),
  n: atLeastOne.max(128, 'must be at most 128').nullish(),
  stream: z.boolean({ error: 'must be a boolean' }).nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean({ error: 'must be a boolean' }).optional() }).nullish(),
  stop: z
    .union([z.string(), z.array(z.string({ error: 'must be a string' })).max(4, 'must have at most 4 sequences')], {
      error: 'must be a string or an array of at most 4 strings',
    })
    .nullish(),
  user: z.string({ error: 'must be a string' }).nullish(),
  tools: z.array(tool, { error: 'must be an array of tools' }).nullish(),
  tool_choice: z.union([str, z.looseObject({ type: str })], { error: "must be 'none', 'auto', 'required' or an object naming a tool" }).nullish(),
  parallel_tool_calls: z.boolean({ error: 'must be a boolean' }).nullish(),
});

export type ChatCompletionBody = z.infer<typeof chatCompletionBody>;
