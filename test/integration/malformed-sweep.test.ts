// test modes: postgres, embedded
import { http, newAccount, startGateway, TestGateway } from '../helpers/harness';
import { RawOutcome, RawReq, RawResponse, rawRequest, serialize } from '../helpers/raw-http';
import { REQUEST_ID, wireErrorProblems as problemsOf } from '../helpers/wire-errors';

/**
 * "Default install must never fail", section 2: every response, including those to requests Node's HTTP parser
 * rejects, carries x-request-id and its family's error body; nothing is a 5xx and no connection is dropped.
 * Requests are written on raw sockets so they can be truly malformed.
 */

/** mulberry32: a small seeded PRNG, so a failing sweep can be replayed with SWEEP_SEED. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
  return { next, int, pick, chance: (p: number) => next() < p };
}
type Rng = ReturnType<typeof prng>;

interface Route {
  method: string;
  path: string;
}

const FIELDS = ['name', 'remain_quota', 'unlimited_quota', 'group', 'models', 'expired_time', 'status', 'id', 'count', 'grace_seconds', 'username', 'password', 'model', 'messages', 'input'];
// eslint-disable-next-line no-loss-of-precision -- 2^53 + 1 on purpose: a number JSON cannot carry exactly
const ODD_VALUES: unknown[] = [null, true, false, 0, -1, 1.5, 1e300, -9007199254740993, '', 'x', '\u0000', 'é\u202e', 'x'.repeat(300), [], [1, 'a'], {}, { a: { b: [] } }, '1', 'true', '-1'];

function randomJsonBody(rng: Rng): unknown {
  if (rng.chance(0.1)) return rng.pick(ODD_VALUES);
  const body: Record<string, unknown> = {};
  const n = rng.int(5);
  for (let i = 0; i < n; i++) body[rng.pick(FIELDS)] = rng.pick(ODD_VALUES);
  if (rng.chance(0.3)) Object.assign(body, { name: `k${rng.int(1000)}`, remain_quota: rng.int(1000), count: 1 + rng.int(3), status: 1 + rng.int(2), id: rng.int(50), grace_seconds: 0 });
  return body;
}

const ID_SAMPLES = ['1', '0', '-1', '999999999', 'abc', '1e3', '%20', '12345678901234567890', '1.5', 'gpt-4o', 'a/b/c', '%2e%2e'];
const METHOD_GARBAGE = ['FOO', 'GETT', 'get', 'G@T', 'X-Y', '\u0001\u0002', 'POSTX', 'DELET', 'P'];
const KNOWN_METHODS = ['PATCH', 'OPTIONS', 'PROPFIND', 'PURGE', 'MKCOL', 'LINK', 'SEARCH', 'TRACE', 'LOCK', 'REPORT', 'SUBSCRIBE'];
const CONTENT_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/json; charset=latin1', ';;;', 'application/jsonx', '*/*', 'application/json; charset=utf-8'];

type Mutation = (req: RawReq, rng: Rng, ctx: { route: Route }) => void;

function withoutHeader(req: RawReq, name: string) {
  req.headers = req.headers.filter(([n]) => n.toLowerCase() !== name.toLowerCase());
}

/** Each mutation makes one kind of malformed (or merely odd) request; the sweep applies one or two per request. */
const MUTATIONS: Record<string, Mutation> = {
  valid: () => undefined,
  badJson: (req, rng) => {
    req.body = Buffer.from(rng.pick(['{"name":', '{', 'nul', '{"a":1,}', "{'a':1}", '[', '{"a":"\\x"}', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}', 'Infinity']));
  },
  wrongTypes: (req, rng) => {
    req.body = Buffer.from(JSON.stringify(randomJsonBody(rng)));
  },
  hugeHeader: (req, rng) => {
    req.headers.push(['X-Big', 'a'.repeat(16 * 1024 + rng.int(40_000))]);
  },
  manyHeaders: (req, rng) => {
    for (let i = 0; i < 100 + rng.int(400); i++) req.headers.push([`X-H${i}`, 'v'.repeat(rng.int(60))]);
  },
  controlByteInHeader: (req, rng) => {
    req.headers.push(['X-Ctl', `a${String.fromCharCode(rng.pick([0, 1, 8, 11, 12, 27, 127]))}b`]);
  },
  badHeaderName: (req, rng) => {
    req.headers.push([rng.pick(['X(A)', 'X A', 'X:A', '', 'é', 'X\tA']), 'v']);
  },
  obsFold: (req) => {
    req.headers.push(['X-Fold', 'a\r\n b']);
  },
  nonAsciiHeaderValue: (req) => {
    req.headers.push(['X-Latin', Buffer.from([0xc3, 0xa9, 0xff, 0x80])]);
  },
  garbageMethod: (req, rng) => {
    req.method = rng.pick(METHOD_GARBAGE);
  },
  unroutedMethod: (req, rng) => {
    req.method = rng.pick(KNOWN_METHODS);
  },
  nonAsciiPath: (req, rng) => {
    const bytes = rng.pick([[0xc3, 0xa9], [0xff], [0xe2, 0x80, 0xae], [0x80, 0x81]]);
    req.requestLine = Buffer.concat([Buffer.from(`${req.method} ${req.target}`, 'latin1'), Buffer.from(bytes), Buffer.from(` ${req.version}`)]);
  },
  controlByteInPath: (req, rng) => {
    req.target = `${req.target}${String.fromCharCode(rng.pick([0, 1, 9, 127]))}x`;
  },
  badPercent: (req, rng) => {
    req.target = `${req.target.replace(/\/$/, '')}/${rng.pick(['%ff', '%', '%2', '%zz', '%c3%28', '%00'])}`;
  },
  longUrl: (req, rng) => {
    req.target = `${req.target}${req.target.includes('?') ? '&' : '?'}q=${'x'.repeat(rng.pick([2_000, 8_000, 15_000, 70_000]))}`;
  },
  longSegment: (req, rng) => {
    req.target = `${req.target.replace(/\/$/, '')}/${'s'.repeat(rng.pick([200, 5_000, 12_000]))}`;
  },
  duplicateSlashes: (req) => {
    req.target = req.target.replace(/\//g, '//');
  },
  dotSegments: (req, rng) => {
    req.target = rng.pick(['/api/../v1/models', '/v1/./models', '/api/token/./', '/v1/models/..%2f..%2fapi']);
  },
  absoluteForm: (req) => {
    req.target = `http://gateway.example${req.target}`;
  },
  asteriskForm: (req) => {
    req.target = '*';
  },
  badQuery: (req, rng) => {
    req.target = `${req.target.split('?')[0]}?${rng.pick(['p=-1', 'page_size=abc', 'p=1e309', 'status_only=maybe', '%zz=1', 'p=1&p=2', 'a[b]=c', '&&&', '=', 'page_size=100000000'])}`;
  },
  truncatedBody: (req, rng) => {
    const body = req.body ?? Buffer.from('{"name":"x"}');
    req.body = body.subarray(0, rng.int(body.length));
    req.declaredLength = body.length + 1 + rng.int(100);
    req.halfClose = true;
  },
  extraBytesAfterBody: (req) => {
    const body = req.body ?? Buffer.from('{}');
    req.declaredLength = body.length;
    req.body = Buffer.concat([body, Buffer.from('GARBAGE\r\n\r\n')]);
  },
  wrongContentType: (req, rng) => {
    withoutHeader(req, 'content-type');
    req.headers.push(['Content-Type', rng.pick(CONTENT_TYPES)]);
    req.body ??= Buffer.from('name=x&remain_quota=1');
  },
  noContentType: (req) => {
    withoutHeader(req, 'content-type');
  },
  jsonTypeNoBody: (req) => {
    withoutHeader(req, 'content-type');
    req.headers.push(['Content-Type', 'application/json']);
    req.body = null;
  },
  chunkedBody: (req) => {
    req.body ??= Buffer.from('{"name":"chunked"}');
    req.chunked = true;
  },
  badChunk: (req, rng) => {
    req.body = null;
    req.headers.push(['Transfer-Encoding', 'chunked']);
    req.halfClose = true;
    const tail = rng.pick(['zz\r\n{}\r\n0\r\n\r\n', '5\r\n{}\r\n0\r\n\r\n', '2;' + 'e'.repeat(20_000) + '\r\n{}\r\n0\r\n\r\n', '-1\r\n']);
    (req as RawReq & { tail?: string }).tail = tail;
  },
  conflictingLength: (req, rng) => {
    req.headers.push(rng.pick([['Content-Length', '1'], ['Transfer-Encoding', 'chunked'], ['Content-Length', 'abc'], ['Transfer-Encoding', 'gzip']] as Array<[string, string]>));
    req.body ??= Buffer.from('{}');
  },
  oversizedDeclared: (req, rng) => {
    // A Content-Length over the 10 MB limit with only a little of the body sent, then end of input.
    req.body = Buffer.from('{"name":"x"}');
    req.declaredLength = 10 * 1024 * 1024 + 1 + rng.int(50 * 1024 * 1024);
    req.halfClose = true;
  },
  noAuth: (req) => {
    withoutHeader(req, 'authorization');
  },
  badAuth: (req, rng) => {
    withoutHeader(req, 'authorization');
    req.headers.push(['Authorization', rng.pick(['Bearer ', 'Bearer sk-nope', 'sk-' + 'x'.repeat(5000), 'Basic Zm9vOmJhcg==', 'bearer  sk-', '\u00e9\u00ff', 'Bearer sk-\u0080'])]);
  },
  apiKeyHeader: (req, rng) => {
    req.headers.push(['x-api-key', rng.pick(['', 'sk-', 'nope', 'sk-' + 'y'.repeat(200)])]);
  },
  noHost: (req) => {
    withoutHeader(req, 'host');
  },
  http10: (req) => {
    req.version = 'HTTP/1.0';
    withoutHeader(req, 'host');
  },
  badVersion: (req, rng) => {
    req.version = rng.pick(['HTTP/1.2', 'HTTP/2.0', 'HTTP/0.9', 'HTTP/11', 'HTTPS/1.1', 'http/1.1', '']);
  },
  expectContinue: (req) => {
    req.headers.push(['Expect', '100-continue']);
  },
  expectOther: (req, rng) => {
    req.headers.push(['Expect', rng.pick(['200-ok', 'x', ''])]);
  },
  connect: (req, rng) => {
    req.method = 'CONNECT';
    req.target = rng.pick(['gateway.example:443', req.target, '//api//token//']);
  },
  upgrade: (req) => {
    req.headers.push(['Connection', 'Upgrade'], ['Upgrade', 'websocket']);
  },
  bareLf: (req) => {
    req.requestLine = Buffer.from(`${req.method} ${req.target} ${req.version}\n`, 'latin1');
  },
  garbageLine: (req, rng) => {
    req.target = '/';
    req.requestLine = Buffer.from(rng.pick(['\u0000\u0001\u0002', '{"model":"x"}', 'GET', 'GET /', ' / HTTP/1.1', 'GET  / HTTP/1.1']), 'latin1');
  },
};

const MUTATION_NAMES = Object.keys(MUTATIONS);

describe('malformed-input sweep: every response carries x-request-id in its family format', () => {
  let gw: TestGateway;
  let port: number;
  let systemToken: string;
  let apiKey: string;
  let routes: Route[];

  beforeAll(async () => {
    gw = await startGateway();
    port = Number(new URL(gw.baseUrl).port);
    const acct = await newAccount(gw.db);
    systemToken = acct.systemToken;
    const key = await http(gw.baseUrl, 'POST', '/api/token/', { auth: systemToken, body: { name: 'sweep', unlimited_quota: true } });
    expect(key.status).toBe(200);
    apiKey = `sk-${key.body.data.key}`;
    const doc = (await http(gw.baseUrl, 'GET', '/openapi.json')).body;
    routes = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(ops)) routes.push({ method: method.toUpperCase(), path });
    }
    routes.push({ method: 'GET', path: '/openapi.json' }, { method: 'GET', path: '/' }, { method: 'POST', path: '/v1/chat/completions' }, { method: 'POST', path: '/v1/messages' }, { method: 'GET', path: '/api' });
  });
  afterAll(async () => {
    await gw.close();
  });

  async function send(req: RawReq & { tail?: string }, head = req.method === 'HEAD'): Promise<RawOutcome> {
    let payload = serialize(req);
    if (req.tail) payload = Buffer.concat([payload, Buffer.from(req.tail, 'latin1')]);
    return rawRequest(port, payload, { halfClose: req.halfClose, head });
  }

  function baseRequest(route: Route, rng: Rng): RawReq {
    const target = route.path.replace(/\{[^}]+\}/g, () => rng.pick(ID_SAMPLES));
    const headers: Array<[string, string]> = [['Host', `127.0.0.1:${port}`]];
    if (target.startsWith('/api')) headers.push(['Authorization', systemToken]);
    else headers.push(['Authorization', `Bearer ${apiKey}`]);
    const req: RawReq = { method: route.method, target, version: 'HTTP/1.1', headers, body: null };
    if (['POST', 'PUT'].includes(route.method) || rng.chance(0.1)) {
      headers.push(['Content-Type', 'application/json']);
      req.body = Buffer.from(JSON.stringify(randomJsonBody(rng)));
    }
    return req;
  }

  function expectAnswered(outcome: RawOutcome, target: string, head = false): RawResponse {
    if (!outcome.ok) throw new Error(`dropped: ${outcome.reason}; received ${JSON.stringify(outcome.received)}`);
    expect(problemsOf(outcome.response, target, { head })).toEqual([]);
    return outcome.response;
  }

  describe('the cases named in the issue', () => {
    const get = (extra: string, target = '/api/token/'): RawReq => ({
      method: 'GET',
      target,
      version: 'HTTP/1.1',
      headers: [['Host', 'x'], ['Authorization', systemToken], ...(extra ? ([['X-Extra', extra]] as Array<[string, string]>) : [])],
      body: null,
    });

    it('headers over 16 KB: 431 in the family format', async () => {
      const res = expectAnswered(await send(get('a'.repeat(20_000))), '/api/token/');
      expect(res.status).toBe(431);
      expect(JSON.parse(res.body)).toEqual({ success: false, message: 'The request headers are too large' });
      const v1 = expectAnswered(await send(get('a'.repeat(20_000), '/v1/models')), '/v1/models');
      expect(JSON.parse(v1.body).error).toMatchObject({ type: 'invalid_request_error', code: 'headers_too_large' });
    });

    it('a control byte in a header, an unknown method, raw non-ASCII in the path: 400', async () => {
      expect(expectAnswered(await send(get('a\u0001b')), '/api/token/').status).toBe(400);
      expect(expectAnswered(await send({ ...get(''), method: 'FOO' }), '/api/token/').status).toBe(400);
      const nonAscii = { ...get(''), requestLine: Buffer.concat([Buffer.from('GET /api/token/'), Buffer.from([0xc3, 0xa9]), Buffer.from(' HTTP/1.1')]) };
      const res = expectAnswered(await send(nonAscii), '/api/token/');
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toEqual({ success: false, message: 'The request URL is malformed' });
    });

    it('CONNECT is answered (405), not closed', async () => {
      const res = expectAnswered(await send({ ...get(''), method: 'CONNECT', target: 'example.com:443' }), 'example.com:443');
      expect(res.status).toBe(405);
      const mgmt = expectAnswered(await send({ ...get(''), method: 'CONNECT', target: '/api/token/' }), '/api/token/');
      expect(JSON.parse(mgmt.body)).toEqual({ success: false, message: expect.stringMatching(/CONNECT/) });
    });

    it('//api//token// answers in the management format', async () => {
      const res = await http(gw.baseUrl, 'GET', '//api//token//', { auth: systemToken });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ success: false, message: expect.any(String) });
      expect(res.headers.get('x-request-id')).toMatch(REQUEST_ID);
    });

    it('a 20 MB body without Expect: 100-continue gets the 413, not a lost connection', async () => {
      for (const target of ['/api/token/', '/v1/chat/completions']) {
        const body = Buffer.alloc(20 * 1024 * 1024, 'a');
        const req: RawReq = { ...get('', target), method: 'POST', headers: [['Host', 'x'], ['Content-Type', 'application/json'], ['Authorization', systemToken]], body };
        const res = expectAnswered(await send(req), target);
        expect(res.status).toBe(413);
      }
      // Chunked: the limit is only found while reading, after authentication.
      const req: RawReq = { ...get(''), method: 'POST', headers: [['Host', 'x'], ['Content-Type', 'application/json'], ['Authorization', systemToken]], body: Buffer.alloc(20 * 1024 * 1024, 'a'), chunked: true };
      const chunked = expectAnswered(await send(req), '/api/token/');
      expect(chunked.status).toBe(413);
      expect(JSON.parse(chunked.body)).toEqual({ success: false, message: 'The request body is too large' });
    });

    it('DELETE /api/token/{id} with Content-Type: application/json and no body is accepted', async () => {
      const created = await http(gw.baseUrl, 'POST', '/api/token/', { auth: systemToken, body: { name: 'to-delete' } });
      const res = await fetch(`${gw.baseUrl}/api/token/${created.body.data.id}`, {
        method: 'DELETE',
        headers: { authorization: systemToken, 'content-type': 'application/json' },
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ success: true });
      // An empty JSON body is still refused where a body is expected.
      const post = await http(gw.baseUrl, 'POST', '/api/token/', { auth: systemToken, rawBody: '' });
      expect(post.status).toBe(400);
      expect(post.body.message).toMatch(/empty/);
    });

    it('a request with a body that asks for a protocol upgrade is answered 400, not left waiting for its body', async () => {
      for (const target of ['/v1/chat/completions', '/api/token/']) {
        const outcome = await send({
          method: 'POST',
          target,
          version: 'HTTP/1.1',
          headers: [
            ['Host', 'x'],
            ['Authorization', target.startsWith('/v1') ? `Bearer ${apiKey}` : systemToken],
            ['Content-Type', 'application/json'],
            ['Connection', 'Upgrade'],
            ['Upgrade', 'websocket'],
            ['Content-Length', '2'],
          ],
          body: Buffer.from('{}'),
        });
        expect(expectAnswered(outcome, target).status).toBe(400);
      }
      // Without a body the upgrade request is answered as usual.
      const plain = await send({ ...get(''), target: '/healthz', headers: [['Host', 'x'], ['Connection', 'Upgrade'], ['Upgrade', 'h2c']] });
      expect(expectAnswered(plain, '/healthz').status).toBe(200);
    });

    it('a request without Host and an unknown Expect are answered in the family format', async () => {
      const noHost = expectAnswered(await send({ ...get(''), headers: [['Authorization', systemToken]] }), '/api/token/');
      expect(noHost.status).toBe(400);
      const expect417 = expectAnswered(await send({ ...get(''), headers: [['Host', 'x'], ['Expect', 'x']] }), '/api/token/');
      expect(expect417.status).toBe(417);
    });
  });

  it('a seeded sweep of at least 3,000 malformed requests over every route: 0 x 5xx, 0 dropped, all with x-request-id', async () => {
    const seed = Number(process.env.SWEEP_SEED ?? 20260611);
    const total = Number(process.env.SWEEP_REQUESTS ?? 3200);
    const rng = prng(seed);
    const planned: Array<{ req: RawReq; label: string }> = [];
    for (let i = 0; i < total; i++) {
      const route = routes[i % routes.length];
      const req = baseRequest(route, rng);
      const names = [rng.pick(MUTATION_NAMES)];
      if (rng.chance(0.3)) names.push(rng.pick(MUTATION_NAMES));
      for (const name of names) MUTATIONS[name](req, rng, { route });
      // A body shorter than declared is sent as a truncated one (end of input after it); a client that just stops
      // sending is answered by the request timeout, minutes later.
      if (req.declaredLength !== undefined && (req.body?.length ?? 0) < req.declaredLength) req.halfClose = true;
      // So is a body a mutation took away after another declared one in a header of its own.
      const framing = req.headers.find(([k, v]) => /^content-length$/i.test(k) || (/^transfer-encoding$/i.test(k) && /chunked/i.test(String(v))));
      if (framing && !req.body && !req.chunked) req.halfClose = true;
      planned.push({ req, label: `${route.method} ${route.path} [${names.join('+')}]` });
    }
    // A few whole bodies over the 10 MB limit, sent without Expect: 100-continue.
    for (let i = 0; i < 4; i++) {
      const route = routes[rng.int(routes.length)];
      const req = baseRequest(route, rng);
      req.body = Buffer.alloc(10 * 1024 * 1024 + 1 + rng.int(10 * 1024 * 1024), '{');
      req.chunked = rng.chance(0.5);
      planned.push({ req, label: `${route.method} ${route.path} [oversizedBody]` });
    }

    const byStatus: Record<string, number> = {};
    const failures: string[] = [];
    let next = 0;
    const started = Date.now();
    const worker = async () => {
      while (next < planned.length) {
        const { req, label } = planned[next++];
        const head = req.method === 'HEAD';
        const outcome = await send(req, head);
        if (!outcome.ok) {
          byStatus.dropped = (byStatus.dropped ?? 0) + 1;
          failures.push(`${label}: dropped (${outcome.reason}) after ${JSON.stringify(outcome.received.slice(0, 120))}`);
          continue;
        }
        byStatus[outcome.response.status] = (byStatus[outcome.response.status] ?? 0) + 1;
        // The target the server saw: the second field of the request line actually sent.
        const sent = req.requestLine ? (req.requestLine.toString('latin1').split(/\r?\n/)[0].split(' ')[1] ?? '/') : req.target;
        const problems = problemsOf(outcome.response, sent, { head });
        if (problems.length) failures.push(`${label} -> ${outcome.response.status}: ${problems.join('; ')}`);
      }
    };
    await Promise.all(Array.from({ length: 12 }, worker));
    const ms = Date.now() - started;

    process.stdout.write(
      `[sweep] seed ${seed}: ${planned.length} requests over ${routes.length} routes in ${ms} ms; by status ${JSON.stringify(byStatus)}\n`,
    );
    expect(failures.filter((f) => f.includes('dropped')).slice(0, 10)).toEqual([]);
    expect(failures.slice(0, 20)).toEqual([]);
    expect(byStatus.dropped ?? 0).toBe(0);
    expect(Object.keys(byStatus).filter((s) => Number(s) >= 500)).toEqual([]);
    expect(planned.length).toBeGreaterThanOrEqual(3000);
    // Every route was reached with its valid credentials at least once.
    expect(routes.length).toBeGreaterThanOrEqual(15);
  }, 120_000);
});
