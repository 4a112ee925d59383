import { ValidationError } from '../../src/domain/errors';
import { AnthropicToChatStream } from '../../src/domain/translate/anthropic-response-to-chat';
import { ConverseToMessagesStream, converseToMessagesResponse } from '../../src/domain/translate/converse-to-messages';
import type { ConverseStreamEvent } from '../../src/domain/translate/converse-types';
import { messagesToConverse } from '../../src/domain/translate/messages-to-converse';
import type { AnthropicRequest } from '../../src/domain/translate/types';
import { isAnthropicModel } from '../../src/upstream/cloud/by-publisher';

/** Bedrock's Converse read and written as the Messages API (src/domain/translate/*converse*). */
describe('Messages -> Converse', () => {
  const req = (over: Partial<AnthropicRequest> & Record<string, unknown>): AnthropicRequest => ({ model: 'm', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }], ...over }) as AnthropicRequest;

  it('merges turns of one role, moves system turns to system, keeps thinking, tool use and results, and places cache points', () => {
    const dropped: string[] = [];
    const out = messagesToConverse(
      req({
        system: [{ type: 'text', text: 'rules', cache_control: { type: 'ephemeral' } }],
        thinking: { type: 'enabled', budget_tokens: 1024 },
        top_k: 5,
        messages: [
          { role: 'system', content: 'more rules' },
          { role: 'user', content: 'a' },
          { role: 'user', content: [{ type: 'text', text: 'b', cache_control: { type: 'ephemeral' } }] },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'hmm', signature: 'sig' },
              { type: 'redacted_thinking', data: 'cmVkYWN0ZWQ=' },
              { type: 'tool_use', id: 't1', name: 'lookup', input: { q: 1 } },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', is_error: true, content: [{ type: 'text', text: 'failed' }] }, { type: 'container_upload', file_id: 'f' }] },
        ],
        tools: [
          { name: 'lookup', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } },
          { type: 'web_search_20250305', name: 'web_search' },
        ],
        tool_choice: { type: 'tool', name: 'lookup', disable_parallel_tool_use: true },
      }),
      dropped,
    );
    expect(out).toEqual({
      system: [{ text: 'rules' }, { cachePoint: { type: 'default' } }, { text: 'more rules' }],
      messages: [
        { role: 'user', content: [{ text: 'a' }, { text: 'b' }, { cachePoint: { type: 'default' } }] },
        {
          role: 'assistant',
          content: [
            { reasoningContent: { reasoningText: { text: 'hmm', signature: 'sig' } } },
            { reasoningContent: { redactedContent: 'cmVkYWN0ZWQ=' } },
            { toolUse: { toolUseId: 't1', name: 'lookup', input: { q: 1 } } },
          ],
        },
        { role: 'user', content: [{ toolResult: { toolUseId: 't1', content: [{ text: 'failed' }], status: 'error' } }] },
      ],
      inferenceConfig: { maxTokens: 32 },
      toolConfig: { tools: [{ toolSpec: { name: 'lookup', inputSchema: { json: { type: 'object' } } } }, { cachePoint: { type: 'default' } }], toolChoice: { tool: { name: 'lookup' } } },
      additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 1024 } },
    });
    expect(dropped).toEqual(['container_upload', 'web_search_20250305']);
  });

  it('sends documents as named bytes, and refuses images and documents by URL', () => {
    const out = messagesToConverse(
      req({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', title: 'Q3 report: final!', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
              { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain words' } },
            ],
          },
        ],
      }),
      [],
    );
    expect(out.messages[0].content).toEqual([
      { document: { format: 'pdf', name: 'Q3 report final (1)', source: { bytes: 'JVBERi0=' } } },
      { document: { format: 'txt', name: 'document-2', source: { bytes: Buffer.from('plain words').toString('base64') } } },
    ]);
    const byUrl = (type: string) => () => messagesToConverse(req({ messages: [{ role: 'user', content: [{ type, source: { type: 'url', url: 'https://example.com/x' } }] }] }), []);
    expect(byUrl('image')).toThrow(ValidationError);
    expect(byUrl('document')).toThrow(/bytes only/);
  });

  it("tool_choice none sends no tools unless the conversation already used them (Converse has no 'none')", () => {
    const tools = [{ name: 'f', input_schema: { type: 'object' } }];
    expect(messagesToConverse(req({ tools, tool_choice: { type: 'none' } }), []).toolConfig).toBeUndefined();
    const used = messagesToConverse(
      req({
        tools,
        tool_choice: { type: 'none' },
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: 'ok' }] },
        ],
      }),
      [],
    );
    expect(used.toolConfig).toEqual({ tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } }] });
  });
});

describe('Converse -> Messages', () => {
  it('an answer: text, tool use and reasoning blocks, a guardrail as refusal, usage by dimension', () => {
    const out = converseToMessagesResponse(
      {
        output: { message: { role: 'assistant', content: [{ reasoningContent: { reasoningText: { text: 'think', signature: 's' } } }, { text: 'hello' }, { toolUse: { toolUseId: 'x', name: 'f', input: { a: 1 } } }] } },
        stopReason: 'guardrail_intervened',
        usage: { inputTokens: 10, outputTokens: 5, totalTokens: 25, cacheReadInputTokens: 7, cacheWriteInputTokens: 3 },
      },
      'msg_1',
      'my-model',
    );
    expect(out).toEqual({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'my-model',
      content: [{ type: 'thinking', thinking: 'think', signature: 's' }, { type: 'text', text: 'hello' }, { type: 'tool_use', id: 'x', name: 'f', input: { a: 1 } }],
      stop_reason: 'refusal',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 7, cache_creation_input_tokens: 3 },
    });
    expect(converseToMessagesResponse({}, 'm', 'x')).toBeNull();
  });

  const stream: ConverseStreamEvent[] = [
    { type: 'messageStart', payload: { role: 'assistant' } },
    { type: 'contentBlockDelta', payload: { contentBlockIndex: 0, delta: { reasoningContent: { text: 'let me ' } } } },
    { type: 'contentBlockDelta', payload: { contentBlockIndex: 0, delta: { reasoningContent: { text: 'think' } } } },
    { type: 'contentBlockDelta', payload: { contentBlockIndex: 0, delta: { reasoningContent: { signature: 'sig' } } } },
    { type: 'contentBlockStop', payload: { contentBlockIndex: 0 } },
    { type: 'contentBlockDelta', payload: { contentBlockIndex: 1, delta: { text: 'Hi' } } },
    { type: 'contentBlockStop', payload: { contentBlockIndex: 1 } },
    { type: 'contentBlockStart', payload: { contentBlockIndex: 2, start: { toolUse: { toolUseId: 'tu', name: 'f' } } } },
    { type: 'contentBlockDelta', payload: { contentBlockIndex: 2, delta: { toolUse: { input: '{"a":' } } } },
    { type: 'contentBlockDelta', payload: { contentBlockIndex: 2, delta: { toolUse: { input: '1}' } } } },
    { type: 'contentBlockStop', payload: { contentBlockIndex: 2 } },
    { type: 'messageStop', payload: { stopReason: 'tool_use' } },
    { type: 'metadata', payload: { usage: { inputTokens: 12, outputTokens: 9, cacheReadInputTokens: 4 } } },
  ];

  it('a stream: blocks opened on their first delta, message_delta and message_stop after the usage that follows messageStop', () => {
    const t = new ConverseToMessagesStream('msg_s', 'm');
    const events = stream.flatMap((e) => t.push(e));
    expect(events.map((e) => e.type)).toEqual([
      'message_start',
      'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop',
      'content_block_start', 'content_block_delta', 'content_block_stop',
      'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop',
      'message_delta', 'message_stop',
    ]);
    expect(events[1]).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } });
    expect(events[4]).toEqual({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig' } });
    expect(events[13]).toEqual({ type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 12, output_tokens: 9, cache_read_input_tokens: 4, cache_creation_input_tokens: 0 } });
    expect(t.done).toBe(true);
    expect(t.end()).toEqual([]);

    // Read on as chat: reasoning, text, a tool call with its arguments, the usage by dimension.
    const chat = new AnthropicToChatStream('m', true);
    const chunks = events.flatMap((e) => chat.push(e));
    const deltas = chunks.flatMap((c) => c.choices.map((ch) => ch.delta as Record<string, unknown>));
    expect(deltas.map((d) => d.reasoning_content).filter(Boolean).join('')).toBe('let me think');
    expect(deltas.map((d) => d.content).filter(Boolean).join('')).toBe('Hi');
    expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 16, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 4 } });
  });

  it('a stream cut before messageStop is an error; one without usage after messageStop ends at its end', () => {
    const cut = new ConverseToMessagesStream('a', 'm');
    stream.slice(0, 6).forEach((e) => cut.push(e));
    expect(() => cut.end()).toThrow(/messageStop/);
    const noUsage = new ConverseToMessagesStream('b', 'm');
    stream.slice(0, 12).forEach((e) => noUsage.push(e));
    expect(noUsage.reported()).toBeNull();
    expect(noUsage.end().map((e) => e.type)).toEqual(['message_delta', 'message_stop']);
  });
});

describe('which models are Anthropic\'s', () => {
  it.each([
    ['claude-sonnet-4-5@20250929', true],
    ['anthropic.claude-3-5-haiku-20241022-v1:0', true],
    ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', true],
    ['global.anthropic.claude-opus-4-1-20250805-v1:0', true],
    ['meta.llama4-maverick-17b-instruct-v1:0', false],
    ['gemini-2.5-pro', false],
    ['amazon.nova-pro-v1:0', false],
  ])('%s: %s', (model, anthropic) => expect(isAnthropicModel(model)).toBe(anthropic));
});
