// test modes: postgres, embedded
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { startGateway, type TestGateway } from '../helpers/harness';
import { holdsOf, ledgerOf, newKey, PRICES, relayConfig, tokenRow } from '../helpers/relay-fixture';

/**
 * A call that costs more than its hold (no max_tokens: the hold covers only the default completion cap, here 1
 * token) is billed its actual cost: the excess comes from the key's budget and the account wallet as far as both
 * can pay, never below zero; what they cannot pay is the ledger row's shortfall. Prices make it exact: input
 * free, output 1,000 USD per 1M tokens = 500 credits per completion token, so the hold is 500 credits.
 */
describe('relay: a cost above the hold is billed', () => {
  const PER_TOKEN = 500;
  let sim: Simulator;
  let backup: Simulator;
  let gw: TestGateway;
  beforeAll(async () => {
    sim = await startSimulator({ apiKey: 'key-primary' });
    backup = await startSimulator({ apiKey: 'key-backup' });
    const config = relayConfig(sim.url, backup.url, { models: { ...PRICES, 'gpt-4o-mini': { input_per_1m: '0', output_per_1m: '1000' } } });
    gw = await startGateway({ config: ConfigStore.fixed(config), relay: { defaultCompletionCap: 1 } });
  });
  afterAll(async () => {
    await gw.close();
    await sim.close();
    await backup.close();
  });

  const ask = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'Tell me a short story about a gateway.' }] };
  const wallet = async (accountId: number) =>
    (await gw.db.query<{ quota: string | null }>('SELECT quota FROM accounts WHERE id = $1', [accountId])).rows[0].quota;

  it('a key that can pay: the whole cost, no shortfall', async () => {
    const { client, record } = await newKey(gw, { remain_quota: 10_000_000 });
    const r = await client.chat.completions.create(ask);
    const c = r.usage!.completion_tokens;
    expect(c).toBeGreaterThan(1);
    const [row] = await ledgerOf(gw, record.id);
    expect(row).toMatchObject({ quota: PER_TOKEN * c, completion_tokens: c });
    expect(Number(row.shortfall)).toBe(0);
    expect(await tokenRow(gw, record.id)).toEqual({ remain_quota: 10_000_000 - PER_TOKEN * c, used_quota: PER_TOKEN * c });
    expect(await holdsOf(gw, record.id)).toBe(0);
  });

  it('a key that cannot pay all of it: charged down to zero, the rest recorded as shortfall', async () => {
    const { client, record } = await newKey(gw, { remain_quota: PER_TOKEN + 1 });
    const r = await client.chat.completions.create(ask);
    const cost = PER_TOKEN * r.usage!.completion_tokens;
    expect(cost).toBeGreaterThan(PER_TOKEN + 1);
    const [row] = await ledgerOf(gw, record.id);
    expect(row.quota).toBe(PER_TOKEN + 1);
    expect(Number(row.shortfall)).toBe(cost - (PER_TOKEN + 1));
    expect(await tokenRow(gw, record.id)).toEqual({ remain_quota: 0, used_quota: PER_TOKEN + 1 });
    // The next call does not fit any more.
    await expect(client.chat.completions.create(ask)).rejects.toMatchObject({ status: 429 });
  });

  it('an unlimited key on a limited wallet: the wallet pays what it has, never below zero', async () => {
    const { client, record, acct } = await newKey(gw, { unlimited_quota: true });
    await gw.db.query('UPDATE accounts SET quota = $2 WHERE id = $1', [acct.id, PER_TOKEN + 200]);
    const r = await client.chat.completions.create(ask);
    const cost = PER_TOKEN * r.usage!.completion_tokens;
    const [row] = await ledgerOf(gw, record.id);
    expect(row.quota).toBe(PER_TOKEN + 200);
    expect(Number(row.shortfall)).toBe(cost - (PER_TOKEN + 200));
    expect(Number(await wallet(acct.id))).toBe(0);
    expect((await tokenRow(gw, record.id)).used_quota).toBe(PER_TOKEN + 200);
  });

  it('an unlimited key on an uncapped wallet pays in full, plain and streamed', async () => {
    const { client, record, acct } = await newKey(gw, { unlimited_quota: true });
    const r = await client.chat.completions.create(ask);
    const plain = PER_TOKEN * r.usage!.completion_tokens;
    let streamed = 0;
    for await (const chunk of await client.chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } })) {
      if (chunk.usage) streamed = PER_TOKEN * chunk.usage.completion_tokens;
    }
    expect(streamed).toBeGreaterThan(PER_TOKEN);
    const rows = await ledgerOf(gw, record.id);
    expect(rows.map((x) => [x.quota, Number(x.shortfall), x.is_stream])).toEqual([
      [plain, 0, false],
      [streamed, 0, true],
    ]);
    expect((await tokenRow(gw, record.id)).used_quota).toBe(plain + streamed);
    expect(await wallet(acct.id)).toBeNull();
  });
});
