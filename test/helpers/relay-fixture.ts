import OpenAI from 'openai';
import { ConfigStore } from '../../src/gateway-config/store';
import { validateGatewayConfig, type GatewayConfigFileInput } from '../../src/gateway-config/schema';
import { startSimulator, type Simulator } from '../../src/simulator';
import type { ServicesOptions } from '../../src/runtime/services';
import { newAccount, startGateway, type TestGateway } from './harness';

/** Models every test channel serves. `unpriced-model` is served but has no price. */
export const RELAY_MODELS = ['gpt-4o-mini', 'o3-mini', 'text-embedding-3-small', 'dall-e-3', 'unpriced-model'];

export const PRICES = {
  'gpt-4o-mini': { input_per_1m: '0.15', output_per_1m: '0.6' },
  'o3-mini': { input_per_1m: '1.1', output_per_1m: '4.4', reasoning: true },
  'text-embedding-3-small': { input_per_1m: '0.02', kind: 'embedding' as const },
  'dall-e-3': { per_unit: '0.04' },
};

/** Independent of src/domain/pricing: gpt-4o-mini credits = ceil((p × 0.15 + c × 0.6) / 1e6 × 500000) = ceil((15p + 60c) / 200). */
export const miniCredits = (p: number, c: number, multiplier = 1) => Math.ceil((multiplier * (15 * p + 60 * c)) / 200);
/** text-embedding-3-small: ceil(p × 0.02 / 2) = ceil(p / 100). */
export const embeddingCredits = (p: number) => Math.ceil(p / 100);
/** dall-e-3: 0.04 USD × 500000 = 20000 credits per image. */
export const IMAGE_CREDITS = 20_000;

export interface RelayFixture {
  gw: TestGateway;
  /** Channel `primary` (priority 10, key `key-primary`). */
  primary: Simulator;
  /** Channel `backup` (priority 0, key `key-backup`). */
  backup: Simulator;
  close(): Promise<void>;
}

export function relayConfig(primaryUrl: string, backupUrl: string, extra: Partial<GatewayConfigFileInput> = {}) {
  const input: GatewayConfigFileInput = {
    channels: [
      { name: 'primary', type: 'openai', base_url: `${primaryUrl}/v1`, key: 'key-primary', models: RELAY_MODELS, priority: 10, groups: ['default', 'vip'], timeout_ms: 2000 },
      { name: 'backup', type: 'openai', base_url: `${backupUrl}/v1`, key: 'key-backup', models: RELAY_MODELS, priority: 0, groups: ['default', 'vip'], timeout_ms: 2000 },
    ],
    models: PRICES,
    groups: { vip: { multiplier: 0.5 } },
    ...extra,
  };
  const r = validateGatewayConfig(input, 'test');
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.config;
}

export async function startRelayFixture(relay: ServicesOptions['relay'] = {}): Promise<RelayFixture> {
  const primary = await startSimulator({ apiKey: 'key-primary' });
  const backup = await startSimulator({ apiKey: 'key-backup' });
  const gw = await startGateway({ config: ConfigStore.fixed(relayConfig(primary.url, backup.url)), relay });
  return {
    gw,
    primary,
    backup,
    async close() {
      await gw.close();
      await primary.close();
      await backup.close();
    },
  };
}

/** A fresh account with one key; `client` is the official SDK on it. */
export async function newKey(
  gw: TestGateway,
  settings: { remain_quota?: number; unlimited_quota?: boolean; models?: string; group?: string; name?: string } = {},
) {
  const acct = await newAccount(gw.db);
  const record = await gw.deps.tokens.create(acct.id, { remain_quota: 10_000_000, ...settings });
  const key = `sk-${record.key}`;
  const client = new OpenAI({ apiKey: key, baseURL: `${gw.baseUrl}/v1`, maxRetries: 0 });
  return { acct, record, key, client };
}

export async function tokenRow(gw: TestGateway, id: number): Promise<{ remain_quota: number; used_quota: number }> {
  const r = await gw.db.query('SELECT remain_quota, used_quota FROM tokens WHERE id = $1', [id]);
  return { remain_quota: Number(r.rows[0].remain_quota), used_quota: Number(r.rows[0].used_quota) };
}

export async function ledgerOf(gw: TestGateway, tokenId: number) {
  const r = await gw.db.query('SELECT * FROM ledger WHERE token_id = $1 ORDER BY id', [tokenId]);
  return r.rows.map((x) => ({ ...x, quota: Number(x.quota) }));
}

export async function holdsOf(gw: TestGateway, tokenId: number): Promise<number> {
  const r = await gw.db.query('SELECT count(*)::int AS n FROM quota_holds WHERE token_id = $1', [tokenId]);
  return r.rows[0].n;
}
