import type { Pool } from 'pg';
import { costOfUsage, estimateCost, type Price } from '../../src/domain/pricing/cost';
import { decimal } from '../../src/domain/pricing/decimal';
import { NO_TOKENS, type TokenUsage } from '../../src/domain/pricing/usage';
import { validateGatewayConfig } from '../../src/gateway-config/schema';
import { GatewayMetrics } from '../../src/observability/metrics';
import type { AnthropicStreamEvent } from '../../src/domain/translate/types';
import { AnthropicUsageTracker, toAnthropicUsage, toChatUsage, usageFromAnthropic, usageFromOpenAi } from '../../src/domain/pricing/usage-readers';

const d = decimal;
const tokens = (u: Partial<TokenUsage>): TokenUsage => ({ ...NO_TOKENS, ...u });

describe('usage dimensions: reading what providers report', () => {
  it('OpenAI: cached tokens are part of prompt_tokens, reasoning part of completion_tokens', () => {
    expect(
      usageFromOpenAi({
        prompt_tokens: 100,
        completion_tokens: 50,
        total_tokens: 150,
        prompt_tokens_details: { cached_tokens: 60, audio_tokens: 5 },
        completion_tokens_details: { reasoning_tokens: 20, audio_tokens: 3 },
      }),
    ).toEqual(tokens({ input: 40, cacheRead: 60, output: 50, reasoning: 20, audioInput: 5, audioOutput: 3 }));
  });

  it('OpenAI-compatible: reasoning outside completion_tokens (xAI) is billed from total_tokens; DeepSeek cache hits', () => {
    expect(usageFromOpenAi({ prompt_tokens: 307, completion_tokens: 26, total_tokens: 588, completion_tokens_details: { reasoning_tokens: 255 } })).toMatchObject({
      input: 307,
      output: 281,
      reasoning: 255,
    });
    expect(usageFromOpenAi({ prompt_tokens: 339, completion_tokens: 83, prompt_cache_hit_tokens: 320, prompt_cache_miss_tokens: 19 })).toMatchObject({ input: 19, cacheRead: 320 });
    // Details never exceed what they are part of.
    expect(usageFromOpenAi({ prompt_tokens: 10, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 99 }, completion_tokens_details: { reasoning_tokens: 9 } })).toMatchObject({
      input: 0,
      cacheRead: 10,
      output: 2,
      reasoning: 2,
    });
    expect(usageFromOpenAi({ completion_tokens: 2 })).toBeNull();
    expect(usageFromOpenAi({ prompt_tokens: -1 })).toBeNull();
  });

  it('Anthropic: input excludes the cache; writes split 5-minute / 1-hour; thinking tokens are reasoning', () => {
    expect(
      usageFromAnthropic({
        input_tokens: 6,
        cache_read_input_tokens: 6289,
        cache_creation_input_tokens: 3337,
        cache_creation: { ephemeral_5m_input_tokens: 3000, ephemeral_1h_input_tokens: 337 },
        output_tokens: 198,
        output_tokens_details: { thinking_tokens: 50 },
      }),
    ).toEqual(tokens({ input: 6, cacheRead: 6289, cacheWrite5m: 3000, cacheWrite1h: 337, output: 198, reasoning: 50 }));
    expect(usageFromAnthropic({ input_tokens: 1, cache_creation_input_tokens: 10 })).toMatchObject({ cacheWrite5m: 10, cacheWrite1h: 0 });
  });

  it('an Anthropic stream: message_delta updates message_start field by field', () => {
    const t = new AnthropicUsageTracker();
    t.see({ type: 'message_start', message: { usage: { input_tokens: 2, cache_creation_input_tokens: 3068, cache_read_input_tokens: 0, cache_creation: { ephemeral_5m_input_tokens: 3068, ephemeral_1h_input_tokens: 0 }, output_tokens: 69 } } } as unknown as AnthropicStreamEvent);
    t.see({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { input_tokens: 6, cache_creation_input_tokens: 3337, cache_read_input_tokens: 6289, output_tokens: 198 } } as AnthropicStreamEvent);
    expect(t.usage()).toEqual(tokens({ input: 6, cacheRead: 6289, cacheWrite5m: 3337, output: 198 }));
    const only = new AnthropicUsageTracker();
    only.see({ type: 'message_start', message: { usage: { input_tokens: 43, output_tokens: 1 } } } as unknown as AnthropicStreamEvent);
    only.see({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } } as AnthropicStreamEvent);
    expect(only.usage()).toMatchObject({ input: 43, output: 2 });
  });

  it('translation both ways keeps every dimension a format can carry', () => {
    const u = tokens({ input: 6, cacheRead: 6289, cacheWrite5m: 3337, cacheWrite1h: 10, output: 198, reasoning: 40 });
    expect(toChatUsage(u)).toEqual({
      prompt_tokens: 9642,
      completion_tokens: 198,
      total_tokens: 9840,
      prompt_tokens_details: { cached_tokens: 6289, cache_write_tokens: 3347 },
      completion_tokens_details: { reasoning_tokens: 40 },
    });
    expect(usageFromOpenAi(toChatUsage(u))).toMatchObject({ input: 6, cacheRead: 6289, cacheWrite5m: 3347, output: 198, reasoning: 40 });
    expect(toAnthropicUsage(usageFromOpenAi({ prompt_tokens: 10122, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 9984 } })!)).toEqual({
      input_tokens: 138,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 9984,
      output_tokens: 1,
    });
  });
});

describe('usage dimensions: prices, fallbacks and the long-context block', () => {
  const claude: Price = { input_per_1m: d(3), output_per_1m: d(15), cache_read_per_1m: d('0.3'), cache_write_per_1m: d('3.75'), cache_write_1h_per_1m: d(6) };

  it('bills each dimension at its price, rounded up once per call', () => {
    // (6×3 + 3337×3.75 + 6289×0.3 + 198×15) × 0.5 = 8,694.225
    expect(costOfUsage(claude, tokens({ input: 6, cacheRead: 6289, cacheWrite5m: 3337, output: 198 }))).toBe(8_695);
    // 1-hour writes: 1000 × 6 × 0.5
    expect(costOfUsage(claude, tokens({ cacheWrite1h: 1000 }))).toBe(3_000);
    // multiplier applies to the sum: 8,694.225 × 0.5 = 4,347.1125
    expect(costOfUsage(claude, tokens({ input: 6, cacheRead: 6289, cacheWrite5m: 3337, output: 198 }), '0.5')).toBe(4_348);
  });

  it('falls back: 1h write -> 5m write -> input, cache read -> input, reasoning -> output, image/audio -> input/output', () => {
    const plain: Price = { input_per_1m: d(2), output_per_1m: d(8) };
    expect(costOfUsage(plain, tokens({ cacheRead: 1000, cacheWrite5m: 1000, cacheWrite1h: 1000, imageInput: 0 }))).toBe(3_000);
    expect(costOfUsage(plain, tokens({ output: 1000, reasoning: 600, audioOutput: 100 }))).toBe(4_000);
    expect(costOfUsage({ ...plain, cache_write_per_1m: d(4) }, tokens({ cacheWrite1h: 1000 }))).toBe(2_000);
    // Reasoning at its own price, the rest of output at output_per_1m: (400×8 + 600×20) × 0.5
    expect(costOfUsage({ ...plain, reasoning_per_1m: d(20) }, tokens({ output: 1000, reasoning: 600 }))).toBe(7_600);
    // Image and audio input at theirs, the rest of input at input_per_1m: (700×2 + 200×5 + 100×10) × 0.5
    expect(costOfUsage({ ...plain, image_input_per_1m: d(5), audio_input_per_1m: d(10) }, tokens({ input: 1000, imageInput: 200, audioInput: 100 }))).toBe(1_700);
  });

  it('above_200k prices every dimension of a call whose input exceeds 200,000 tokens, falling back to the base prices', () => {
    const gemini: Price = { input_per_1m: d('1.25'), output_per_1m: d(10), cache_read_per_1m: d('0.31'), above_200k: { input_per_1m: d('2.5'), output_per_1m: d(15) } };
    // 200,000 exactly stays on base prices: 200,000 × 1.25 × 0.5
    expect(costOfUsage(gemini, tokens({ input: 200_000 }))).toBe(125_000);
    // 200,001 (cache reads count as input): (150,001 × 2.5 + 50,000 × 0.31 + 1000 × 15) × 0.5
    expect(costOfUsage(gemini, tokens({ input: 150_001, cacheRead: 50_000, output: 1000 }))).toBe(Math.ceil((150_001 * 2.5 + 50_000 * 0.31 + 1000 * 15) * 0.5));
  });

  it('the hold covers the dearest split of the same counts', () => {
    const price: Price = { ...claude, reasoning_per_1m: d(20) };
    const hold = estimateCost(price, { promptTokens: 1000, maxCompletionTokens: 100 });
    // every prompt token a 1-hour write, every output token reasoning: (1000 × 6 + 100 × 20) × 0.5
    expect(hold).toBe(4_000);
    expect(costOfUsage(price, tokens({ cacheWrite1h: 1000, output: 100, reasoning: 100 }))).toBeLessThanOrEqual(hold);
    const long: Price = { input_per_1m: d(1), output_per_1m: d(2), above_200k: { input_per_1m: d(3), output_per_1m: d(4) } };
    expect(estimateCost(long, { promptTokens: 200_001, maxCompletionTokens: 10 })).toBe(Math.ceil((200_001 * 3 + 10 * 4) * 0.5));
  });
});

describe('usage dimensions: GATEWAY_CONFIG', () => {
  const channels = [{ name: 'c', type: 'anthropic', base_url: 'http://127.0.0.1:1/v1', key: 'k', models: ['m'] }];

  it('accepts every dimension price and an above_200k block, exact as written', () => {
    const r = validateGatewayConfig(
      {
        channels,
        models: {
          m: {
            input_per_1m: '3',
            output_per_1m: 15,
            cache_read_per_1m: '0.3',
            cache_write_per_1m: '3.75',
            cache_write_1h_per_1m: 6,
            reasoning_per_1m: 15,
            image_input_per_1m: 3,
            audio_input_per_1m: 3,
            audio_output_per_1m: 15,
            above_200k: { input_per_1m: 6, output_per_1m: '22.5' },
          },
        },
      },
      'test',
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const m = r.config.models.m;
    expect(costOfUsage(m, tokens({ input: 6, cacheRead: 6289, cacheWrite5m: 3337, output: 198 }))).toBe(8_695);
    expect(costOfUsage(m, tokens({ input: 200_001, output: 2 }))).toBe(Math.ceil((200_001 * 6 + 2 * 22.5) / 2));
  });

  it('refuses an unknown price field (in the model or its above_200k block) and a dimension price without input_per_1m', () => {
    const bad = (models: unknown) => validateGatewayConfig({ channels, models }, 'test');
    expect(bad({ m: { input_per_1m: 1, cache_reads_per_1m: 1 } })).toMatchObject({ ok: false });
    expect(bad({ m: { input_per_1m: 1, above_200k: { input_per_1m: 2, cache_hit_per_1m: 1 } } })).toMatchObject({ ok: false });
    expect(bad({ m: { cache_read_per_1m: 1 } })).toEqual({ ok: false, problems: ['models.m.input_per_1m: is required for a token-priced model'] });
    expect(bad({ m: { input_per_1m: 1, per_unit: 2, cache_read_per_1m: 1 } })).toMatchObject({ ok: false });
  });
});

describe('usage dimensions: /metrics', () => {
  it('counts billed tokens by dimension as disjoint shares', async () => {
    const metrics = new GatewayMetrics({ query: async () => ({ rows: [{ n: 0, s: '0' }] }) } as unknown as Pool);
    metrics.tokensBilled(tokens({ input: 10, cacheRead: 20, cacheWrite5m: 30, output: 40, reasoning: 15 }));
    const text = await metrics.registry.metrics();
    expect(text).toContain('gateway_tokens_billed_total{dimension="input"} 10');
    expect(text).toContain('gateway_tokens_billed_total{dimension="cache_read"} 20');
    expect(text).toContain('gateway_tokens_billed_total{dimension="cache_write_5m"} 30');
    expect(text).toContain('gateway_tokens_billed_total{dimension="output"} 25');
    expect(text).toContain('gateway_tokens_billed_total{dimension="reasoning"} 15');
  });
});
