import { validateGatewayConfig } from '../../src/gateway-config';
import { azureUrl } from '../../src/upstream/cloud/azure';
import { TokenCache } from '../../src/upstream/cloud/token-cache';

/** The `azure` channel type's config, addresses and token cache. */
describe('azure channel config', () => {
  const SECRET = 'super-secret-client-secret';
  const check = (channel: Record<string, unknown>) =>
    validateGatewayConfig({ channels: [{ name: 'az', type: 'azure', base_url: 'https://r.openai.azure.com', models: ['gpt-4.1'], ...channel }], models: { 'gpt-4.1': { input_per_1m: 2, output_per_1m: 8 } } }, 'test');

  it('accepts a key with an API version, or Entra ID credentials with the default authority', () => {
    const a = check({ key: 'k', api_version: '2024-10-21' });
    expect(a.ok && a.config.channels[0]).toMatchObject({ type: 'azure', key: 'k', api_version: '2024-10-21' });
    const b = check({ azure_ad: { tenant_id: 't', client_id: 'c', client_secret: SECRET } });
    expect(b.ok && b.config.channels[0].azure_ad).toEqual({ tenant_id: 't', client_id: 'c', client_secret: SECRET, authority_host: 'https://login.microsoftonline.com' });
  });

  it.each([
    ['azure_ad beside key', { key: 'k', azure_ad: { tenant_id: 't', client_id: 'c', client_secret: SECRET } }, 'channels[0].azure_ad: give either key'],
    ['neither key nor azure_ad', {}, 'channels[0].key: is required for an azure channel without azure_ad'],
    ['azure_ad without a secret', { azure_ad: { tenant_id: 't', client_id: 'c' } }, 'channels[0].azure_ad.client_secret'],
    ['a malformed api_version', { key: 'k', api_version: '2024 10 21' }, 'channels[0].api_version'],
    ['batch_api', { key: 'k', batch_api: true }, 'channels[0].batch_api: is not supported on azure channels'],
  ])('refuses %s, naming the field and never the secret', (_name, fields, problem) => {
    const r = check(fields);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.join('\n')).toContain(problem);
    expect(r.problems.join('\n')).not.toContain(SECRET);
  });

  it('refuses azure fields on another channel type', () => {
    const r = validateGatewayConfig({ channels: [{ name: 'o', type: 'openai', base_url: 'https://x.example', models: ['m'], api_version: 'v1' }], models: { m: { input_per_1m: 1, output_per_1m: 1 } } }, 'test');
    expect(!r.ok && r.problems).toEqual(['channels[0].api_version: is for azure channels only']);
  });

  it('builds the deployment paths and the v1 paths', () => {
    const c = (api_version?: string) => {
      const r = check({ key: 'k', api_version });
      if (!r.ok) throw new Error(r.problems.join('\n'));
      return r.config.channels[0];
    };
    expect(azureUrl(c('2024-10-21'), '/chat/completions', 'prod gpt')).toBe('https://r.openai.azure.com/openai/deployments/prod%20gpt/chat/completions?api-version=2024-10-21');
    expect(azureUrl(c('2025-04-01-preview'), '/responses/resp_1?include=x', 'd')).toBe('https://r.openai.azure.com/openai/responses/resp_1?include=x&api-version=2025-04-01-preview');
    expect(azureUrl(c(), '/embeddings', 'd')).toBe('https://r.openai.azure.com/openai/v1/embeddings');
    expect(azureUrl(c('v1'), '/responses', 'd')).toBe('https://r.openai.azure.com/openai/v1/responses');
  });
});

describe('vertex channel config', () => {
  const SA = JSON.stringify({ type: 'service_account', client_email: 'a@p.iam.gserviceaccount.com', private_key: '-----BEGIN PRIVATE KEY-----\nsecret-key-material\n-----END PRIVATE KEY-----\n' });
  const check = (channel: Record<string, unknown>) =>
    validateGatewayConfig({ channels: [{ name: 'vx', type: 'vertex', models: ['gemini-2.5-pro'], ...channel }], models: { 'gemini-2.5-pro': { input_per_1m: 2, output_per_1m: 8 } } }, 'test');

  it('takes project and region, defaults the address by region, and reads the service-account key', () => {
    const r = check({ project: 'my-project', region: 'us-east5', credentials: SA });
    expect(r.ok && r.config.channels[0]).toMatchObject({ base_url: 'https://us-east5-aiplatform.googleapis.com', vertex: { project: 'my-project', region: 'us-east5', credentials: SA } });
    const g = check({ project: 'my-project', region: 'global' });
    expect(g.ok && g.config.channels[0]).toMatchObject({ base_url: 'https://aiplatform.googleapis.com', vertex: { credentials: null } });
  });

  it.each([
    ['no region', { project: 'my-project' }, 'channels[0].region: is required for a vertex channel'],
    ['no project', { region: 'us-east5' }, 'channels[0].project: is required for a vertex channel'],
    ['a credentials file that is not a service-account key', { project: 'my-project', region: 'us-east5', credentials: '{"type":"authorized_user"}' }, 'channels[0].credentials: is not a service-account key'],
    ['a credentials file that cannot be read', { project: 'my-project', region: 'us-east5', credentials_file: '/nonexistent/sa.json' }, 'channels[0].credentials_file: cannot be read'],
    ['both credentials and credentials_file', { project: 'my-project', region: 'us-east5', credentials: SA, credentials_file: '/x' }, 'channels[0].credentials: give either'],
    ['a key', { project: 'my-project', region: 'us-east5', key: 'k' }, 'channels[0].key: is not used by vertex channels'],
  ])('refuses %s, naming the field and never the key', (_name, fields, problem) => {
    const r = check(fields);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.join('\n')).toContain(problem);
    expect(r.problems.join('\n')).not.toContain('secret-key-material');
  });

  it('refuses vertex fields on another type, and a missing base_url elsewhere', () => {
    const r = validateGatewayConfig({ channels: [{ name: 'o', type: 'openai', models: ['m'], project: 'p' }], models: { m: { input_per_1m: 1, output_per_1m: 1 } } }, 'test');
    expect(!r.ok && r.problems).toEqual(['channels[0].base_url: must be an http:// or https:// URL', 'channels[0].project: is for vertex channels only']);
  });
});

describe('bedrock channel config', () => {
  const check = (channel: Record<string, unknown>) =>
    validateGatewayConfig({ channels: [{ name: 'br', type: 'bedrock', models: ['claude-sonnet-4-5'], ...channel }], models: { 'claude-sonnet-4-5': { input_per_1m: 3, output_per_1m: 15 } } }, 'test');

  it('takes a region, defaults the address by it, and keeps static credentials or none (the default chain)', () => {
    const r = check({ region: 'eu-west-1', aws: { access_key_id: 'AKIA0000', secret_access_key: 'very-secret-value' } });
    expect(r.ok && r.config.channels[0]).toMatchObject({ base_url: 'https://bedrock-runtime.eu-west-1.amazonaws.com', bedrock: { region: 'eu-west-1', aws: { access_key_id: 'AKIA0000' } } });
    const chain = check({ region: 'us-east-1' });
    expect(chain.ok && chain.config.channels[0].bedrock).toEqual({ region: 'us-east-1', aws: null });
  });

  it.each([
    ['no region', {}, 'channels[0].region: is required for a bedrock channel'],
    ['aws beside key', { region: 'us-east-1', key: 'k', aws: { access_key_id: 'AKIA0000', secret_access_key: 'very-secret-value' } }, 'channels[0].aws: give either aws'],
    ['aws without its secret', { region: 'us-east-1', aws: { access_key_id: 'AKIA0000' } }, 'channels[0].aws.secret_access_key'],
  ])('refuses %s, naming the field and never the secret', (_name, fields, problem) => {
    const r = check(fields);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.join('\n')).toContain(problem);
    expect(r.problems.join('\n')).not.toContain('very-secret-value');
  });
});

describe('token cache', () => {
  it('mints once for many waiting calls, serves the token until shortly before it expires, then refreshes once', async () => {
    let now = 0;
    let mints = 0;
    const cache = new TokenCache(() => now);
    const mint = async () => ({ token: `t${++mints}`, expiresInSeconds: 3600 });
    expect(new Set(await Promise.all(Array.from({ length: 1000 }, () => cache.get('c', mint))))).toEqual(new Set(['t1']));
    now = 3000 * 1000;
    expect(await cache.get('c', mint)).toBe('t1');
    // Within the last tenth (at most 5 minutes) of its life: the old token is served while one refresh runs.
    now = 3400 * 1000;
    expect(await Promise.all([cache.get('c', mint), cache.get('c', mint)])).toEqual(['t1', 't1']);
    await new Promise((r) => setImmediate(r));
    expect(await cache.get('c', mint)).toBe('t2');
    expect(mints).toBe(2);
  });

  it('a failed mint is not cached and fails those who waited on it; a refresh that fails unheard raises nothing', async () => {
    const cache = new TokenCache(() => 0);
    await expect(cache.get('c', async () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(await cache.get('c', async () => ({ token: 'ok', expiresInSeconds: 60 }))).toBe('ok');
  });
});
