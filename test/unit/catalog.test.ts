import { createCatalog, MODEL_CREATED } from '../../src/domain/catalog';
import { builtInGatewayConfig, ConfigStore, GatewayConfigFileInput, validateGatewayConfig } from '../../src/gateway-config';
import { SIMULATOR_MODELS } from '../../src/simulator/catalog';

function configOf(input: GatewayConfigFileInput) {
  const r = validateGatewayConfig(input, 'test');
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.config;
}

type Ch = NonNullable<GatewayConfigFileInput['channels']>[number];
const ch = (name: string, over: Partial<Ch>): Ch => ({ name, type: 'openai', base_url: 'https://x', models: ['unused'], ...over });

describe('catalog (over the gateway config)', () => {
  it('lists unique models sorted by id, filtered by group and allowlist', () => {
    const config = configOf({
      channels: [
        ch('c1', { models: ['m-b', 'm-a'], groups: ['default'] }),
        ch('c2', { models: ['m-a', 'm-c'], groups: ['vip'], type: 'anthropic' }),
        ch('off', { models: ['m-off'], enabled: false }),
      ],
      models: { 'm-a': { input_per_1m: 1, owned_by: 'p1' } },
    });
    const snap = createCatalog(ConfigStore.fixed(config)).current();
    expect(snap.list({ group: '', models: [] }).map((m) => m.id)).toEqual(['m-a', 'm-b']);
    expect(snap.list({ group: 'default', models: [] })).toEqual([
      { id: 'm-a', object: 'model', created: MODEL_CREATED, owned_by: 'p1' },
      { id: 'm-b', object: 'model', created: MODEL_CREATED, owned_by: 'openai' },
    ]);
    expect(snap.list({ group: 'vip', models: [] }).map((m) => [m.id, m.owned_by])).toEqual([['m-a', 'p1'], ['m-c', 'anthropic']]);
    expect(snap.list({ group: 'vip', models: ['m-c', 'nope'] }).map((m) => m.id)).toEqual(['m-c']);
    expect(snap.list({ group: 'other', models: [] })).toEqual([]);
    expect(JSON.parse(snap.listJson({ group: 'other', models: [] }))).toEqual({ object: 'list', data: [] });
    expect(snap.find({ group: 'vip', models: [] }, 'm-b')).toBeUndefined();
    expect(snap.find({ group: '', models: ['m-a'] }, 'm-b')).toBeUndefined();
    expect(snap.find({ group: '', models: [] }, 'm-b')?.owned_by).toBe('openai');
    expect(snap.exists('m-c')).toBe(true);
    expect(snap.exists('m-off')).toBe(false);
    expect(snap.channelsFor('m-a', 'vip').map((c) => c.name)).toEqual(['c2']);
    expect(snap.channelsFor('m-a', '').map((c) => c.name)).toEqual(['c1']);
  });

  it('orders channels by priority, then file order; owned_by falls back to the best channel\'s type', () => {
    const config = configOf({
      channels: [
        ch('low', { models: ['x'] }),
        ch('high', { models: ['x'], priority: 5, type: 'video-a' }),
        ch('low2', { models: ['x'] }),
      ],
    });
    const snap = createCatalog(ConfigStore.fixed(config)).current();
    expect(snap.channelsFor('x', '').map((c) => c.name)).toEqual(['high', 'low', 'low2']);
    expect(snap.find({ group: '', models: [] }, 'x')?.owned_by).toBe('video-a');
  });

  it('the built-in config lists every simulator model with its provider', () => {
    const snap = createCatalog(ConfigStore.fixed(builtInGatewayConfig('http://127.0.0.1:1', SIMULATOR_MODELS))).current();
    const all = snap.list({ group: '', models: [] });
    expect(all.map((m) => m.id)).toEqual(SIMULATOR_MODELS.map((m) => m.id).sort());
    for (const m of SIMULATOR_MODELS) expect(snap.find({ group: '', models: [] }, m.id)?.owned_by).toBe(m.owned_by);
  });

  it('builds one snapshot per config, serializes once per (group, allowlist), and follows a reload', async () => {
    let config = configOf({ channels: [ch('c1', { models: ['a'] })] });
    const store = new ConfigStore(() => config);
    const catalog = createCatalog(store);
    const s1 = catalog.current();
    const who = { group: '', models: [] };
    const j1 = s1.listJson(who);
    expect(s1.listJson({ group: 'default', models: [] })).toBe(j1);
    expect(catalog.current()).toBe(s1);
    expect(await catalog.snapshot()).toBe(s1);
    expect(catalog.fresh()).toBe(s1);

    const old = store.current();
    config = configOf({ channels: [ch('c1', { models: ['a'] }), ch('c2', { models: ['b'] })] });
    expect(store.reload().ok).toBe(true);
    const s2 = catalog.current();
    expect(s2).not.toBe(s1);
    expect(s2.version).toBeGreaterThan(s1.version);
    expect(JSON.parse(s2.listJson(who)).data.map((m: { id: string }) => m.id)).toEqual(['a', 'b']);
    // A request that took the old config keeps its snapshot.
    expect(catalog.of(old)).toBe(s1);
  });

  it('the simulator list covers every kind and the video families of the spec, with unique ids', () => {
    const ids = SIMULATOR_MODELS.map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(SIMULATOR_MODELS.map((m) => m.kind))).toEqual(new Set(['chat', 'embedding', 'image', 'video', 'speech', 'transcription', 'rerank', 'moderation']));
    for (const id of [
      'video-3.1', 'video-3.1-fl', 'video-3.1-fast', 'video-3.1-fast-fl', 'video-3.1-landscape', 'video-3.1-landscape-fl',
      'video-3.1-landscape-fast', 'video-3.1-landscape-fast-fl', 'vendorA-2.7-r2v', 'vendorA-2.6-r2v', 'vendorA-2.6-r2v-flash',
      'vendorC-1.0-r2v', 'video3', 'video3-fast', 'video3-pro', 'video3-pro-frames', 'text-embedding-3-small', 'dall-e-3',
    ]) {
      expect(ids).toContain(id);
    }
  });
});
