import type { Pool } from 'pg';
import { ChannelRow as Ch, createCatalog } from '../../src/domain/catalog';
import { SIMULATOR_MODELS } from '../../src/upstream/simulator-models';


function fakeDb(channels: Ch[]) {
  const state = { queries: 0, fail: false };
  const db = {
    async query() {
      state.queries++;
      if (state.fail) throw new Error('db down');
      return { rows: channels.map((c) => ({ ...c })) };
    },
  };
  return { db: db as unknown as Pool, state };
}

const ch = (id: number, over: Partial<Ch>): Ch => ({
  id, name: `c${id}`, type: 'openai', base_url: 'https://x', models: [], groups: ['default'], owned_by: 'gw', priority: 0, created: 1000 + id, ...over,
});

describe('catalog', () => {
  it('lists unique models sorted by id, filtered by group and allowlist', async () => {
    const { db } = fakeDb([
      ch(1, { models: ['m-b', 'm-a'], groups: ['default'], owned_by: 'p1' }),
      ch(2, { models: ['m-a', 'm-c'], groups: ['vip'], owned_by: 'p2', created: 900 }),
    ]);
    const snap = await createCatalog(db).snapshot();
    expect(snap.list({ group: '', models: [] }).map((m) => m.id)).toEqual(['m-a', 'm-b']);
    expect(snap.list({ group: 'default', models: [] })).toEqual([
      { id: 'm-a', object: 'model', created: 900, owned_by: 'p1' },
      { id: 'm-b', object: 'model', created: 1001, owned_by: 'p1' },
    ]);
    expect(snap.list({ group: 'vip', models: [] }).map((m) => m.id)).toEqual(['m-a', 'm-c']);
    expect(snap.list({ group: 'vip', models: ['m-c', 'nope'] }).map((m) => m.id)).toEqual(['m-c']);
    expect(snap.list({ group: 'other', models: [] })).toEqual([]);
    expect(JSON.parse(snap.listJson({ group: 'other', models: [] }))).toEqual({ object: 'list', data: [] });
    expect(snap.find({ group: 'vip', models: [] }, 'm-b')).toBeUndefined();
    expect(snap.find({ group: '', models: ['m-a'] }, 'm-b')).toBeUndefined();
    expect(snap.find({ group: '', models: [] }, 'm-b')?.owned_by).toBe('p1');
    expect(snap.channelsFor('m-a', 'vip').map((c) => c.id)).toEqual([2]);
    expect(snap.channelsFor('m-a', '').map((c) => c.id)).toEqual([1]);
  });

  it('prefers the higher-priority channel for owned_by and uses the simulator list for simulator channels', async () => {
    const { db } = fakeDb([
      ch(1, { models: ['x'], owned_by: 'low' }),
      ch(2, { models: ['x'], owned_by: 'high', priority: 5 }),
      ch(3, { type: 'simulator', models: ['gpt-4o', 'video3', 'custom'], owned_by: 'simulator' }),
    ]);
    const snap = await createCatalog(db).snapshot();
    expect(snap.find({ group: '', models: [] }, 'x')?.owned_by).toBe('high');
    expect(snap.find({ group: '', models: [] }, 'gpt-4o')?.owned_by).toBe('openai');
    expect(snap.find({ group: '', models: [] }, 'video3')?.owned_by).toBe('vendorB');
    expect(snap.find({ group: '', models: [] }, 'custom')?.owned_by).toBe('simulator');
  });

  it('serializes once per (group, allowlist) and snapshot, and keeps the snapshot while nothing changed', async () => {
    const channels = [ch(1, { models: ['a'] })];
    const { db, state } = fakeDb(channels);
    const catalog = createCatalog(db, { ttlMs: 10_000 });
    const s1 = await catalog.snapshot();
    const who = { group: '', models: [] };
    const j1 = s1.listJson(who);
    expect(s1.listJson({ group: 'default', models: [] })).toBe(j1);
    expect(await catalog.snapshot()).toBe(s1);
    expect(state.queries).toBe(1);
    expect(await catalog.refresh()).toBe(s1);
    channels.push(ch(2, { models: ['b'] }));
    const s2 = await catalog.refresh();
    expect(s2).not.toBe(s1);
    expect(s2.version).toBeGreaterThan(s1.version);
    expect(JSON.parse(s2.listJson(who)).data.map((m: { id: string }) => m.id)).toEqual(['a', 'b']);
  });

  it('re-reads after the TTL, with one read for concurrent callers, and keeps the last snapshot when the database fails', async () => {
    const { db, state } = fakeDb([ch(1, { models: ['a'] })]);
    const catalog = createCatalog(db, { ttlMs: 20, retryMs: 5 });
    await Promise.all([catalog.snapshot(), catalog.snapshot(), catalog.snapshot()]);
    expect(state.queries).toBe(1);
    expect(catalog.fresh()).toBeDefined();
    await new Promise((r) => setTimeout(r, 30));
    expect(catalog.fresh()).toBeUndefined();
    state.fail = true;
    const s = await catalog.snapshot();
    expect(s.size).toBe(1);
    expect(state.queries).toBe(2);
  });

  it('the simulator list covers every kind and the video families of the spec, with unique ids', () => {
    const ids = SIMULATOR_MODELS.map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(SIMULATOR_MODELS.map((m) => m.kind))).toEqual(new Set(['chat', 'embedding', 'image', 'video']));
    for (const id of [
      'video-3.1', 'video-3.1-fl', 'video-3.1-fast', 'video-3.1-fast-fl', 'video-3.1-landscape', 'video-3.1-landscape-fl',
      'video-3.1-landscape-fast', 'video-3.1-landscape-fast-fl', 'vendorA-2.7-r2v', 'vendorA-2.6-r2v', 'vendorA-2.6-r2v-flash',
      'vendorC-1.0-r2v', 'video3', 'video3-fast', 'video3-pro', 'video3-pro-frames', 'text-embedding-3-small', 'dall-e-3',
    ]) {
      expect(ids).toContain(id);
    }
  });
});
