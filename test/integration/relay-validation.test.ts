// test modes: postgres, embedded
import { http } from '../helpers/harness';
import { holdsOf, ledgerOf, newKey, type RelayFixture, startRelayFixture, tokenRow } from '../helpers/relay-fixture';

const user = [{ role: 'user', content: 'hi' }];
const base = { model: 'gpt-4o-mini', messages: user };

/** Every bound of the chat request on both sides of its edge; the refusals that must charge nothing. */
describe('relay: request validation and refusals (OpenAI error format, nothing charged)', () => {
  let fx: RelayFixture;
  let key: string;
  let tokenId: number;
  beforeAll(async () => {
    fx = await startRelayFixture();
    const k = await newKey(fx.gw, { models: 'gpt-4o-mini,o3-mini,text-embedding-3-small,dall-e-3,unpriced-model,nowhere-model' });
    key = k.key;
    tokenId = k.record.id;
  });
  afterAll(async () => {
    await fx.close();
  });

  const post = (path: string, body: unknown, auth = `Bearer ${key}`) => http(fx.gw.baseUrl, 'POST', path, { auth, body });

  const accepted: Array<[string, Record<string, unknown>]> = [
    ['temperature 0', { temperature: 0 }],
    ['temperature 2', { temperature: 2 }],
    ['top_p 0', { top_p: 0 }],
    ['top_p 1', { top_p: 1 }],
    ['presence_penalty -2', { presence_penalty: -2 }],
    ['presence_penalty 2', { presence_penalty: 2 }],
    ['frequency_penalty -2', { frequency_penalty: -2 }],
    ['frequency_penalty 2', { frequency_penalty: 2 }],
    ['max_tokens 1', { max_tokens: 1 }],
    ['n 1', { n: 1 }],
    ['n 2', { n: 2 }],
    ['stop string', { stop: 'END' }],
    ['stop 4 sequences', { stop: ['a', 'b', 'c', 'd'] }],
    ['user', { user: 'end-user-1' }],
    ['null optional', { temperature: null, stop: null }],
    ['assistant and system roles', { messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }, { role: 'assistant', content: 'a' }, { role: 'user', content: 'u2' }] }],
    ['two images', { messages: [{ role: 'user', content: [{ type: 'text', text: 't' }, { type: 'image_url', image_url: { url: 'https://a.example/x.png' } }, { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ' } }] }] }],
  ];

  it.each(accepted)('accepts %s', async (_name, extra) => {
    const r = await post('/v1/chat/completions', { ...base, ...extra });
    expect(r.status).toBe(200);
    expect(r.body.object).toBe('chat.completion');
  });

  const refused: Array<[string, Record<string, unknown>, string]> = [
    ['temperature -0.01', { temperature: -0.01 }, 'temperature'],
    ['temperature 2.01', { temperature: 2.01 }, 'temperature'],
    ['temperature as a string', { temperature: '1' }, 'temperature'],
    ['top_p -0.01', { top_p: -0.01 }, 'top_p'],
    ['top_p 1.01', { top_p: 1.01 }, 'top_p'],
    ['presence_penalty -2.01', { presence_penalty: -2.01 }, 'presence_penalty'],
    ['presence_penalty 2.01', { presence_penalty: 2.01 }, 'presence_penalty'],
    ['frequency_penalty -2.01', { frequency_penalty: -2.01 }, 'frequency_penalty'],
    ['frequency_penalty 2.01', { frequency_penalty: 2.01 }, 'frequency_penalty'],
    ['max_tokens 0', { max_tokens: 0 }, 'max_tokens'],
    ['max_tokens 1.5', { max_tokens: 1.5 }, 'max_tokens'],
    ['n 0', { n: 0 }, 'n'],
    ['stop 5 sequences', { stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
    ['stop a number', { stop: 5 }, 'stop'],
    ['stream a string', { stream: 'yes' }, 'stream'],
    ['no model', { model: undefined }, 'model'],
    ['model a number', { model: 7 }, 'model'],
    ['no messages', { messages: undefined }, 'messages'],
    ['empty messages', { messages: [] }, 'messages'],
    ['unknown role', { messages: [{ role: 'robot', content: 'x' }] }, 'messages.0.role'],
    ['content missing', { messages: [{ role: 'user' }] }, 'messages.0.content'],
    ['content a number', { messages: [{ role: 'user', content: 5 }] }, 'messages.0.content'],
    ['image over http', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://a.example/x.png' } }] }] }, 'messages.0.content.0.image_url.url'],
    ['image data URI without base64', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png,abc' } }] }] }, 'messages.0.content.0.image_url.url'],
    ['text part without text', { messages: [{ role: 'user', content: [{ type: 'text' }] }] }, 'messages.0.content.0.text'],
  ];

  it.each(refused)('refuses %s with 400 naming %s', async (_name, extra, param) => {
    const r = await post('/v1/chat/completions', { ...base, ...extra });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ type: 'invalid_request_error', param: expect.stringContaining(param.split('.')[0]) });
    expect(r.body.error.param).toBe(param);
    expect(r.body.error.message).toContain(param);
    expect(r.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it.each([
    ['temperature', { temperature: 1 }, 'temperature'],
    ['top_p', { top_p: 0.5 }, 'top_p'],
    ['frequency_penalty', { frequency_penalty: 0.1 }, 'frequency_penalty'],
    ['the system role', { messages: [{ role: 'system', content: 's' }, ...user] }, 'messages[0].role'],
  ])('a reasoning model refuses %s with a 400 naming it', async (_n, extra, param) => {
    const r = await post('/v1/chat/completions', { model: 'o3-mini', messages: user, ...extra });
    expect(r.status).toBe(400);
    expect(r.body.error.param).toBe(param);
    expect(r.body.error.message).toContain(param);
  });

  it('a reasoning model takes presence_penalty and the developer role', async () => {
    const r = await post('/v1/chat/completions', { model: 'o3-mini', messages: [{ role: 'developer', content: 'd' }, ...user], presence_penalty: 1 });
    expect(r.status).toBe(200);
  });

  it('allowlist: 403 saying the token is not authorized for the model; unknown model 404 model_not_found; unpriced 400 naming it', async () => {
    const billedBefore = (await ledgerOf(fx.gw, tokenId)).length;
    const narrow = await newKey(fx.gw, { models: 'gpt-4o-mini' });
    const forbidden = await post('/v1/chat/completions', { ...base, model: 'o3-mini' }, `Bearer ${narrow.key}`);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.message).toMatch(/not authorized.*o3-mini/);
    expect(await tokenRow(fx.gw, narrow.record.id)).toEqual({ remain_quota: 10_000_000, used_quota: 0 });

    const missing = await post('/v1/chat/completions', { ...base, model: 'nowhere-model' });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ type: 'invalid_request_error', param: 'model', code: 'model_not_found' });

    const unpriced = await post('/v1/chat/completions', { ...base, model: 'unpriced-model' });
    expect(unpriced.status).toBe(400);
    expect(unpriced.body.error).toMatchObject({ param: 'model', code: 'model_not_priced' });
    expect(unpriced.body.error.message).toContain('unpriced-model');

    expect(await ledgerOf(fx.gw, tokenId)).toHaveLength(billedBefore);
    expect(await holdsOf(fx.gw, tokenId)).toBe(0);
  });

  it('a system token on inference endpoints is 401 invalid_api_key', async () => {
    const k = await newKey(fx.gw);
    for (const path of ['/v1/chat/completions', '/v1/embeddings', '/v1/images/generations', '/v1/images/edits']) {
      const r = await post(path, base, k.acct.systemToken);
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe('invalid_api_key');
    }
  });

  it('bad JSON, a non-object body and a huge body are 4xx in the OpenAI format', async () => {
    const bad = await http(fx.gw.baseUrl, 'POST', '/v1/chat/completions', { auth: `Bearer ${key}`, rawBody: '{"model": "gpt-4o-mini", ' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_json', type: 'invalid_request_error' });
    const arr = await http(fx.gw.baseUrl, 'POST', '/v1/chat/completions', { auth: `Bearer ${key}`, body: [1, 2] });
    expect(arr.status).toBe(400);
    expect(arr.body.error.type).toBe('invalid_request_error');
    const huge = await http(fx.gw.baseUrl, 'POST', '/v1/chat/completions', { auth: `Bearer ${key}`, body: { ...base, messages: [{ role: 'user', content: 'x'.repeat(11 * 1024 * 1024) }] } });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('payload_too_large');
  });

  it('embeddings and images validation', async () => {
    const billedBefore = (await ledgerOf(fx.gw, tokenId)).length;
    const cases: Array<[string, unknown, string]> = [
      ['/v1/embeddings', { model: 'text-embedding-3-small' }, 'input'],
      ['/v1/embeddings', { model: 'text-embedding-3-small', input: '' }, 'input'],
      ['/v1/embeddings', { model: 'text-embedding-3-small', input: 'x', encoding_format: 'int8' }, 'encoding_format'],
      ['/v1/images/generations', { model: 'dall-e-3' }, 'prompt'],
      ['/v1/images/generations', { model: 'dall-e-3', prompt: 'p', n: 0 }, 'n'],
      ['/v1/images/generations', { model: 'dall-e-3', prompt: 'p', size: 'big' }, 'size'],
      ['/v1/images/generations', { model: 'dall-e-3', prompt: 'p', seed: 'x' }, 'seed'],
    ];
    for (const [path, body, param] of cases) {
      const r = await post(path, body);
      expect([path, param, r.status]).toEqual([path, param, 400]);
      expect(r.body.error.param).toBe(param);
    }
    // A chat model on the images endpoint: a 400 (priced per token, not per unit), nothing charged.
    const wrongKind = await post('/v1/images/generations', { model: 'gpt-4o-mini', prompt: 'p' });
    expect(wrongKind.status).toBe(400);
    expect(await ledgerOf(fx.gw, tokenId)).toHaveLength(billedBefore);
  });

  it('a key without enough quota: 429 insufficient_quota before any upstream call', async () => {
    const poor = await newKey(fx.gw, { remain_quota: 10 });
    const before = fx.primary.requests.length;
    const r = await post('/v1/chat/completions', { ...base, max_tokens: 1000 }, `Bearer ${poor.key}`);
    expect(r.status).toBe(429);
    expect(r.body.error.code).toBe('insufficient_quota');
    expect(fx.primary.requests.length).toBe(before);
  });
});
