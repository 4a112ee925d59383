import { http, startGateway, TestGateway } from '../helpers/harness';

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
});
