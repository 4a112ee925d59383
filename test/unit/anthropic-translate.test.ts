import { ValidationError } from '../../src/domain/errors';
import { AnthropicStreamError, AnthropicToChatStream, anthropicToChatCompletion, finishReasonOf } from '../../src/domain/translate/anthropic-response-to-chat';
import { anthropicToChatRequest } from '../../src/domain/translate/anthropic-request-to-chat';
import { chatToAnthropicRequest, DEFAULT_ANTHROPIC_MAX_TOKENS } from '../../src/domain/translate/chat-request-to-anthropic';
import { ChatToAnthropicStream, chatToAnthropicResponse, stopReasonOf } from '../../src/domain/translate/chat-response-to-anthropic';
import type { AnthropicRequest, AnthropicStreamEvent, ChatChunk, ChatRequest } from '../../src/domain/translate/types';

const PNG = 'iVBORw0KGgo=';

describe('chat request -> Anthropic request', () => {
  const cases: Array<[string, Partial<ChatRequest>, Record<string, unknown>]> = [
    [
      'system messages -> system, default max_tokens, one text turn as a string',
      { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'developer', content: [{ type: 'text', text: 'No emoji.' }] }, { role: 'user', content: 'Hi' }] },
      { model: 'up-model', max_tokens: DEFAULT_ANTHROPIC_MAX_TOKENS, system: 'Be brief.\n\nNo emoji.', messages: [{ role: 'user', content: 'Hi' }] },
    ],
    [
      'max_completion_tokens wins over max_tokens; stop string -> stop_sequences; temperature clamped; user -> metadata',
      { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 10, max_completion_tokens: 20, stop: 'END', temperature: 1.7, top_p: 0.5, user: 'u-1', stream: true },
      { model: 'up-model', max_tokens: 20, stop_sequences: ['END'], temperature: 1, top_p: 0.5, metadata: { user_id: 'u-1' }, stream: true, messages: [{ role: 'user', content: 'Hi' }] },
    ],
    [
      'image_url parts: data URI -> base64 source, https URL -> url source',
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'high' } },
            ],
          },
        ],
        max_tokens: 5,
      },
      {
        model: 'up-model',
        max_tokens: 5,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
              { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
            ],
          },
        ],
      },
    ],
    [
      'tools, tool_choice required, tool_calls and tool results (merged into one user turn)',
      {
        messages: [
          { role: 'user', content: 'Weather in Paris and Rome?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
              { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: '18C' },
          { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '24C' }] },
        ],
        tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
        tool_choice: 'required',
        parallel_tool_calls: false,
      },
      {
        model: 'up-model',
        max_tokens: DEFAULT_ANTHROPIC_MAX_TOKENS,
        messages: [
          { role: 'user', content: 'Weather in Paris and Rome?' },
          {
            role: 'assistant',
            content: [
              { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
              { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Rome' } },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'call_1', content: '18C' },
              { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '24C' }] },
            ],
          },
        ],
        tools: [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
        tool_choice: { type: 'any', disable_parallel_tool_use: true },
      },
    ],
    [
      'named tool choice; a tool without parameters gets an empty object schema',
      { messages: [{ role: 'user', content: 'now' }], tools: [{ type: 'function', function: { name: 'clock' } }], tool_choice: { type: 'function', function: { name: 'clock' } } },
      {
        model: 'up-model',
        max_tokens: DEFAULT_ANTHROPIC_MAX_TOKENS,
        messages: [{ role: 'user', content: 'now' }],
        tools: [{ name: 'clock', input_schema: { type: 'object', properties: {} } }],
        tool_choice: { type: 'tool', name: 'clock' },
      },
    ],
    [
      'assistant text with a tool call keeps both; legacy function_call / function result pair by name',
      {
        messages: [
          { role: 'user', content: 'time?' },
          { role: 'assistant', content: 'Let me check.', function_call: { name: 'clock', arguments: '' } },
          { role: 'function', name: 'clock', content: '12:00' },
        ],
      },
      {
        model: 'up-model',
        max_tokens: DEFAULT_ANTHROPIC_MAX_TOKENS,
        messages: [
          { role: 'user', content: 'time?' },
          { role: 'assistant', content: [{ type: 'text', text: 'Let me check.' }, { type: 'tool_use', id: 'call_clock', name: 'clock', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_clock', content: '12:00' }] },
        ],
      },
    ],
  ];

  it.each(cases)('%s', (_name, req, expected) => {
    expect(chatToAnthropicRequest({ model: 'client-model', messages: [], ...req } as ChatRequest, 'up-model')).toEqual(expected);
  });

  const refused: Array<[string, Partial<ChatRequest>, string]> = [
    ['n > 1', { n: 2, messages: [{ role: 'user', content: 'x' }] }, 'n'],
    ['an image that is neither https nor a data URI', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }] }] }, 'messages[0].content[0]'],
    ['an audio part', { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] }, 'messages[0].content[0]'],
    ['tool arguments that are not a JSON object', { messages: [{ role: 'user', content: 'x' }, { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '[1' } }] }] }, 'messages[1].tool_calls[0].function.arguments'],
    ['a tool message without tool_call_id', { messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id'],
    ['only system messages', { messages: [{ role: 'system', content: 'x' }] }, 'messages'],
  ];
  it.each(refused)('refuses %s with a 400 naming the parameter', (_name, req, param) => {
    let err: unknown;
    try {
      chatToAnthropicRequest({ model: 'm', ...req } as ChatRequest, 'm');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).param).toBe(param);
  });
});

describe('Anthropic response -> chat completion', () => {
  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
  ])('stop_reason %s -> finish_reason %s', (stop, finish) => {
    expect(finishReasonOf(stop)).toBe(finish);
  });

  it('text, tool calls, thinking and usage', () => {
    const out = anthropicToChatCompletion(
      {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'up-model',
        content: [
          { type: 'thinking', thinking: 'hmm', signature: 's' },
          { type: 'text', text: 'Checking ' },
          { type: 'text', text: 'now.' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
        ],
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: { input_tokens: 12, output_tokens: 7, cache_read_input_tokens: 0 },
      },
      'claude-x',
      1700000000,
    );
    expect(out).toEqual({
      id: 'msg_1',
      object: 'chat.completion',
      created: 1700000000,
      model: 'claude-x',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Checking now.',
            reasoning_content: 'hmm',
            tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } },
    });
  });

  it('only a tool call: content is null', () => {
    const out = anthropicToChatCompletion(
      { id: 'm', type: 'message', role: 'assistant', model: 'x', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }], stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } },
      'x',
    );
    expect(out.choices[0].message.content).toBeNull();
  });
});

/** The events of a streamed Anthropic answer (as the simulator and the real API send them). */
function anthropicEvents(kind: 'text' | 'tool'): AnthropicStreamEvent[] {
  const start: AnthropicStreamEvent = {
    type: 'message_start',
    message: { id: 'msg_s', type: 'message', role: 'assistant', model: 'up', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 20, output_tokens: 1 } },
  };
  if (kind === 'text') {
    return [
      start,
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'ping' },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: 2 } },
      { type: 'message_stop' },
    ];
  }
  return [
    start,
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Ok.' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_9', name: 'f', input: {} } },
    { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":' } },
    { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '1}' } },
    { type: 'content_block_stop', index: 1 },
    { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 21, output_tokens: 9 } },
    { type: 'message_stop' },
  ];
}

describe('Anthropic stream -> chat chunks', () => {
  const deltas = (chunks: ChatChunk[]) => chunks.map((c) => (c.choices.length ? [c.choices[0].delta, c.choices[0].finish_reason] : ['usage', c.usage]));

  it('text: role chunk, content deltas, finish chunk, usage chunk when asked', () => {
    const t = new AnthropicToChatStream('claude-x', true, 1);
    const out = anthropicEvents('text').flatMap((e) => t.push(e));
    expect(deltas(out)).toEqual([
      [{ role: 'assistant', content: '' }, null],
      [{ content: 'Hel' }, null],
      [{ content: 'lo' }, null],
      [{}, 'length'],
      ['usage', { prompt_tokens: 20, completion_tokens: 2, total_tokens: 22, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } }],
    ]);
    expect(out.every((c) => c.id === 'msg_s' && c.object === 'chat.completion.chunk' && c.model === 'claude-x' && c.created === 1)).toBe(true);
    expect(out[0].usage).toBeNull();
    expect(t.done).toBe(true);
    expect(t.usage()).toMatchObject({ input: 20, output: 2, cacheRead: 0 });
  });

  it('tool use: tool_calls deltas with index, id and name first, then argument pieces; no usage chunk unless asked', () => {
    const t = new AnthropicToChatStream('claude-x', false, 1);
    const out = anthropicEvents('tool').flatMap((e) => t.push(e));
    expect(deltas(out)).toEqual([
      [{ role: 'assistant', content: '' }, null],
      [{ content: 'Ok.' }, null],
      [{ tool_calls: [{ index: 0, id: 'toolu_9', type: 'function', function: { name: 'f', arguments: '' } }] }, null],
      [{ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] }, null],
      [{ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }, null],
      [{}, 'tool_calls'],
    ]);
    expect(out.some((c) => 'usage' in c)).toBe(false);
    // message_delta's input_tokens (newer API versions) wins over message_start's.
    expect(t.usage()).toMatchObject({ input: 21, output: 9, cacheRead: 0 });
  });

  it('an error event throws', () => {
    const t = new AnthropicToChatStream('m', false);
    expect(() => t.push({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })).toThrow(AnthropicStreamError);
  });
});

describe('Anthropic request -> chat request (/v1/messages on an openai channel)', () => {
  it('system, images, tool use and tool results, tools and choice, stop, stream with usage', () => {
    const req: AnthropicRequest = {
      model: 'gpt-4o',
      max_tokens: 100,
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look:' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
          ],
        },
        { role: 'assistant', content: [{ type: 'text', text: 'Calling.' }, { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'done' }, { type: 'text', text: 'And?' }] },
      ],
      stop_sequences: ['X'],
      temperature: 0.3,
      stream: true,
      tools: [{ name: 'f', description: 'F', input_schema: { type: 'object' } }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      metadata: { user_id: 'u' },
    };
    expect(anthropicToChatRequest(req, 'up')).toEqual({
      model: 'up',
      max_tokens: 100,
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look:' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          ],
        },
        { role: 'assistant', content: 'Calling.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'done' },
        { role: 'user', content: 'And?' },
      ],
      stop: ['X'],
      temperature: 0.3,
      stream: true,
      stream_options: { include_usage: true },
      user: 'u',
      tools: [{ type: 'function', function: { name: 'f', description: 'F', parameters: { type: 'object' } } }],
      tool_choice: 'required',
      parallel_tool_calls: false,
    });
  });

  it('drops block types chat cannot carry (docs/translation.md), keeping the rest of the turn', () => {
    const out = anthropicToChatRequest(
      { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'document', source: {} }, { type: 'server_tool_use', id: 'x' }] }] },
      'm',
    );
    expect(out.messages).toEqual([{ role: 'user', content: 'a' }]);
  });

  it('drops the server tools Anthropic runs (listed), passes client tools on; refuses a tool_choice forcing one', () => {
    const dropped: string[] = [];
    const tools = [
      { name: 'read_file', input_schema: { type: 'object' } },
      { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
      { type: 'code_execution_20250825', name: 'code_execution' },
      { type: 'bash_20250124', name: 'bash' },
    ];
    const out = anthropicToChatRequest({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'x' }], tools, tool_choice: { type: 'auto' } }, 'm', dropped);
    expect(dropped).toEqual(['web_search', 'code_execution']);
    expect(out.tools!.map((t) => t.function?.name)).toEqual(['read_file', 'bash']);
    const only = anthropicToChatRequest({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'x' }], tools: [tools[1]], tool_choice: { type: 'any' } }, 'm');
    expect(only).not.toHaveProperty('tools');
    expect(only).not.toHaveProperty('tool_choice');
    expect(() => anthropicToChatRequest({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'x' }], tools, tool_choice: { type: 'tool', name: 'web_search' } }, 'm')).toThrow(
      expect.objectContaining({ param: 'tool_choice' }),
    );
  });
});

describe('chat answers -> Anthropic answers', () => {
  it.each([
    ['stop', 'end_turn'],
    ['length', 'max_tokens'],
    ['tool_calls', 'tool_use'],
    ['content_filter', 'refusal'],
    [null, 'end_turn'],
  ])('finish_reason %s -> stop_reason %s', (finish, stop) => {
    expect(stopReasonOf(finish)).toBe(stop);
  });

  it('a chat completion as a message', () => {
    expect(
      chatToAnthropicResponse(
        {
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model: 'up',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: 'Hi', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
              finish_reason: 'tool_calls',
            },
          ],
          usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
        },
        'gpt-4o',
      ),
    ).toEqual({
      id: 'msg_chatcmpl-1',
      type: 'message',
      role: 'assistant',
      model: 'gpt-4o',
      content: [
        { type: 'text', text: 'Hi' },
        { type: 'tool_use', id: 'call_1', name: 'f', input: { a: 1 } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 3 },
    });
  });

  const chunk = (delta: ChatChunk['choices'][number]['delta'], finish: ChatChunk['choices'][number]['finish_reason'] = null): ChatChunk => ({
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'up',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });

  it('a chunk stream as the Messages event sequence (text then two tool calls, usage at the end)', () => {
    const t = new ChatToAnthropicStream('gpt-4o');
    const chunks: ChatChunk[] = [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'He' }),
      chunk({ content: 'y' }),
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"x":1}' } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'g', arguments: '{}' } }] }),
      chunk({}, 'tool_calls'),
      { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [], usage: { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 } },
    ];
    const events = [...chunks.flatMap((c) => t.push(c)), ...t.end()];
    expect(events).toEqual([
      {
        type: 'message_start',
        message: { id: 'msg_c1', type: 'message', role: 'assistant', model: 'gpt-4o', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } },
      },
      { type: 'ping' },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'He' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'y' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_a', name: 'f', input: {} } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"x":1}' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'call_b', name: 'g', input: {} } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{}' } },
      { type: 'content_block_stop', index: 2 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 11, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 4 } },
      { type: 'message_stop' },
    ]);
    expect(t.usage()).toMatchObject({ input: 11, output: 4, cacheRead: 0 });
  });

  it('round trip: Anthropic events -> chat chunks -> Anthropic events keeps text, tool input and stop reason', () => {
    const toChat = new AnthropicToChatStream('m', true, 1);
    const back = new ChatToAnthropicStream('m');
    const events = [...anthropicEvents('tool').flatMap((e) => toChat.push(e)).flatMap((c) => back.push(c)), ...back.end()];
    const text = events.flatMap((e) => (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? [e.delta.text] : [])).join('');
    const json = events.flatMap((e) => (e.type === 'content_block_delta' && e.delta.type === 'input_json_delta' ? [e.delta.partial_json] : [])).join('');
    expect(text).toBe('Ok.');
    expect(JSON.parse(json as string)).toEqual({ a: 1 });
    expect(events.find((e) => e.type === 'message_delta')).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { input_tokens: 21, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 9 },
    });
  });
});
