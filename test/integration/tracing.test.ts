// test modes: postgres, embedded
import { startTracing, type Tracing } from '../../src/tracing';
import { http, startGateway } from '../helpers/harness';
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver';
import { newKey } from '../helpers/relay-fixture';
import { pollUntil, startVideoFixture, VIDEO_KEY, type VideoFixture } from '../helpers/video-fixture';

/**
 * Issue 9 §2: with OTEL_EXPORTER_OTLP_ENDPOINT set, one trace runs from the HTTP request through the Temporal
 * workflow and its activities to each upstream call, exported to an OTLP/HTTP receiver (here in-process), with no
 * key material in any attribute.
 */
describe('OpenTelemetry traces', () => {
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let tracing: Tracing;
  let fx: VideoFixture;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    tracing = await startTracing({ endpoint: receiver.url, serviceName: 'gateway-under-test' });
    fx = await startVideoFixture({ tracing });
  }, 120_000);
  afterAll(async () => {
    await fx?.close();
    await tracing?.shutdown();
    await receiver?.close();
  });

  /** The chain of ancestors of a span within its trace, nearest first. */
  const ancestors = (span: ReceivedSpan, spans: ReceivedSpan[]) => {
    const out: ReceivedSpan[] = [];
    for (let p = spans.find((s) => s.spanId === span.parentSpanId); p; p = spans.find((s) => s.spanId === p!.parentSpanId)) out.push(p);
    return out;
  };

  it('a video submit: HTTP span -> workflow start -> workflow run -> activities -> upstream calls, one trace', async () => {
    const { key } = await newKey(fx.gw);
    const created = await http(fx.gw.baseUrl, 'POST', '/v1/videos', { auth: key, body: { model: 'video-3.1', prompt: 'trace me' } });
    expect(created.status).toBe(200);
    const requestId = created.headers.get('x-request-id');
    await pollUntil(fx.gw, `/v1/videos/${created.body.id}`, key, (b) => b.status === 'completed');

    let server: ReceivedSpan | undefined;
    let inTrace: ReceivedSpan[] = [];
    for (let i = 0; i < 100; i++) {
      await tracing.flush();
      server = receiver.spans.find((s) => s.attributes['gateway.request_id'] === requestId);
      inTrace = server ? receiver.spans.filter((s) => s.traceId === server!.traceId) : [];
      if (inTrace.some((s) => s.name === 'RunActivity:endVideoTask') && inTrace.some((s) => s.name === 'RunWorkflow:videoTaskWorkflow')) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(server).toMatchObject({ name: 'POST /v1/videos', kind: 2, service: 'gateway-under-test', attributes: { 'http.route': '/v1/videos', 'http.response.status_code': '200' } });
    const names = inTrace.map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining([
      'StartWorkflow:videoTaskWorkflow',
      'RunWorkflow:videoTaskWorkflow',
      'RunActivity:runVideoUpstream',
      'RunActivity:endVideoTask',
      'upstream POST video-a',
      'upstream GET video-a',
    ]));
    // Each upstream call hangs off an activity, which hangs off the workflow, which the request started.
    const upstream = inTrace.find((s) => s.name === 'upstream POST video-a')!;
    const chain = ancestors(upstream, inTrace).map((s) => s.name);
    expect(chain[0]).toBe('RunActivity:runVideoUpstream');
    expect(chain).toContain('StartWorkflow:videoTaskWorkflow');
    expect(chain.at(-1)).toBe('POST /v1/videos');
    expect(upstream.attributes).toMatchObject({ 'gateway.channel': 'va', 'gateway.channel_type': 'video-a', 'http.request.method': 'POST' });

    // No key material anywhere in what was exported: not the API key, not the upstream's.
    const everything = receiver.bodies.join('\n');
    expect(everything).not.toContain(key.slice(3));
    expect(everything).not.toContain(VIDEO_KEY);
    expect(everything).not.toContain(fx.sim.url.replace('http://', ''));
  }, 120_000);

  it('a chat completion: the upstream attempt is a child of the request span', async () => {
    const gw = await startGateway({ tracing });
    try {
      const { client } = await newKey(gw);
      const res = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }).withResponse();
      const requestId = res.response.headers.get('x-request-id');
      let server: ReceivedSpan | undefined;
      let child: ReceivedSpan | undefined;
      for (let i = 0; i < 50 && !child; i++) {
        await tracing.flush();
        server = receiver.spans.find((s) => s.attributes['gateway.request_id'] === requestId);
        child = server && receiver.spans.find((s) => s.parentSpanId === server!.spanId && s.name.startsWith('upstream '));
        if (!child) await new Promise((r) => setTimeout(r, 100));
      }
      expect(server).toMatchObject({ name: 'POST /v1/chat/completions', attributes: { 'http.response.status_code': '200' } });
      expect(child).toMatchObject({ name: 'upstream openai', kind: 3, traceId: server!.traceId, attributes: { 'gateway.channel': 'simulator' } });
    } finally {
      await gw.close();
    }
  });
});
