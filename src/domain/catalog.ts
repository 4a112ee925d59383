import type { Pool, PoolClient } from 'pg';
import { SIMULATOR_MODELS, simulatorModel } from '../upstream/simulator-models';

/** One entry of /v1/models, exactly as the wire shows it. */
export interface ModelEntry {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
}

/** An enabled upstream channel, without its credentials. */
export interface ChannelInfo {
  id: number;
  name: string;
  type: string;
  baseUrl: string;
  priority: number;
  groups: readonly string[];
  models: readonly string[];
  created: number;
}

/** What decides which models a key sees: its group ('' = 'default') and its allowlist (empty = all). */
export interface ModelVisibility {
  group: string;
  models: readonly string[];
}

interface ModelInfo {
  entry: ModelEntry;
  /** Groups of the enabled channels that serve this model. */
  groups: Set<string>;
  /** Channels serving the model, best first (priority desc, id asc). */
  channels: ChannelInfo[];
}

export const DEFAULT_GROUP = 'default';
const LIST_CACHE_LIMIT = 10_000;

export function effectiveGroup(group: string): string {
  return group === '' ? DEFAULT_GROUP : group;
}

export interface ChannelRow {
  id: number;
  name: string;
  type: string;
  base_url: string;
  models: string[];
  groups: string[];
  owned_by: string;
  priority: number;
  created: number;
}

/**
 * An immutable view of the enabled channels. Answers per key are computed once per (group, allowlist)
 * and kept as serialized JSON for as long as this snapshot is current.
 */
export class CatalogSnapshot {
  private readonly byId = new Map<string, ModelInfo>();
  private readonly sortedIds: string[];
  private readonly listJsonByKey = new Map<string, string>();
  private readonly listJsonByPrincipal = new WeakMap<object, string>();

  constructor(
    readonly version: number,
    readonly channels: readonly ChannelInfo[],
    ownedBy: (channel: ChannelRow, model: string) => string,
    rows: readonly ChannelRow[],
  ) {
    const ordered = [...rows].sort((a, b) => b.priority - a.priority || a.id - b.id);
    const infoById = new Map(channels.map((c) => [c.id, c]));
    for (const row of ordered) {
      const channel = infoById.get(row.id) as ChannelInfo;
      for (const model of new Set(row.models)) {
        if (!model) continue;
        let info = this.byId.get(model);
        if (!info) {
          info = {
            entry: { id: model, object: 'model', created: row.created, owned_by: ownedBy(row, model) },
            groups: new Set(),
            channels: [],
          };
          this.byId.set(model, info);
        }
        info.entry.created = Math.min(info.entry.created, row.created);
        for (const g of row.groups) info.groups.add(g);
        info.channels.push(channel);
      }
    }
    this.sortedIds = [...this.byId.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  get size(): number {
    return this.byId.size;
  }

  /** The model if it exists and this key may see it. */
  find(who: ModelVisibility, model: string): ModelEntry | undefined {
    const info = this.byId.get(model);
    if (!info || !info.groups.has(effectiveGroup(who.group))) return undefined;
    if (who.models.length > 0 && !who.models.includes(model)) return undefined;
    return info.entry;
  }

  /** Whether the model exists for anyone (tells "unknown model" from "not allowed for this key"). */
  exists(model: string): boolean {
    return this.byId.has(model);
  }

  /** Enabled channels that serve `model` to `group`, best first. */
  channelsFor(model: string, group: string): ChannelInfo[] {
    const g = effectiveGroup(group);
    return this.byId.get(model)?.channels.filter((c) => c.groups.includes(g)) ?? [];
  }

  list(who: ModelVisibility): ModelEntry[] {
    const g = effectiveGroup(who.group);
    const allow = who.models.length > 0 ? new Set(who.models) : null;
    const out: ModelEntry[] = [];
    for (const id of this.sortedIds) {
      const info = this.byId.get(id) as ModelInfo;
      if (info.groups.has(g) && (!allow || allow.has(id))) out.push(info.entry);
    }
    return out;
  }

  /**
   * The /v1/models body for this key, serialized once per (group, allowlist) per snapshot. `who` is also
   * a cache key by identity: the authenticator hands out the same principal object while it is cached.
   */
  listJson(who: ModelVisibility): string {
    const hit = this.listJsonByPrincipal.get(who);
    if (hit !== undefined) return hit;
    const key = `${effectiveGroup(who.group)}\n${who.models.join(',')}`;
    let json = this.listJsonByKey.get(key);
    if (json === undefined) {
      json = JSON.stringify({ object: 'list', data: this.list(who) });
      if (this.listJsonByKey.size >= LIST_CACHE_LIMIT) this.listJsonByKey.clear();
      this.listJsonByKey.set(key, json);
    }
    this.listJsonByPrincipal.set(who, json);
    return json;
  }
}

export interface Catalog {
  /** The current snapshot, never older than the TTL (reads the database when it is). */
  snapshot(): Promise<CatalogSnapshot>;
  /** The snapshot if it is within the TTL, without waiting; undefined otherwise. */
  fresh(): CatalogSnapshot | undefined;
  /** Re-reads the channels now (after a channel change on this replica). */
  refresh(): Promise<CatalogSnapshot>;
}

const CHANNELS_QUERY = {
  name: 'catalog-enabled-channels',
  text: `SELECT id, name, type, base_url, models, groups, owned_by, priority,
           extract(epoch FROM created_at)::bigint AS created
         FROM channels WHERE status = 1 ORDER BY id`,
};

function defaultOwnedBy(channel: ChannelRow, model: string): string {
  // The simulator serves many providers' models from one channel: each keeps its own provider.
  if (channel.type === 'simulator') return simulatorModel(model)?.owned_by ?? channel.owned_by;
  return channel.owned_by;
}

/**
 * The model catalog of this replica: the models of enabled channels, held in memory and re-read at most
 * every `ttlMs` (5 s by default), so a channel change on any replica is visible everywhere within it.
 */
export function createCatalog(db: Pool, opts: { ttlMs?: number; retryMs?: number } = {}): Catalog {
  const ttlMs = opts.ttlMs ?? 5000;
  const retryMs = opts.retryMs ?? 1000;
  let current: CatalogSnapshot | undefined;
  let signature = '';
  let loadedAt = 0;
  let loading: Promise<CatalogSnapshot> | null = null;
  let version = 0;

  async function load(): Promise<CatalogSnapshot> {
    try {
      const res = await db.query<ChannelRow>(CHANNELS_QUERY);
      const sig = JSON.stringify(res.rows);
      if (!current || sig !== signature) {
        const channels: ChannelInfo[] = res.rows.map((r) => ({
          id: r.id,
          name: r.name,
          type: r.type,
          baseUrl: r.base_url,
          priority: r.priority,
          groups: r.groups,
          models: r.models,
          created: r.created,
        }));
        current = new CatalogSnapshot(++version, channels, defaultOwnedBy, res.rows);
        signature = sig;
      }
      loadedAt = Date.now();
      return current;
    } catch (err) {
      // Keep answering from the last good snapshot; try the database again shortly.
      if (!current) throw err;
      loadedAt = Date.now() - ttlMs + retryMs;
      return current;
    }
  }

  function refresh(): Promise<CatalogSnapshot> {
    if (!loading) {
      loading = load().finally(() => {
        loading = null;
      });
    }
    return loading;
  }

  function fresh(): CatalogSnapshot | undefined {
    return current !== undefined && Date.now() - loadedAt < ttlMs ? current : undefined;
  }

  return {
    fresh,
    refresh,
    async snapshot() {
      return fresh() ?? refresh();
    },
  };
}

/** The built-in simulator channel's row values. */
export const SIMULATOR_CHANNEL = {
  name: 'simulator',
  type: 'simulator',
  baseUrl: 'builtin://simulator',
  ownedBy: 'simulator',
  groups: [DEFAULT_GROUP],
};

/**
 * Registers the built-in upstream simulator as a channel when no channel exists, so a fresh install
 * answers at once. Idempotent and safe when several processes start together: the row is only
 * inserted into an empty table, and the unique channel name turns a concurrent second insert into a
 * no-op. Returns true when this call inserted it.
 */
export async function ensureDefaultChannel(db: Pool | PoolClient): Promise<boolean> {
  const res = await db.query(
    `INSERT INTO channels (name, type, base_url, models, groups, owned_by, status, priority)
     SELECT $1, $2, $3, $4::text[], $5::text[], $6, 1, 0
     WHERE NOT EXISTS (SELECT 1 FROM channels)
     ON CONFLICT (name) DO NOTHING`,
    [
      SIMULATOR_CHANNEL.name,
      SIMULATOR_CHANNEL.type,
      SIMULATOR_CHANNEL.baseUrl,
      SIMULATOR_MODELS.map((m) => m.id),
      SIMULATOR_CHANNEL.groups,
      SIMULATOR_CHANNEL.ownedBy,
    ],
  );
  return (res.rowCount ?? 0) > 0;
}
