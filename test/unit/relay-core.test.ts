import { ChannelCooldown } from '../../src/domain/relay/cooldown';
import { estimateTokens } from '../../src/domain/relay/metering';
import { orderCandidates } from '../../src/domain/relay/router';
import type { ChannelConfig } from '../../src/gateway-config/schema';
import { sanitizeUpstreamMessage } from '../../src/domain/ports/upstream-error';
import { parseSse } from '../../src/upstream/sse';
import { countTokens } from '../../src/simulator';

const ch = (name: string, priority: number, weight = 1) => ({ name, priority, weight }) as ChannelConfig;
const none = { isCooling: () => false };

describe('relay core units', () => {
  it('router: priority first, weighted within a priority, cooled channels skipped unless all are', () => {
    const chs = [ch('low', 0), ch('a', 10, 3), ch('b', 10, 1)];
    expect(orderCandidates(chs, none, () => 0).map((c) => c.name)).toEqual(['a', 'b', 'low']);
    expect(orderCandidates(chs, none, () => 0.99).map((c) => c.name)).toEqual(['b', 'a', 'low']);
    let firstA = 0;
    let seed = 1;
    const rnd = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    for (let i = 0; i < 4000; i++) if (orderCandidates(chs, none, rnd)[0].name === 'a') firstA++;
    expect(firstA / 4000).toBeGreaterThan(0.7);
    expect(firstA / 4000).toBeLessThan(0.8);
    expect(orderCandidates(chs, { isCooling: (n) => n === 'a' }, () => 0).map((c) => c.name)).toEqual(['b', 'low']);
    expect(orderCandidates(chs, { isCooling: () => true }, () => 0).map((c) => c.name)).toEqual(['a', 'b', 'low']);
  });

  it('cooldown: N consecutive failures start the window; a success resets the count', () => {
    let now = 1000;
    const cd = new ChannelCooldown({ failures: 3, cooldownMs: 500, now: () => now });
    cd.recordFailure('x');
    cd.recordFailure('x');
    cd.recordSuccess('x');
    cd.recordFailure('x');
    cd.recordFailure('x');
    expect(cd.isCooling('x')).toBe(false);
    cd.recordFailure('x');
    expect(cd.isCooling('x')).toBe(true);
    now += 501;
    expect(cd.isCooling('x')).toBe(false);
  });

  it('SSE: events split anywhere, CRLF, comments, multi-byte characters across chunks', async () => {
    const text = ': hi\r\ndata: {"a":"é"}\r\n\r\ndata: [DONE]\n\n';
    const bytes = Buffer.from(text);
    async function* pieces() {
      for (let i = 0; i < bytes.length; i += 3) yield bytes.subarray(i, i + 3);
    }
    const out = [];
    for await (const ev of parseSse(pieces())) out.push(ev.data);
    expect(out).toEqual(['{"a":"é"}', '[DONE]']);
  });

  it('local token estimate is never below the simulator count', () => {
    for (const s of ['hello, world', 'a,b,c,d', 'internationalization', '日本語のテキスト 😀', 'x'.repeat(1000), '  spaced   out  ']) {
      expect(estimateTokens(s)).toBeGreaterThanOrEqual(countTokens(s));
    }
  });

  it('upstream messages lose hosts, URLs and keys', () => {
    const m = sanitizeUpstreamMessage('bad key sk-abcdef123456 at http://10.0.0.5:9000/v1 via 10.0.0.5:9000 secret-key-x', ['secret-key-x']);
    expect(m).not.toMatch(/10\.0\.0\.5|sk-abc|http|secret-key-x/);
  });
});
