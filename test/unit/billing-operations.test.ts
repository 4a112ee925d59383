import { encodeEntry, encodeOperation, LEDGER_COUNT_MAX, type LedgerEntryInput } from '../../src/domain/billing/operations';
import { ledgerTokensOf, plainUsage, type TokenUsage } from '../../src/domain/pricing/usage';

/** The token columns of a call with no token usage (unit-priced calls, or usage not given). */
const ZERO_TOKENS = {
  prompt_tokens: 0,
  completion_tokens: 0,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  cache_write_1h_tokens: 0,
  reasoning_tokens: 0,
  image_input_tokens: 0,
  audio_input_tokens: 0,
  audio_output_tokens: 0,
};

const minimalEntry: LedgerEntryInput = { requestId: 'req-1', model: 'gpt-x' };

/** What encodeEntry makes of `minimalEntry`: every optional column at its default. */
const minimalEncoded = {
  request_id: 'req-1',
  task_id: null,
  model: 'gpt-x',
  token_name: '',
  channel_id: null,
  channel: '',
  is_stream: false,
  latency_ms: 0,
  units: 0,
  unit: '',
  ...ZERO_TOKENS,
};

describe('billing operations: the keys billing_batch reads', () => {
  // toStrictEqual throughout: an extra key, or one present as undefined, would be a wire change too.
  it('reserve: op, key, account, token, amount, reason, ttl; period keys only for a periodic budget with quota > 0', () => {
    const base = { op: 'reserve', key: 'k1', account: 7, token: 9, amount: 1500, reason: 'chat', ttlSeconds: 300 } as const;
    const plain = { op: 'reserve', key: 'k1', account: 7, token: 9, amount: 1500, reason: 'chat', ttl: 300 };
    expect(encodeOperation(base)).toStrictEqual(plain);
    // A quota of 0 means no periodic budget: billing_batch must not see period keys then.
    expect(encodeOperation({ ...base, period: { quota: 0, start: 1_700_000_000 } })).toStrictEqual(plain);
    expect(encodeOperation({ ...base, period: { quota: 5000, start: 1_700_000_000 } })).toStrictEqual({ ...plain, period_quota: 5000, period_start: 1_700_000_000 });
    // A key-less call (token null) keeps the null: the SQL casts it, it must not vanish.
    expect(encodeOperation({ ...base, token: null })).toStrictEqual({ ...plain, token: null });
  });

  it('video_submit: the reserve keys plus the task row, and the same period rule', () => {
    const task = { id: 'vid-1', family: 'sora', prompt: 'a cat' };
    const op = { op: 'video_submit', key: 'v1', account: 3, token: null, amount: 900, reason: 'video', ttlSeconds: 3600, task } as const;
    const plain = { op: 'video_submit', key: 'v1', account: 3, token: null, amount: 900, reason: 'video', ttl: 3600, task };
    expect(encodeOperation(op)).toStrictEqual(plain);
    expect(encodeOperation({ ...op, period: { quota: 0, start: 5 } })).toStrictEqual(plain);
    expect(encodeOperation({ ...op, period: { quota: 10, start: 5 } })).toStrictEqual({ ...plain, period_quota: 10, period_start: 5 });
  });

  it('settle: key, actual, excess (from chargeExcess) and the encoded entry', () => {
    expect(encodeOperation({ op: 'settle', key: 'k1', actual: 420, chargeExcess: true, entry: minimalEntry })).toStrictEqual({
      op: 'settle',
      key: 'k1',
      actual: 420,
      excess: true,
      entry: minimalEncoded,
    });
    expect(encodeOperation({ op: 'settle', key: 'k1', actual: 0, chargeExcess: false, entry: minimalEntry })).toMatchObject({ excess: false, actual: 0 });
  });

  it('release, lease, renew and settle_lease', () => {
    expect(encodeOperation({ op: 'release', key: 'k2' })).toStrictEqual({ op: 'release', key: 'k2' });
    expect(encodeOperation({ op: 'lease', key: 'lease:a:1:1', account: 4, token: 1, amount: 3200, ttlSeconds: 120 })).toStrictEqual({
      op: 'lease',
      key: 'lease:a:1:1',
      account: 4,
      token: 1,
      amount: 3200,
      ttl: 120,
    });
    expect(encodeOperation({ op: 'renew', key: 'lease:a:1:1', ttlSeconds: 60 })).toStrictEqual({ op: 'renew', key: 'lease:a:1:1', ttl: 60 });
    expect(encodeOperation({ op: 'settle_lease', key: 'lease:a:1:1', portion: 80, actual: 100, account: 4, token: 1, entry: minimalEntry })).toStrictEqual({
      op: 'settle_lease',
      key: 'lease:a:1:1',
      portion: 80,
      actual: 100,
      account: 4,
      token: 1,
      entry: minimalEncoded,
    });
  });
});

describe('billing operations: encodeEntry', () => {
  it('fills every optional column with its default', () => {
    expect(encodeEntry(minimalEntry)).toStrictEqual(minimalEncoded);
  });

  it('keeps the given columns', () => {
    const e = encodeEntry({ requestId: 'r', taskId: 't-1', model: 'm', tokenName: 'ci key', channelId: 12, channel: 'primary', isStream: true, latencyMs: 250, units: 3 });
    expect(e).toStrictEqual({
      request_id: 'r',
      task_id: 't-1',
      model: 'm',
      token_name: 'ci key',
      channel_id: 12,
      channel: 'primary',
      is_stream: true,
      latency_ms: 250,
      units: 3,
      unit: '',
      ...ZERO_TOKENS,
    });
    // Explicit nulls are as good as absent.
    expect(encodeEntry({ ...minimalEntry, taskId: null, channelId: null })).toStrictEqual(minimalEncoded);
  });

  it('rounds the latency to whole milliseconds and never lets it go negative', () => {
    expect(encodeEntry({ ...minimalEntry, latencyMs: 12.4 }).latency_ms).toBe(12);
    expect(encodeEntry({ ...minimalEntry, latencyMs: 12.5 }).latency_ms).toBe(13);
    // A clock step backwards must not write a negative latency.
    expect(encodeEntry({ ...minimalEntry, latencyMs: -40 }).latency_ms).toBe(0);
    expect(encodeEntry({ ...minimalEntry, latencyMs: -0.4 }).latency_ms).toBe(0);
  });

  it("records a count past the ledger's integer columns as their largest value", () => {
    const huge = encodeEntry({ ...minimalEntry, units: 3e9, latencyMs: 1e10, usage: { ...plainUsage(0, 0), input: 2e9, cacheRead: 2e9, output: 5e9 } });
    expect(huge).toMatchObject({ units: LEDGER_COUNT_MAX, latency_ms: LEDGER_COUNT_MAX, prompt_tokens: LEDGER_COUNT_MAX, completion_tokens: LEDGER_COUNT_MAX, cache_read_tokens: 2e9 });
  });

  it('is_stream is true only for true', () => {
    expect(encodeEntry({ ...minimalEntry, isStream: false }).is_stream).toBe(false);
    expect(encodeEntry({ ...minimalEntry, isStream: undefined }).is_stream).toBe(false);
  });

  it('takes the token columns from ledgerTokensOf', () => {
    const usage: TokenUsage = { input: 100, cacheRead: 20, cacheWrite5m: 3, cacheWrite1h: 4, output: 50, reasoning: 10, imageInput: 5, audioInput: 6, audioOutput: 7 };
    const e = encodeEntry({ ...minimalEntry, usage });
    // Spelled out, so a change to either function shows here.
    expect(e).toStrictEqual({
      ...minimalEncoded,
      prompt_tokens: 127,
      completion_tokens: 50,
      cache_read_tokens: 20,
      cache_write_tokens: 7,
      cache_write_1h_tokens: 4,
      reasoning_tokens: 10,
      image_input_tokens: 5,
      audio_input_tokens: 6,
      audio_output_tokens: 7,
    });
    expect(e).toMatchObject(ledgerTokensOf(usage));
  });
});
