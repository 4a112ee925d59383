import type { Pool } from 'pg';
import { RateLimitedError } from '../../src/domain/errors';
import { effectiveLimits, type KeyLimits, NO_LIMITS } from '../../src/domain/limits/key-limits';
import { KeyRateLimiter, SLOT_TTL_SECONDS } from '../../src/db/key-rate-limiter';
import { type Admission, KeyLimitError, type LimitKind, UNLIMITED } from '../../src/domain/limits/admission';
import { RequestPermits } from '../../src/db/request-permits';
import { validateGatewayConfig } from '../../src/gateway-config/schema';

/**
 * An in-memory stand-in for the few statements the limiter sends, with the semantics of src/db/functions.sql
 * (limits_take_requests, limits_admit, limits_acquire_slot), so the rules are checked without PostgreSQL.
 * Unknown SQL throws: a new statement must be modelled here on purpose.
 */
class FakeDb {
  readonly calls: Array<{ sql: string; params: unknown[] }> = [];
  readonly windows = new Map<string, { requests: number; tokens: number }>();
  readonly inflight = new Map<string, number>();
  /** While set, limits_take_requests answers only once it resolves (a take "on its way"). */
  gate: Promise<void> | null = null;
  /** The next statement whose SQL contains this text fails. */
  failOn: string | null = null;

  window(token: number, minute: number) {
    const k = `${token}:${minute}`;
    let w = this.windows.get(k);
    if (!w) this.windows.set(k, (w = { requests: 0, tokens: 0 }));
    return w;
  }

  count(fragment: string): number {
    return this.calls.filter((c) => c.sql.includes(fragment)).length;
  }

  inFlight(token: number): number {
    return [...this.inflight.values()].filter((t) => t === token).length;
  }

  // async: the body runs synchronously up to the first await, so fire-and-forget statements land at once.
  async query(sql: string, params: unknown[] = []): Promise<{ rows: any[] }> {
    this.calls.push({ sql, params });
    if (this.failOn && sql.includes(this.failOn)) {
      this.failOn = null;
      throw new Error('connection reset');
    }
    if (sql.includes('limits_take_requests')) {
      if (this.gate) await this.gate;
      const [token, minute, rpm, want] = params as number[];
      const w = this.window(token, minute);
      const granted = Math.max(0, Math.min(want, rpm - w.requests));
      w.requests += granted;
      return { rows: [{ o_granted: granted, o_requests: w.requests }] };
    }
    if (sql.includes('limits_admit')) {
      const [token, minute, rpm, tpm] = params as number[];
      const w = this.window(token, minute);
      const admitted = (rpm === 0 || w.requests < rpm) && (tpm === 0 || w.tokens < tpm);
      if (admitted) w.requests++;
      // BIGINT comes back from pg as a string.
      return { rows: [{ o_admitted: admitted, o_requests: w.requests, o_tokens: String(w.tokens) }] };
    }
    if (sql.includes('limits_acquire_slot')) {
      const [token, slot, limit] = params as [number, string, number];
      const n = this.inFlight(token);
      if (n >= limit) return { rows: [{ o_acquired: false, o_in_flight: n }] };
      this.inflight.set(slot, token);
      return { rows: [{ o_acquired: true, o_in_flight: n + 1 }] };
    }
    if (sql.startsWith('UPDATE key_rate_windows SET requests = GREATEST')) {
      const [token, minute, n] = params as number[];
      const w = this.window(token, minute);
      w.requests = Math.max(w.requests - n, 0);
      return { rows: [] };
    }
    if (sql.startsWith('INSERT INTO key_rate_windows')) {
      const [token, minute, tokens] = params as number[];
      this.window(token, minute).tokens += tokens;
      return { rows: [] };
    }
    if (sql.startsWith('DELETE FROM key_rate_windows WHERE minute <')) {
      for (const k of this.windows.keys()) if (Number(k.split(':')[1]) < (params[0] as number)) this.windows.delete(k);
      return { rows: [] };
    }
    if (sql === 'DELETE FROM key_inflight WHERE slot = $1') {
      this.inflight.delete(params[0] as string);
      return { rows: [] };
    }
    if (sql.startsWith('DELETE FROM key_inflight WHERE slot = ANY')) {
      for (const s of params[0] as string[]) this.inflight.delete(s);
      return { rows: [] };
    }
    if (sql.startsWith('UPDATE key_inflight SET expires_at')) return { rows: [] };
    if (sql.includes('AS in_flight')) {
      const [token, minute] = params as number[];
      const w = this.windows.get(`${token}:${minute}`);
      return { rows: [{ requests: w ? w.requests : null, tokens: w ? String(w.tokens) : null, in_flight: this.inFlight(token) }] };
    }
    throw new Error(`FakeDb: unexpected SQL ${sql}`);
  }

  get pool(): Pool {
    return this as unknown as Pool;
  }
}

/** Lets every pending promise callback run (the fake answers on microtasks only). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

const MINUTE = 29_000_000; // some minute since the epoch (2025)
const at = (minute: number, ms = 0) => minute * 60_000 + ms;

describe('request permits (rpm taken in advance)', () => {
  let db: FakeDb;
  let permits: RequestPermits;
  beforeEach(() => {
    db = new FakeDb();
    permits = new RequestPermits(db.pool, () => at(MINUTE));
  });
  afterEach(() => permits.close());

  it('takes a sixteenth of what is left in one trip and admits the next requests from memory', async () => {
    // rpm 64: the first trip asks for floor(64 / 16) = 4.
    expect(await permits.take(1, MINUTE, 64)).toEqual({ requests: 1 });
    expect(db.calls).toEqual([{ sql: 'SELECT * FROM limits_take_requests($1, $2, $3, $4)', params: [1, MINUTE, 64, 4] }]);
    expect(permits.unused(1, MINUTE)).toBe(3);
    expect(await permits.take(1, MINUTE, 64)).toEqual({ requests: 2 });
    expect(await permits.take(1, MINUTE, 64)).toEqual({ requests: 3 });
    expect(await permits.take(1, MINUTE, 64)).toEqual({ requests: 4 });
    expect(db.count('limits_take_requests')).toBe(1);
    // The second trip asks for floor((64 - 4) / 16) = 3.
    expect(await permits.take(1, MINUTE, 64)).toEqual({ requests: 5 });
    expect(db.calls[1].params).toEqual([1, MINUTE, 64, 3]);
    // unused() is of the key's current minute only.
    expect(permits.unused(1, MINUTE)).toBe(2);
    expect(permits.unused(1, MINUTE + 1)).toBe(0);
    expect(permits.unused(2, MINUTE)).toBe(0);
  });

  it('asks for at most 64 at once and at least one', async () => {
    await permits.take(1, MINUTE, 100_000);
    await permits.take(2, MINUTE, 5);
    expect(db.calls.map((c) => c.params[3])).toEqual([64, 1]);
  });

  it('grants exactly rpm requests in a minute, then null; what other replicas took counts too', async () => {
    // Another replica already counted 10 of the 40.
    db.window(1, MINUTE).requests = 10;
    const grants: Array<number | null> = [];
    for (let i = 0; i < 35; i++) grants.push((await permits.take(1, MINUTE, 40))?.requests ?? null);
    expect(grants.slice(0, 30)).toEqual(Array.from({ length: 30 }, (_, i) => 11 + i));
    expect(grants.slice(30)).toEqual([null, null, null, null, null]);
    expect(db.window(1, MINUTE).requests).toBe(40);
    // The first trip asks floor(40 / 16) = 2 (it knows of no count yet), then floor((40 - 12) / 16) = 1 at a time;
    // past the limit every request still asks PostgreSQL (another replica may have given permits back).
    expect(db.calls.map((c) => c.params[3])).toEqual([2, ...Array(33).fill(1)]);
  });

  it('one trip per key at a time: concurrent requests wait for it and take from what it brought', async () => {
    let open!: () => void;
    db.gate = new Promise<void>((resolve) => (open = resolve));
    const pending = Array.from({ length: 10 }, () => permits.take(1, MINUTE, 64));
    const otherKey = permits.take(2, MINUTE, 64);
    await settle();
    // Ten requests of key 1, one trip; key 2 is not held up behind it (its own trip).
    expect(db.calls.map((c) => c.params[0])).toEqual([1, 2]);
    db.gate = null;
    open();
    const grants = await Promise.all(pending);
    expect(grants.map((g) => g?.requests)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await otherKey).toEqual({ requests: 1 });
    // 4 + 3 + 3 (floor(60/16), floor(57/16)) covered ten requests in three trips of key 1.
    expect(db.calls.filter((c) => c.params[0] === 1).map((c) => c.params[3])).toEqual([4, 3, 3]);
    expect(db.window(1, MINUTE).requests).toBe(10);
  });

  it('a trip that brings nothing refuses every request waiting on it, without a trip each', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, () => permits.take(1, MINUTE, 3)));
    expect(results.filter((r) => r !== null)).toHaveLength(3);
    expect(results.slice(3)).toEqual([null, null, null]);
    // Three trips of one permit, one that came back empty for the three left waiting.
    expect(db.calls.map((c) => c.params[3])).toEqual([1, 1, 1, 1]);
  });

  it('a new minute takes afresh; the ended minute\'s unused permits lapse (not given back)', async () => {
    await permits.take(1, MINUTE, 64);
    expect(permits.unused(1, MINUTE)).toBe(3);
    expect(await permits.take(1, MINUTE + 1, 64)).toEqual({ requests: 1 });
    expect(db.calls[1].params).toEqual([1, MINUTE + 1, 64, 4]);
    expect(permits.unused(1, MINUTE)).toBe(0);
    expect(permits.unused(1, MINUTE + 1)).toBe(3);
    expect(db.window(1, MINUTE).requests).toBe(4);
    expect(db.count('GREATEST')).toBe(0);
  });

  it('a minute used up admits again in the next', async () => {
    for (let i = 0; i < 2; i++) expect(await permits.take(1, MINUTE, 2)).not.toBeNull();
    expect(await permits.take(1, MINUTE, 2)).toBeNull();
    expect(await permits.take(1, MINUTE + 1, 2)).toEqual({ requests: 1 });
  });

  it('close() gives every unused permit back at once, key by key', async () => {
    await permits.take(1, MINUTE, 64);
    await permits.take(2, MINUTE, 160); // asks 10, uses 1
    await permits.take(3, MINUTE, 1); // asks 1, uses 1: nothing to give back
    await permits.close();
    expect(db.calls.filter((c) => c.sql.includes('GREATEST')).map((c) => c.params)).toEqual([
      [1, MINUTE, 3],
      [2, MINUTE, 9],
    ]);
    expect(db.window(1, MINUTE).requests).toBe(1);
    expect(db.window(2, MINUTE).requests).toBe(1);
    expect(db.window(3, MINUTE).requests).toBe(1);
    expect(permits.unused(1, MINUTE)).toBe(0);
  });

  it('a failed trip rejects the request and leaves no trip stuck "on its way"', async () => {
    db.failOn = 'limits_take_requests';
    await expect(permits.take(1, MINUTE, 64)).rejects.toThrow('connection reset');
    expect(await permits.take(1, MINUTE, 64)).toEqual({ requests: 1 });
  });
});

describe('request permits: idle give-back (fake timers: idleness is Date.now(), minutes the injected clock)', () => {
  let db: FakeDb;
  let clock: number;
  let permits: RequestPermits;
  let errors: unknown[];
  beforeEach(() => {
    // setImmediate stays real: settle() flushes the fake database's answers.
    jest.useFakeTimers({ now: at(MINUTE, 1_000), doNotFake: ['setImmediate'] });
    db = new FakeDb();
    clock = at(MINUTE, 1_000);
    errors = [];
    permits = new RequestPermits(db.pool, () => clock, (e) => errors.push(e));
  });
  afterEach(async () => {
    await permits.close();
    jest.useRealTimers();
  });

  it('unused permits go back after 500 ms without use, then the sweep stops', async () => {
    await permits.take(1, MINUTE, 64);
    expect(db.window(1, MINUTE).requests).toBe(4);
    await jest.advanceTimersByTimeAsync(499);
    expect(permits.unused(1, MINUTE)).toBe(3);
    expect(db.count('GREATEST')).toBe(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(db.calls.filter((c) => c.sql.includes('GREATEST')).map((c) => c.params)).toEqual([[1, MINUTE, 3]]);
    expect(db.window(1, MINUTE).requests).toBe(1);
    expect(permits.unused(1, MINUTE)).toBe(0);
    // Nothing left to watch: the interval is cleared rather than ticking forever.
    expect(jest.getTimerCount()).toBe(0);
  });

  it('each use restarts the idle wait', async () => {
    await permits.take(1, MINUTE, 64);
    await jest.advanceTimersByTimeAsync(100);
    await permits.take(1, MINUTE, 64);
    await jest.advanceTimersByTimeAsync(400); // the sweep at 500 ms: 400 ms since the use
    expect(permits.unused(1, MINUTE)).toBe(2);
    expect(db.count('GREATEST')).toBe(0);
    await jest.advanceTimersByTimeAsync(250); // the sweep at 750 ms: 650 ms since the use
    expect(db.calls.filter((c) => c.sql.includes('GREATEST')).map((c) => c.params)).toEqual([[1, MINUTE, 2]]);
  });

  it('permits of a minute that ended are dropped by the sweep, not given back', async () => {
    await permits.take(1, MINUTE, 64);
    clock = at(MINUTE + 1);
    await jest.advanceTimersByTimeAsync(250);
    expect(permits.unused(1, MINUTE)).toBe(0);
    expect(db.count('GREATEST')).toBe(0);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('a failed give-back goes to onError, not to an unhandled rejection', async () => {
    await permits.take(1, MINUTE, 64);
    db.failOn = 'GREATEST';
    await jest.advanceTimersByTimeAsync(500);
    await settle();
    expect(errors).toEqual([expect.objectContaining({ message: 'connection reset' })]);
  });
});

describe('key rate limiter', () => {
  let db: FakeDb;
  let clock: number;
  let limited: Array<[number, LimitKind]>;
  let limiter: KeyRateLimiter;
  const limits = (l: Partial<KeyLimits>): KeyLimits => ({ ...NO_LIMITS, ...l });
  beforeEach(() => {
    db = new FakeDb();
    // 45.5 s into the minute: 14.5 s left, 15 whole seconds.
    clock = at(MINUTE, 45_500);
    limited = [];
    limiter = new KeyRateLimiter(db.pool, { now: () => clock, onLimited: (id, kind) => limited.push([id, kind]) });
  });
  afterEach(() => limiter.close());

  const refusal = async (p: Admission | Promise<Admission>): Promise<KeyLimitError> => {
    const err = await Promise.resolve(p).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(KeyLimitError);
    return err as KeyLimitError;
  };

  it('a key without limits costs no query', async () => {
    // At once, not even a promise.
    expect(limiter.admit(1, NO_LIMITS)).toBe(UNLIMITED);
    expect(db.calls).toEqual([]);
  });

  it('rpm alone: admitted from permits, with OpenAI\'s headers; over the limit a 429 with Retry-After to the minute\'s end', async () => {
    const a = await limiter.admit(1, limits({ rpm: 2 }));
    expect(a.headers).toEqual({ 'x-ratelimit-limit-requests': '2', 'x-ratelimit-remaining-requests': '1', 'x-ratelimit-reset-requests': '15s' });
    expect(db.count('limits_take_requests')).toBe(1);
    expect(db.count('limits_admit')).toBe(0);
    expect((await limiter.admit(1, limits({ rpm: 2 }))).headers['x-ratelimit-remaining-requests']).toBe('0');

    clock = at(MINUTE, 50_000);
    const err = await refusal(limiter.admit(1, limits({ rpm: 2 })));
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err).toMatchObject({ kind: 'requests', retryAfterSeconds: 10, status: 429, code: 'rate_limit_exceeded' });
    expect(err.message).toBe("Rate limit reached: this key's requests per minute are used up; retry in 10s");
    expect(err.headers).toEqual({ 'x-ratelimit-limit-requests': '2', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '10s' });
    expect(limited).toEqual([[1, 'requests']]);

    // The next minute admits again.
    clock = at(MINUTE + 1, 0);
    const next = await limiter.admit(1, limits({ rpm: 2 }));
    expect(next.headers['x-ratelimit-reset-requests']).toBe('60s');
    expect(next.headers['x-ratelimit-remaining-requests']).toBe('1');
  });

  it('Retry-After is whole seconds to the minute\'s end, rounded up, never 0', async () => {
    const retryAfterAt = async (ms: number) => {
      const l = new KeyRateLimiter(new FakeDb().pool, { now: () => at(MINUTE, ms) });
      await l.admit(1, limits({ rpm: 1 }));
      const err = await refusal(l.admit(1, limits({ rpm: 1 })));
      await l.close();
      return err.retryAfterSeconds;
    };
    expect(await retryAfterAt(0)).toBe(60);
    expect(await retryAfterAt(58_001)).toBe(2);
    expect(await retryAfterAt(58_600)).toBe(2); // 1.4 s left: rounded up, not to the nearest
    expect(await retryAfterAt(59_000)).toBe(1);
    expect(await retryAfterAt(59_999)).toBe(1);
  });

  it('tpm: one limits_admit call; admits while the minute\'s billed tokens are under the limit', async () => {
    const a = await limiter.admit(1, limits({ rpm: 100, tpm: 1000 }));
    expect(db.count('limits_admit')).toBe(1);
    expect(db.count('limits_take_requests')).toBe(0);
    expect(a.headers).toEqual({
      'x-ratelimit-limit-requests': '100',
      'x-ratelimit-remaining-requests': '99',
      'x-ratelimit-reset-requests': '15s',
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': '1000',
      'x-ratelimit-reset-tokens': '15s',
    });
    a.billedTokens(999);
    // Tokens count as the call settles; 999 < 1000 still admits (one large call may overshoot).
    const b = await limiter.admit(1, limits({ rpm: 100, tpm: 1000 }));
    expect(b.headers['x-ratelimit-remaining-tokens']).toBe('1');
    b.billedTokens(5);
    const err = await refusal(limiter.admit(1, limits({ rpm: 100, tpm: 1000 })));
    expect(err).toMatchObject({ kind: 'tokens', retryAfterSeconds: 15 });
    expect(err.message).toContain('tokens per minute are used up');
    expect(err.headers['x-ratelimit-remaining-tokens']).toBe('0');
    expect(limited).toEqual([[1, 'tokens']]);
    // A refusal is not counted as a request.
    expect(db.window(1, MINUTE)).toEqual({ requests: 2, tokens: 1004 });
  });

  it('billed tokens count in the minute the call settles in; none or negative count nothing', async () => {
    const a = await limiter.admit(1, limits({ tpm: 1000 }));
    expect(a.headers).not.toHaveProperty('x-ratelimit-limit-requests');
    const before = db.calls.length;
    a.billedTokens(0);
    a.billedTokens(-3);
    expect(db.calls.length).toBe(before);
    clock = at(MINUTE + 1, 2_000);
    a.billedTokens(7);
    expect(db.window(1, MINUTE + 1).tokens).toBe(7);
    expect(db.window(1, MINUTE).tokens).toBe(0);
    // rpm alone has no token counting at all.
    const r = await limiter.admit(2, limits({ rpm: 10 }));
    const n = db.calls.length;
    r.billedTokens(50);
    expect(db.calls.length).toBe(n);
  });

  it('with both limits, used-up requests are reported as kind requests', async () => {
    await limiter.admit(1, limits({ rpm: 1, tpm: 1000 }));
    expect(await refusal(limiter.admit(1, limits({ rpm: 1, tpm: 1000 })))).toMatchObject({ kind: 'requests' });
  });

  it('max concurrency: admits up to the limit, refuses the next (Retry-After 1), and a release frees a slot once', async () => {
    const c = limits({ concurrency: 2 });
    const a = await limiter.admit(1, c);
    const b = await limiter.admit(1, c);
    expect(a.headers).toEqual({});
    expect(db.calls[0].params.slice(2)).toEqual([2, SLOT_TTL_SECONDS]);
    const err = await refusal(limiter.admit(1, c));
    expect(err).toMatchObject({ kind: 'concurrency', retryAfterSeconds: 1, headers: {} });
    expect(err.message).toContain('in flight');
    expect(limited).toEqual([[1, 'concurrency']]);
    expect(db.inFlight(1)).toBe(2);
    // Another key has its own slots.
    await limiter.admit(2, c);

    a.release();
    a.release();
    expect(db.count('DELETE FROM key_inflight WHERE slot = $1')).toBe(1);
    expect(db.inFlight(1)).toBe(1);
    const d = await limiter.admit(1, c);
    expect(db.inFlight(1)).toBe(2);
    b.release();
    d.release();
    expect(db.inFlight(1)).toBe(0);
  });

  it('a request refused for concurrency uses up none of the minute\'s requests; one refused for requests frees its slot', async () => {
    const l = limits({ rpm: 1, concurrency: 1 });
    const a = await limiter.admit(1, l);
    expect(a.headers['x-ratelimit-remaining-requests']).toBe('0');
    await refusal(limiter.admit(1, l));
    expect(db.count('limits_take_requests')).toBe(1);
    a.release();
    expect(await refusal(limiter.admit(1, l))).toMatchObject({ kind: 'requests' });
    expect(db.inFlight(1)).toBe(0);
  });

  it('a database failure at admission frees the slot and propagates', async () => {
    db.failOn = 'limits_admit';
    await expect(limiter.admit(1, limits({ tpm: 10, concurrency: 1 }))).rejects.toThrow('connection reset');
    expect(db.inFlight(1)).toBe(0);
  });

  it('held slots are renewed every 10 s while any is live', async () => {
    jest.useFakeTimers();
    try {
      const a = await limiter.admit(1, limits({ concurrency: 1 }));
      const slot = db.calls[0].params[1];
      await jest.advanceTimersByTimeAsync(10_000);
      const renewals = db.calls.filter((c) => c.sql.startsWith('UPDATE key_inflight'));
      expect(renewals.map((c) => c.params)).toEqual([[[slot], SLOT_TTL_SECONDS]]);
      a.release();
      await jest.advanceTimersByTimeAsync(10_000);
      expect(db.count('UPDATE key_inflight')).toBe(1);
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });

  it('drops the windows of minutes before the last once per minute', async () => {
    await limiter.admit(1, limits({ tpm: 10 }));
    await limiter.admit(1, limits({ tpm: 10 }));
    expect(db.calls.filter((c) => c.sql.startsWith('DELETE FROM key_rate_windows')).map((c) => c.params)).toEqual([[MINUTE - 1]]);
    clock = at(MINUTE + 1, 1);
    await limiter.admit(1, limits({ tpm: 10 }));
    expect(db.count('DELETE FROM key_rate_windows')).toBe(2);
  });

  it('usage() counts requests, not this process\'s unused permits', async () => {
    await limiter.admit(1, limits({ rpm: 64 })); // takes 4, uses 1
    await limiter.admit(1, limits({ concurrency: 3 }));
    expect(db.window(1, MINUTE).requests).toBe(4);
    expect(await limiter.usage(1)).toEqual({ requests: 1, tokens: 0, inFlight: 1, resetSeconds: 15 });
    expect(await limiter.usage(9)).toEqual({ requests: 0, tokens: 0, inFlight: 0, resetSeconds: 15 });
  });

  it('close() gives the permits back and frees every slot', async () => {
    await limiter.admit(1, limits({ rpm: 64 }));
    await limiter.admit(2, limits({ concurrency: 5 }));
    await limiter.admit(2, limits({ concurrency: 5 }));
    await limiter.close();
    expect(db.window(1, MINUTE).requests).toBe(1);
    expect(db.inflight.size).toBe(0);
  });
});

describe('key limits in force', () => {
  const r = validateGatewayConfig(
    {
      channels: [{ name: 'c', type: 'openai', base_url: 'https://x.example/v1', key: 'k', models: ['m'], groups: ['default', 'free'] }],
      models: { m: { input_per_1m: 1, output_per_1m: 1 } },
      groups: { free: { rpm_limit: 10, tpm_limit: 1000 }, default: { max_concurrency: 4 } },
    },
    'test',
  );
  if (!r.ok) throw new Error(r.problems.join('\n'));
  const config = r.config;

  it('each non-zero value of the key\'s own wins, else its group\'s default', () => {
    expect(effectiveLimits({ rpmLimit: 0, tpmLimit: 0, maxConcurrency: 0 }, 'free', config)).toEqual({ rpm: 10, tpm: 1000, concurrency: 0 });
    expect(effectiveLimits({ rpmLimit: 99, tpmLimit: 0, maxConcurrency: 2 }, 'free', config)).toEqual({ rpm: 99, tpm: 1000, concurrency: 2 });
    // '' is the default group.
    expect(effectiveLimits({ rpmLimit: 0, tpmLimit: 0, maxConcurrency: 0 }, '', config)).toEqual({ rpm: 0, tpm: 0, concurrency: 4 });
  });

  it('no limit anywhere is NO_LIMITS itself (the limiter\'s no-query fast path)', () => {
    expect(effectiveLimits({ rpmLimit: 0, tpmLimit: 0, maxConcurrency: 0 }, 'unknown-group', config)).toBe(NO_LIMITS);
    expect(Object.isFrozen(NO_LIMITS)).toBe(true);
  });
});
