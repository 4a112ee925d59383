import { ValidationError } from '../../src/domain/errors';
import { NO_TOKENS, type TokenUsage } from '../../src/domain/pricing/usage';
import { type ChatTranslation, ChatToResponsesStream, chatToResponse, type ResponsesEvent, responsesToChatRequest } from '../../src/domain/translate/responses-to-chat';
import type { ChatChunk, ChatCompletion } from '../../src/domain/translate/types';

const tokens = (u: Partial<TokenUsage>): TokenUsage => ({ ...NO_TOKENS, ...u });
type Origins = ChatTranslation['tools'];

const WEATHER_PARAMS = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
/** The custom tools' one-string schema, as chat sees it. */
const CUSTOM_PARAMS = {
  type: 'object',
  properties: { input: { type: 'string', description: 'The whole input of the tool, as free-form text' } },
  required: ['input'],
  additionalProperties: false,
};

describe('Responses request -> chat request', () => {
  it('instructions become the system message, a string input one user turn; settings map to chat names', () => {
    const { chat, tools } = responsesToChatRequest(
      {
        model: 'client-model',
        instructions: 'Be brief.',
        input: 'Hi',
        max_output_tokens: 50,
        temperature: 0.2,
        top_p: 0.9,
        user: 'u-1',
        reasoning: { effort: 'low', summary: 'auto' },
        stream: true,
        store: true,
        metadata: { a: '1' },
        truncation: 'auto',
      },
      'up-model',
    );
    // max_output_tokens -> max_completion_tokens (never max_tokens, refused by reasoning models on chat);
    // store, metadata, truncation have no chat equivalent and are left out.
    expect(chat).toEqual({
      model: 'up-model',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      max_completion_tokens: 50,
      temperature: 0.2,
      top_p: 0.9,
      user: 'u-1',
      reasoning_effort: 'low',
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(tools.size).toBe(0);
  });

  it('empty instructions add no system message; stream: false adds no stream fields', () => {
    expect(responsesToChatRequest({ instructions: '', input: 'Hi', stream: false }, 'm').chat).toEqual({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] });
  });

  it('an item list: roles, content parts, tool calls grouped on one assistant turn, tool outputs as tool messages', () => {
    const { chat } = responsesToChatRequest(
      {
        input: [
          { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'No emoji.' }, { type: 'input_text', text: 'Metric units.' }] },
          { role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris and Rome?' }] }, // no type: a message
          { type: 'reasoning', id: 'rs_1', summary: [] }, // dropped
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
          { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call', call_id: 'call_2', name: 'get_weather', arguments: '' },
          { type: 'function_call_output', call_id: 'call_1', output: '18C' },
          { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: '24C' }] },
          { type: 'item_reference', id: 'msg_9' }, // dropped
          { type: 'web_search_call', id: 'ws_1', status: 'completed' }, // dropped
          {
            type: 'message',
            role: 'user',
            content: [
              { type: 'input_text', text: 'And this?' },
              { type: 'input_image', image_url: 'https://example.com/cat.jpg', detail: 'low' },
              { type: 'input_image', file_id: 'file_1' }, // no URL: dropped
            ],
          },
          'not an item',
        ],
      },
      'm',
    );
    expect(chat.messages).toEqual([
      { role: 'system', content: 'No emoji.\nMetric units.' },
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          // Empty arguments become an empty JSON object.
          { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '18C' },
      { role: 'tool', tool_call_id: 'call_2', content: '24C' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'And this?' },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'low' } },
        ],
      },
    ]);
  });

  it('a tool call with no assistant text before it opens an assistant turn of null content; a call without call_id gets one', () => {
    const { chat } = responsesToChatRequest({ input: [{ role: 'user', content: 'time?' }, { type: 'function_call', name: 'clock' }] }, 'm');
    const assistant = chat.messages[1] as { role: string; content: unknown; tool_calls: Array<{ id: string }> };
    expect(assistant).toMatchObject({ role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'clock', arguments: '{}' } }] });
    expect(assistant.tool_calls[0].id).toMatch(/^call_[0-9a-f]{24}$/);
  });

  it('function tools -> chat tools; custom tools -> one-string functions; namespaces prefix the name; origins remember each', () => {
    const { chat, tools } = responsesToChatRequest(
      {
        input: 'x',
        tools: [
          { type: 'function', name: 'get_weather', description: 'Weather', parameters: WEATHER_PARAMS, strict: true },
          { type: 'function', name: 'clock' },
          { type: 'custom', name: 'apply_patch', description: 'Edit files', format: { type: 'grammar', syntax: 'lark', definition: 'start: "x"' } },
          { type: 'namespace', name: 'fs', tools: [{ type: 'function', name: 'read', parameters: WEATHER_PARAMS }, { type: 'custom', name: 'write' }] },
        ],
        tool_choice: 'required',
        parallel_tool_calls: false,
      },
      'm',
    );
    expect(chat.tools).toEqual([
      { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: WEATHER_PARAMS, strict: true } },
      { type: 'function', function: { name: 'clock', parameters: { type: 'object', properties: {} } } },
      { type: 'function', function: { name: 'apply_patch', description: 'Edit files\n\nInput grammar (lark):\nstart: "x"', parameters: CUSTOM_PARAMS } },
      { type: 'function', function: { name: 'fs__read', parameters: WEATHER_PARAMS } },
      { type: 'function', function: { name: 'fs__write', parameters: CUSTOM_PARAMS } },
    ]);
    expect(chat.tool_choice).toBe('required');
    expect(chat.parallel_tool_calls).toBe(false);
    expect([...tools]).toEqual([
      ['get_weather', { kind: 'function', name: 'get_weather', namespace: undefined }],
      ['clock', { kind: 'function', name: 'clock', namespace: undefined }],
      ['apply_patch', { kind: 'custom', name: 'apply_patch', namespace: undefined }],
      ['fs__read', { kind: 'function', name: 'read', namespace: 'fs' }],
      ['fs__write', { kind: 'custom', name: 'write', namespace: 'fs' }],
    ]);
  });

  it('custom and namespaced tool calls and outputs in the input; additional_tools items add tools', () => {
    const { chat } = responsesToChatRequest(
      {
        input: [
          { role: 'user', content: 'patch it' },
          { type: 'additional_tools', tools: [{ type: 'custom', name: 'apply_patch' }] },
          { type: 'custom_tool_call', call_id: 'c1', name: 'apply_patch', input: '*** Begin Patch' },
          { type: 'custom_tool_call_output', call_id: 'c1', output: 'Done' },
          { type: 'function_call', call_id: 'c2', namespace: 'fs', name: 'read', arguments: '{"p":"a"}' },
        ],
      },
      'm',
    );
    expect(chat.tools).toEqual([{ type: 'function', function: { name: 'apply_patch', parameters: CUSTOM_PARAMS } }]);
    expect(chat.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'Done' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c2', type: 'function', function: { name: 'fs__read', arguments: '{"p":"a"}' } }] },
    ]);
  });

  it('tool_choice naming a tool maps to its chat name; tool settings are dropped when there are no tools', () => {
    const ns = responsesToChatRequest({ input: 'x', tools: [{ type: 'namespace', name: 'fs', tools: [{ type: 'function', name: 'read' }] }], tool_choice: { type: 'function', name: 'read' } }, 'm');
    expect(ns.chat.tool_choice).toEqual({ type: 'function', function: { name: 'fs__read' } });
    const none = responsesToChatRequest({ input: 'x', tool_choice: 'required', parallel_tool_calls: true }, 'm').chat;
    expect(none).not.toHaveProperty('tool_choice');
    expect(none).not.toHaveProperty('parallel_tool_calls');
    expect(none).not.toHaveProperty('tools');
  });

  it('hosted tools that are only offered are dropped and listed; the request goes on with the rest', () => {
    const t = responsesToChatRequest(
      {
        input: [{ role: 'user', content: 'x' }, { type: 'additional_tools', tools: [{ type: 'code_interpreter' }, { type: 'function', name: 'late' }] }],
        tools: [{ type: 'function', name: 'f' }, { type: 'web_search' }, { type: 'namespace', name: 'n', tools: [{ type: 'file_search' }] }, { type: 'tool_search' }, { type: 'web_search' }],
        tool_choice: 'auto',
      },
      'm',
    );
    expect(t.dropped).toEqual(['web_search', 'file_search', 'tool_search', 'code_interpreter']);
    expect(t.chat.tools!.map((x) => x.function?.name)).toEqual(['f', 'late']);
    expect(t.chat.tool_choice).toBe('auto');
    // Only hosted tools offered: no tools at all, and no tool settings.
    const only = responsesToChatRequest({ input: 'x', tools: [{ type: 'web_search' }], tool_choice: 'required' }, 'm');
    expect(only.dropped).toEqual(['web_search']);
    expect(only.chat).not.toHaveProperty('tools');
    expect(only.chat).not.toHaveProperty('tool_choice');
  });

  it('text.format json_schema and json_object -> response_format', () => {
    const schema = { type: 'object', properties: { a: { type: 'number' } } };
    expect(responsesToChatRequest({ input: 'x', text: { format: { type: 'json_schema', name: 'answer', schema, strict: true } } }, 'm').chat.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'answer', schema, strict: true },
    });
    expect(responsesToChatRequest({ input: 'x', text: { format: { type: 'json_schema', schema } } }, 'm').chat.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'output', schema } });
    expect(responsesToChatRequest({ input: 'x', text: { format: { type: 'json_object' } } }, 'm').chat.response_format).toEqual({ type: 'json_object' });
    expect(responsesToChatRequest({ input: 'x', text: { format: { type: 'text' } } }, 'm').chat).not.toHaveProperty('response_format');
  });

  const refused: Array<[string, Record<string, unknown>, string]> = [
    ['previous_response_id (needs stored state)', { input: 'x', previous_response_id: 'resp_1' }, 'previous_response_id'],
    ['a tool_choice forcing a hosted tool', { input: 'x', tools: [{ type: 'function', name: 'f' }, { type: 'web_search' }], tool_choice: { type: 'web_search' } }, 'tool_choice'],
    ['a tool_choice forcing an MCP tool', { input: 'x', tools: [{ type: 'mcp', server_label: 's' }], tool_choice: { type: 'mcp', server_label: 's' } }, 'tool_choice'],
    ['an input with no message left', { input: [{ type: 'reasoning', summary: [] }] }, 'input'],
  ];
  it.each(refused)('refuses %s with a ValidationError naming the parameter', (_name, req, param) => {
    let err: unknown;
    try {
      responsesToChatRequest(req, 'm');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).param).toBe(param);
  });

  it('a null previous_response_id is no previous response', () => {
    expect(() => responsesToChatRequest({ input: 'x', previous_response_id: null }, 'm')).not.toThrow();
  });
});

const completion = (message: Partial<ChatCompletion['choices'][0]['message']>, finish: ChatCompletion['choices'][0]['finish_reason'] = 'stop'): ChatCompletion => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'up-model',
  choices: [{ index: 0, message: { role: 'assistant', content: null, ...message }, finish_reason: finish }],
});

describe('chat completion -> Response object', () => {
  const req = { model: 'client-model', instructions: 'Be brief.', input: 'Hi', max_output_tokens: 100, tools: [{ type: 'function', name: 'get_weather' }] };

  it('text: one output message; usage counts cached tokens into input and reasoning into output; settings echoed', () => {
    const before = Math.floor(Date.now() / 1000);
    const r = chatToResponse(completion({ content: 'Hello!' }), req, new Map(), tokens({ input: 40, cacheRead: 60, cacheWrite5m: 5, output: 50, reasoning: 20 }));
    expect(r).toMatchObject({
      object: 'response',
      status: 'completed',
      error: null,
      incomplete_details: null,
      instructions: 'Be brief.',
      max_output_tokens: 100,
      model: 'client-model',
      output: [{ type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hello!', annotations: [] }] }],
      parallel_tool_calls: true,
      previous_response_id: null,
      store: false,
      temperature: 1,
      top_p: 1,
      tool_choice: 'auto',
      tools: req.tools,
      text: { format: { type: 'text' } },
      truncation: 'disabled',
      metadata: {},
      usage: {
        input_tokens: 105,
        input_tokens_details: { cached_tokens: 60 },
        output_tokens: 50,
        output_tokens_details: { reasoning_tokens: 20 },
        total_tokens: 155,
      },
    });
    expect(r.id).toMatch(/^resp_[0-9a-f]{24}$/);
    expect((r.output as Array<{ id: string }>)[0].id).toMatch(/^msg_/);
    expect(r.created_at).toBeGreaterThanOrEqual(before);
    expect(r.created_at).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
  });

  it('reasoning, text and tool calls in that order; tool calls mapped back to the client\'s own names and kinds', () => {
    const { tools: origins } = responsesToChatRequest(
      { input: 'x', tools: [{ type: 'function', name: 'get_weather' }, { type: 'custom', name: 'apply_patch' }, { type: 'namespace', name: 'fs', tools: [{ type: 'function', name: 'read' }] }] },
      'm',
    );
    const r = chatToResponse(
      completion(
        {
          reasoning_content: 'Think.',
          content: 'Calling tools.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } },
            { id: 'call_3', type: 'function', function: { name: 'fs__read', arguments: '' } },
            { id: 'call_4', type: 'function', function: { name: 'unknown_fn', arguments: '{}' } },
          ],
        },
        'tool_calls',
      ),
      {},
      origins,
      NO_TOKENS,
    );
    expect(r.status).toBe('completed');
    expect(r.output).toEqual([
      { type: 'reasoning', id: expect.stringMatching(/^rs_/), summary: [{ type: 'summary_text', text: 'Think.' }] },
      { type: 'message', id: expect.stringMatching(/^msg_/), status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Calling tools.', annotations: [] }] },
      { type: 'function_call', id: expect.stringMatching(/^fc_/), call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' },
      { type: 'custom_tool_call', id: expect.stringMatching(/^ctc_/), call_id: 'call_2', name: 'apply_patch', input: '*** Begin Patch', status: 'completed' },
      { type: 'function_call', id: expect.stringMatching(/^fc_/), call_id: 'call_3', name: 'read', namespace: 'fs', arguments: '{}', status: 'completed' },
      // A name the request did not declare passes through as a function call.
      { type: 'function_call', id: expect.stringMatching(/^fc_/), call_id: 'call_4', name: 'unknown_fn', arguments: '{}', status: 'completed' },
    ]);
    expect(r.usage).toEqual({ input_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens: 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 0 });
  });

  it('a custom tool whose arguments are not our JSON wrapper keeps the raw text as its input', () => {
    const origins: Origins = new Map([['apply_patch', { kind: 'custom', name: 'apply_patch' }]]);
    const r = chatToResponse(completion({ tool_calls: [{ id: 'c', type: 'function', function: { name: 'apply_patch', arguments: 'raw patch' } }] }), {}, origins, NO_TOKENS);
    expect(r.output).toEqual([expect.objectContaining({ type: 'custom_tool_call', input: 'raw patch' })]);
  });

  it('finish_reason length and content_filter make the Response incomplete, with the reason', () => {
    expect(chatToResponse(completion({ content: 'Hel' }, 'length'), {}, new Map(), NO_TOKENS)).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect(chatToResponse(completion({ content: '' }, 'content_filter'), {}, new Map(), NO_TOKENS)).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'content_filter' },
      output: [],
    });
  });
});

/** The event types in order, for reading the sequence at a glance. */
const types = (events: ResponsesEvent[]) => events.map((e) => e.type);

const chunk = (delta: ChatChunk['choices'][0]['delta'], finish: ChatChunk['choices'][0]['finish_reason'] = null): ChatChunk => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'up-model',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

describe('chat chunks -> Responses stream events', () => {
  const req = { model: 'client-model', input: 'Hi', stream: true };

  it('a streamed text answer', () => {
    const s = new ChatToResponsesStream(req, new Map());
    const events: ResponsesEvent[] = [];
    const start = s.start();
    expect(types(start)).toEqual(['response.created', 'response.in_progress']);
    expect(start[0].response).toMatchObject({ object: 'response', status: 'in_progress', model: 'client-model', output: [], usage: null });
    events.push(...start);

    // The role-only first chunk opens nothing.
    expect(s.push(chunk({ role: 'assistant', content: '' }))).toEqual([]);
    const first = s.push(chunk({ content: 'Hel' }));
    expect(types(first)).toEqual(['response.output_item.added', 'response.content_part.added', 'response.output_text.delta']);
    const itemId = (first[0].item as { id: string }).id;
    expect(itemId).toMatch(/^msg_/);
    expect(first[0]).toMatchObject({ output_index: 0, item: { type: 'message', id: itemId, status: 'in_progress', role: 'assistant', content: [] } });
    expect(first[1]).toMatchObject({ item_id: itemId, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
    expect(first[2]).toMatchObject({ item_id: itemId, output_index: 0, content_index: 0, delta: 'Hel', logprobs: [] });
    events.push(...first);

    const second = s.push(chunk({ content: 'lo' }));
    expect(second).toEqual([expect.objectContaining({ type: 'response.output_text.delta', item_id: itemId, delta: 'lo' })]);
    events.push(...second);
    expect(s.push(chunk({}, 'stop'))).toEqual([]);
    // A usage-only chunk (no choices) produces nothing.
    expect(s.push({ ...chunk({}), choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })).toEqual([]);

    const end = s.end(tokens({ input: 3, cacheRead: 7, output: 2 }));
    expect(types(end)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    const done = { type: 'message', id: itemId, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] };
    expect(end[0]).toMatchObject({ item_id: itemId, text: 'Hello' });
    expect(end[1]).toMatchObject({ item_id: itemId, part: { type: 'output_text', text: 'Hello', annotations: [] } });
    expect(end[2]).toMatchObject({ output_index: 0, item: done });
    expect(end[3].response).toMatchObject({
      id: (start[0].response as { id: string }).id,
      status: 'completed',
      incomplete_details: null,
      output: [done],
      usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 7 }, output_tokens: 2, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 12 },
    });
    events.push(...end);
    // One sequence over the whole stream, from 0 with no gap.
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    // The error event continues the numbering.
    expect(s.error('server_error', 'upstream went away')).toEqual({ type: 'error', sequence_number: events.length, code: 'server_error', message: 'upstream went away', param: null });
  });

  it('streamed tool calls: each call an item, its arguments as deltas, closed when the next begins', () => {
    const origins: Origins = new Map([['get_weather', { kind: 'function', name: 'get_weather' }]]);
    const s = new ChatToResponsesStream(req, origins);
    s.start();
    const a = s.push(chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }));
    expect(types(a)).toEqual(['response.output_item.added']);
    const fc1 = a[0].item as { id: string };
    expect(a[0]).toMatchObject({ output_index: 0, item: { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '', status: 'in_progress' } });
    expect(fc1.id).toMatch(/^fc_/);

    const b = [...s.push(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] })), ...s.push(chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }))];
    expect(b).toEqual([
      expect.objectContaining({ type: 'response.function_call_arguments.delta', item_id: fc1.id, output_index: 0, delta: '{"city":' }),
      expect.objectContaining({ type: 'response.function_call_arguments.delta', item_id: fc1.id, output_index: 0, delta: '"Paris"}' }),
    ]);

    const c = s.push(chunk({ tool_calls: [{ index: 1, id: 'call_2', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }] }));
    expect(types(c)).toEqual(['response.function_call_arguments.done', 'response.output_item.done', 'response.output_item.added', 'response.function_call_arguments.delta']);
    const first = { type: 'function_call', id: fc1.id, call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' };
    expect(c[0]).toMatchObject({ item_id: fc1.id, output_index: 0, name: 'get_weather', arguments: '{"city":"Paris"}' });
    expect(c[1]).toMatchObject({ output_index: 0, item: first });
    expect(c[2]).toMatchObject({ output_index: 1, item: { type: 'function_call', call_id: 'call_2' } });
    const fc2 = (c[2].item as { id: string }).id;
    expect(fc2).not.toBe(fc1.id);

    expect(s.push(chunk({}, 'tool_calls'))).toEqual([]);
    const end = s.end(tokens({ input: 20, output: 15, reasoning: 4 }));
    expect(types(end)).toEqual(['response.function_call_arguments.done', 'response.output_item.done', 'response.completed']);
    expect(end[2].response).toMatchObject({
      status: 'completed',
      output: [first, { type: 'function_call', id: fc2, call_id: 'call_2', name: 'get_weather', arguments: '{"city":"Rome"}', status: 'completed' }],
      usage: { input_tokens: 20, output_tokens: 15, output_tokens_details: { reasoning_tokens: 4 }, total_tokens: 35 },
    });
  });

  it('reasoning, then text, then a tool call: each item closes before the next opens, at the next output_index', () => {
    const s = new ChatToResponsesStream(req, new Map());
    s.start();
    const r = s.push(chunk({ reasoning_content: 'Hmm' }));
    expect(types(r)).toEqual(['response.output_item.added', 'response.reasoning_summary_part.added', 'response.reasoning_summary_text.delta']);
    expect(r[2]).toMatchObject({ output_index: 0, summary_index: 0, delta: 'Hmm' });
    const t = s.push(chunk({ content: 'Ok' }));
    expect(types(t)).toEqual([
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
    ]);
    expect(t[2]).toMatchObject({ output_index: 0, item: { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Hmm' }] } });
    expect(t[3]).toMatchObject({ output_index: 1 });
    const c = s.push(chunk({ tool_calls: [{ index: 0, id: 'call_9', function: { name: 'clock', arguments: '' } }] }));
    expect(types(c)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.output_item.added']);
    expect(c[3]).toMatchObject({ output_index: 2, item: { type: 'function_call', name: 'clock' } });
    const end = s.end(NO_TOKENS);
    // A call streamed with no arguments is closed with an empty JSON object.
    expect(end[0]).toMatchObject({ type: 'response.function_call_arguments.done', arguments: '{}' });
    expect((end.at(-1)!.response as { output: Array<{ type: string }> }).output.map((o) => o.type)).toEqual(['reasoning', 'message', 'function_call']);
  });

  it('a custom tool call streams no argument deltas; its input comes whole at the close', () => {
    const origins: Origins = new Map([['apply_patch', { kind: 'custom', name: 'apply_patch' }]]);
    const s = new ChatToResponsesStream(req, origins);
    s.start();
    const a = s.push(chunk({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'apply_patch', arguments: '{"input":' } }] }));
    expect(types(a)).toEqual(['response.output_item.added']);
    expect(a[0].item).toMatchObject({ type: 'custom_tool_call', call_id: 'c1', name: 'apply_patch', input: '', status: 'in_progress' });
    expect(s.push(chunk({ tool_calls: [{ index: 0, function: { arguments: '"*** Begin Patch"}' } }] }))).toEqual([]);
    const end = s.end(NO_TOKENS);
    expect(types(end)).toEqual(['response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done', 'response.output_item.done', 'response.completed']);
    expect(end[0]).toMatchObject({ delta: '*** Begin Patch' });
    expect(end[1]).toMatchObject({ input: '*** Begin Patch' });
    expect(end[2].item).toMatchObject({ type: 'custom_tool_call', call_id: 'c1', input: '*** Begin Patch', status: 'completed' });
  });

  it('a stream cut by the token limit ends in response.incomplete', () => {
    const s = new ChatToResponsesStream(req, new Map());
    s.start();
    s.push(chunk({ content: 'Hel' }, 'length'));
    const end = s.end(tokens({ input: 1, output: 1 }));
    expect(end.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } } });
  });
});
