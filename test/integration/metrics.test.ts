// test modes: postgres, embedded
import { startGateway } from '../helpers/harness';
import { ledgerOf, newKey, startRelayFixture, type RelayFixture } from '../helpers/relay-fixture';

/** Issue 9 §2: `GET /metrics` in Prometheus text format moves with traffic; METRICS_TOKEN guards it. */
describe('GET /metrics', () => {
  let fx: RelayFixture;
  beforeAll(async () => {
    fx = await startRelayFixture();
  });
  afterAll(async () => {
    await fx.close();
  });

  const scrape = async () => {
    const r = await fetch(`${fx.gw.baseUrl}/metrics`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(r.headers.get('x-request-id')).toBeTruthy();
    return r.text();
  };
  /** The value of one series, 0 when absent. */
  const value = (text: string, series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line ? Number(line.slice(series.length + 1)) : 0;
  };
  const ask = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'count me' }], max_tokens: 8 };

  it('requests, upstream attempts and billed credits move with traffic; no key material in any label', async () => {
    const before = await scrape();
    const { client, key, record } = await newKey(fx.gw);
    for (let i = 0; i < 3; i++) await client.chat.completions.create(ask);
    await fx.gw.services.api.billing.barrier();
    const after = await scrape();

    const requests = 'gateway_http_request_duration_seconds_count{family="openai",status="200",model="gpt-4o-mini"}';
    expect(value(after, requests) - value(before, requests)).toBe(3);
    const upstream = 'gateway_upstream_request_duration_seconds_count{channel="primary",outcome="ok"}';
    expect(value(after, upstream) - value(before, upstream)).toBe(3);
    const billed = (await ledgerOf(fx.gw, record.id)).reduce((s, r) => s + r.quota, 0);
    expect(billed).toBeGreaterThan(0);
    const credits = 'gateway_credits_billed_total{source="relay"}';
    expect(value(after, credits) - value(before, credits)).toBe(billed);
    expect(after).toMatch(/^gateway_quota_holds_outstanding \d+$/m);
    expect(after).toContain('# TYPE gateway_video_tasks gauge');
    expect(after).not.toContain(key);
    expect(after).not.toContain(record.key);
    expect(after).not.toContain('key-primary');
  });

  it('a failed upstream attempt is counted by channel and kind; an unknown model is labelled other', async () => {
    const before = await scrape();
    const { client } = await newKey(fx.gw);
    fx.primary.addFault({ kind: 'status', status: 503, count: 1 });
    await client.chat.completions.create(ask);
    await client.chat.completions.create({ ...ask, model: 'no-such-model-anywhere' }).catch(() => undefined);
    const after = await scrape();
    const errors = after.split('\n').filter((l) => l.startsWith('gateway_upstream_errors_total{channel="primary"'));
    expect(errors.reduce((s, l) => s + Number(l.split(' ')[1]), 0) - before.split('\n').filter((l) => l.startsWith('gateway_upstream_errors_total{channel="primary"')).reduce((s, l) => s + Number(l.split(' ')[1]), 0)).toBe(1);
    expect(after).toMatch(/gateway_http_request_duration_seconds_count\{family="openai",status="\d+",model="other"\} \d+/);
    expect(after).not.toContain('no-such-model-anywhere');
  });

  it('writes one JSON access line per request: method, route, status, latency, model, key id; never the key', async () => {
    const { client, key, record } = await newKey(fx.gw);
    const before = fx.gw.logs.lines.length;
    const res = await client.chat.completions.create(ask).withResponse();
    const id = res.response.headers.get('x-request-id');
    const lines = fx.gw.logs.lines.slice(before).map((l) => JSON.parse(l) as Record<string, unknown>);
    const access = lines.find((l) => l.msg === 'request completed' && l.request_id === id);
    expect(access).toMatchObject({ method: 'POST', url: '/v1/chat/completions', status: 200, model: 'gpt-4o-mini', key_id: record.id });
    expect(typeof access?.ms).toBe('number');
    expect(lines.every((l) => typeof l.request_id === 'string' || l.msg !== 'request completed')).toBe(true);
    const text = fx.gw.logs.lines.slice(before).join('');
    expect(text).not.toContain(key.slice(3));
  });

  it('with METRICS_TOKEN, only its bearer reads the metrics', async () => {
    const token = 'metrics-token-0123456789abcdef';
    const gw = await startGateway({ metricsToken: token });
    try {
      const none = await fetch(`${gw.baseUrl}/metrics`);
      expect(none.status).toBe(401);
      expect(((await none.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
      const wrong = await fetch(`${gw.baseUrl}/metrics`, { headers: { authorization: 'Bearer metrics-token-0123456789abcdeX' } });
      expect(wrong.status).toBe(401);
      const right = await fetch(`${gw.baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(right.status).toBe(200);
      expect(await right.text()).toContain('gateway_http_request_duration_seconds');
    } finally {
      await gw.close();
    }
  });
});
