import type { Client as TemporalClient } from '@temporalio/client';
import type { Pool } from 'pg';
import { Catalog, createCatalog } from '../domain/catalog';
import { BatchService, BatchSettings, createBatchService } from '../domain/keys/batches';
import { createKeyAuthenticator, KeyAuthenticator } from '../domain/keys/key-auth';
import { createLocalKeyChangeBus, KeyChangeBus } from '../domain/keys/key-change-bus';
import { KeyCipher } from '../domain/keys/key-material';
import { createTokenService, TokenService } from '../domain/keys/tokens';
import { createTemporalBatchStarter } from '../temporal/batch-starter';
import { ConfigStore, createConfigStore } from '../gateway-config/store';
import { createRelay, Relay, RelayOptions } from '../domain/relay/relay';
import { createMessagesRelay, MessagesRelay } from '../domain/relay/messages-relay';

export interface TemporalDeps {
  client: TemporalClient;
  taskQueue: string;
}

/** Everything routes need, built once per process and handed to the app. */
export interface GatewayDeps {
  db: Pool;
  cipher: KeyCipher;
  keyAuth: KeyAuthenticator;
  keyChanges: KeyChangeBus;
  tokens: TokenService;
  /** Bulk key rollouts (issue, status, rotate) as workflows keys:<batch id>. */
  batches: BatchService;
  temporal: TemporalDeps | null;
  /** Models of the enabled channels, per replica, refreshed every few seconds. */
  catalog: Catalog;
  /** Channels and prices (GATEWAY_CONFIG, else built-in). */
  config: ConfigStore;
  /** Chat, embeddings and images relayed to the config's channels, metered into the ledger. */
  relay: Relay;
  /** POST /v1/messages over the same channels, cooldown and metering. */
  messages: MessagesRelay;
}

export interface DepsOptions {
  db: Pool;
  secret: string;
  temporal?: TemporalDeps | null;
  /** Builds the cross-replica bus; defaults to in-process invalidation only. */
  keyChangeBus?: (keyAuth: KeyAuthenticator) => KeyChangeBus | Promise<KeyChangeBus>;
  /** Chunking of bulk key workflows; the defaults suit production. */
  batches?: Partial<BatchSettings>;
  /** How long the in-memory model catalog is trusted before it is re-read (default 5 s). */
  catalogTtlMs?: number;
  /** Channels and prices; defaults to GATEWAY_CONFIG or the built-in simulator config. */
  config?: ConfigStore;
  /** Relay tuning (adapters, cooldown, attempts). */
  relay?: Partial<Omit<RelayOptions, 'db' | 'config'>>;
}

export async function createDeps(opts: DepsOptions): Promise<GatewayDeps> {
  const cipher = new KeyCipher(opts.secret);
  const keyAuth = createKeyAuthenticator(opts.db);
  const keyChanges = await (opts.keyChangeBus ?? createLocalKeyChangeBus)(keyAuth);
  const tokens = createTokenService({
    db: opts.db,
    cipher,
    publishKeyChange: (tx, id) => keyChanges.publish(tx, id),
    afterKeyChange: (change) => keyChanges.afterCommit(change),
  });
  const batches = createBatchService({
    db: opts.db,
    tokens,
    starter: opts.temporal ? createTemporalBatchStarter(opts.temporal) : null,
    settings: opts.batches,
  });
  const catalog = createCatalog(opts.db, { ttlMs: opts.catalogTtlMs });
  const config = opts.config ?? createConfigStore(process.env.GATEWAY_CONFIG, process.env.GATEWAY_SIMULATOR_URL ?? 'http://127.0.0.1:4010');
  const relay = createRelay({ ...opts.relay, db: opts.db, config });
  const messages = createMessagesRelay({ db: opts.db, config, cooldown: relay.cooldown, maxAttempts: opts.relay?.maxAttempts, random: opts.relay?.random });
  return { db: opts.db, cipher, keyAuth, keyChanges, tokens, batches, temporal: opts.temporal ?? null, catalog, config, relay, messages };
}
