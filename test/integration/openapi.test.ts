// test modes: postgres, embedded
import { http, startGateway, TestGateway } from '../helpers/harness';
import { newKey } from '../helpers/relay-fixture';

describe('OpenAPI document', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw.close();
  });

  it('is generated from the zod schemas of the routes', async () => {
    const res = await http(gw.baseUrl, 'GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    const doc = res.body;
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/api/token/', '/api/token/{id}', '/api/token/batch', '/v1/models']),
    );
    const create = doc.paths['/api/token/'].post.requestBody.content['application/json'].schema;
    expect(Object.keys(create.properties)).toEqual(
      expect.arrayContaining(['name', 'remain_quota', 'unlimited_quota', 'group', 'models', 'expired_time']),
    );
    const list = doc.paths['/api/token/'].get.parameters.map((p: { name: string }) => p.name);
    expect(list).toEqual(expect.arrayContaining(['p', 'page_size']));
  });

  it('documents a success response and the family error responses of every operation', async () => {
    const doc = (await http(gw.baseUrl, 'GET', '/openapi.json')).body;
    const operations: Array<[string, string, any]> = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) operations.push([path, method, op]);
    }
    expect(operations.length).toBeGreaterThanOrEqual(25);
    const schemaOf = (r: any) => r?.content?.['application/json']?.schema ?? (Object.values(r?.content ?? {})[0] as any)?.schema;
    for (const [path, method, op] of operations) {
      const where = `${method.toUpperCase()} ${path}`;
      const statuses = Object.keys(op.responses ?? {});
      const success = statuses.filter((s) => s.startsWith('2'));
      expect([where, success.length > 0]).toEqual([where, true]);
      for (const s of success) expect([where, s, Boolean(schemaOf(op.responses[s]))]).toEqual([where, s, true]);
      if (path.startsWith('/api/') || path.startsWith('/v1/')) {
        expect([where, statuses.some((s) => s.startsWith('4'))]).toEqual([where, true]);
      }
    }
    const resolve = (schema: any): any => {
      if (!schema?.$ref) return schema;
      const name = schema.$ref.split('/').pop();
      return doc.components.schemas[name];
    };
    // The families' error bodies.
    const tokenErr = resolve(schemaOf(doc.paths['/api/token/'].get.responses['401']));
    expect(Object.keys(tokenErr.properties)).toEqual(['success', 'message']);
    const chatErr = resolve(schemaOf(doc.paths['/v1/chat/completions'].post.responses['400']));
    expect(Object.keys(chatErr.properties.error.properties)).toEqual(['message', 'type', 'param', 'code']);
    const messagesErr = resolve(schemaOf(doc.paths['/v1/messages'].post.responses['401']));
    expect(Object.keys(messagesErr.properties)).toEqual(['type', 'error']);
    // A success body: the key record of the spec inside the management envelope.
    const created = resolve(schemaOf(doc.paths['/api/token/'].post.responses['200']));
    const record = resolve(created.properties.data);
    expect(Object.keys(record.properties)).toEqual(
      expect.arrayContaining(['id', 'user_id', 'key', 'status', 'name', 'group', 'models', 'remain_quota', 'unlimited_quota', 'used_quota', 'expired_time', 'created_time']),
    );
    const chat = resolve(schemaOf(doc.paths['/v1/chat/completions'].post.responses['200']));
    expect(Object.keys(chat.properties)).toEqual(expect.arrayContaining(['id', 'object', 'created', 'model', 'choices', 'usage']));
    for (const name of Object.keys(doc.components.schemas ?? {})) expect(doc.components.schemas[name]).toBeTruthy();
    // Every $ref points at a component that exists.
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of refs) {
      const name = ref.slice(8, -1).split('/').pop()!;
      expect([ref, Boolean(doc.components?.schemas?.[name])]).toEqual([ref, true]);
    }
  });

  it('response schemas never filter a body: fields an upstream adds reach the client', async () => {
    const { key } = await newKey(gw);
    const res = await http(gw.baseUrl, 'POST', '/v1/chat/completions', {
      auth: `Bearer ${key}`,
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 },
    });
    expect(res.status).toBe(200);
    // Not in the documented ChatCompletion schema; the simulator (like OpenAI) sends it.
    expect(typeof res.body.system_fingerprint).toBe('string');
  });
});
