import { type ChannelConfig, DEFAULT_GROUP, type GatewayConfig } from '../gateway-config/schema';
import type { ConfigStore } from '../gateway-config/store';

/** One entry of /v1/models, exactly as the wire shows it. */
export interface ModelEntry {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
}

/** What decides which models a key sees: its group ('' = 'default') and its allowlist (empty = all). */
export interface ModelVisibility {
  group: string;
  models: readonly string[];
}

interface ModelInfo {
  entry: ModelEntry;
  /** Groups of the channels that serve this model. */
  groups: Set<string>;
  /** Channels serving the model, best first (priority desc, then file order). */
  channels: ChannelConfig[];
}

export { DEFAULT_GROUP };
const LIST_CACHE_LIMIT = 10_000;

/**
 * `created` of every model entry. The config has no such field and replicas must agree on it, so it is a
 * constant (the value one-api reports).
 */
export const MODEL_CREATED = 1_626_777_600;

export function effectiveGroup(group: string): string {
  return group === '' ? DEFAULT_GROUP : group;
}

/**
 * An immutable view of one gateway config's models: the union of its channels' models. Answers per key are
 * computed once per (group, allowlist) and kept as serialized JSON for as long as this snapshot is used.
 */
export class CatalogSnapshot {
  private readonly byId = new Map<string, ModelInfo>();
  private readonly sortedIds: string[];
  private readonly listJsonByKey = new Map<string, string>();
  private readonly listJsonByPrincipal = new WeakMap<object, string>();
  /** The config's channels (enabled ones only), best first. */
  readonly channels: readonly ChannelConfig[];

  constructor(
    readonly version: number,
    readonly config: GatewayConfig,
  ) {
    // Stable sort: equal priorities keep the file's order.
    this.channels = [...config.channels].sort((a, b) => b.priority - a.priority);
    for (const channel of this.channels) {
      for (const model of new Set(channel.models)) {
        let info = this.byId.get(model);
        if (!info) {
          // owned_by: the model's own setting, else the type of its best channel.
          const price = Object.hasOwn(config.models, model) ? config.models[model] : undefined;
          info = {
            entry: { id: model, object: 'model', created: MODEL_CREATED, owned_by: price?.owned_by ?? channel.type },
            groups: new Set(),
            channels: [],
          };
          this.byId.set(model, info);
        }
        for (const g of channel.groups) info.groups.add(g);
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

  /** Channels that serve `model` to `group`, best first (priority desc, then file order). */
  channelsFor(model: string, group: string): ChannelConfig[] {
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

  /**
   * The list in the Anthropic Models API's shape (`{data:[{type:'model', id, display_name, created_at}], has_more,
   * first_id, last_id}`), for clients that list models through an Anthropic base URL.
   */
  anthropicList(who: ModelVisibility): Record<string, unknown> {
    const created = new Date(MODEL_CREATED * 1000).toISOString();
    const data = this.list(who).map((m) => ({ type: 'model', id: m.id, display_name: m.id, created_at: created }));
    return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  }

  /** The list in the Gemini API's shape (`{models: [{name: 'models/<id>', ...}]}`), for clients of its routes. */
  geminiList(who: ModelVisibility): Array<Record<string, unknown>> {
    return this.list(who).map((m) => this.geminiModel(m.id));
  }

  /** One model in the Gemini API's shape; its generation methods follow its kind. */
  geminiModel(id: string): Record<string, unknown> {
    const kind = Object.hasOwn(this.config.models, id) ? this.config.models[id].kind : 'chat';
    return {
      name: `models/${id}`,
      baseModelId: id,
      version: '001',
      displayName: id,
      description: '',
      supportedGenerationMethods: kind === 'embedding' ? ['embedContent', 'batchEmbedContents'] : ['generateContent', 'streamGenerateContent', 'countTokens'],
    };
  }
}

export interface Catalog {
  /** The snapshot of the store's current config (built once per config, on first use after a reload). */
  current(): CatalogSnapshot;
  /**
   * The snapshot of a given config: a request that took `config.current()` at its start uses this, so its
   * model list and its routing come from the same config even if a reload happens meanwhile.
   */
  of(config: GatewayConfig): CatalogSnapshot;
  /** Same as current(); kept for callers written against the database-backed catalog. */
  snapshot(): Promise<CatalogSnapshot>;
  /** Same as current(); kept for callers written against the database-backed catalog. */
  fresh(): CatalogSnapshot;
  /** Same as current(): the catalog follows the store, there is nothing to re-read. */
  refresh(): Promise<CatalogSnapshot>;
}

/**
 * The model catalog of this process, over the gateway config (GATEWAY_CONFIG, or the built-in simulator
 * config): the models of its channels. A SIGHUP reload swaps the store's config; the next read builds the
 * new snapshot, so `/v1/models` reflects the file at once.
 */
export function createCatalog(store: Pick<ConfigStore, 'current'>): Catalog {
  const byConfig = new WeakMap<GatewayConfig, CatalogSnapshot>();
  let version = 0;
  let last: CatalogSnapshot | undefined;
  const of = (config: GatewayConfig): CatalogSnapshot => {
    if (last?.config === config) return last;
    let snap = byConfig.get(config);
    if (!snap) {
      snap = new CatalogSnapshot(++version, config);
      byConfig.set(config, snap);
    }
    return snap;
  };
  const current = (): CatalogSnapshot => {
    last = of(store.current());
    return last;
  };
  return {
    current,
    of,
    fresh: current,
    snapshot: async () => current(),
    refresh: async () => current(),
  };
}
