import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { reserve, settle } from '../../src/domain/billing/holds';
import { plainUsage } from '../../src/domain/pricing/usage';
import { listLedger, sumLedger } from '../../src/db/ledger';
import { TOKEN_DETAIL_COLUMNS } from '../../src/domain/ports/usage';
import { KeyCipher } from '../../src/domain/keys/key-material';
import { createTokenService } from '../../src/domain/keys/tokens';
import { newAccount, TEST_SECRET } from '../helpers/harness';
import { openTestPool, TestPool } from '../helpers/test-database';
import { createRepositories } from '../../src/db/repositories';
import { createHoldRepository } from '../../src/db/repositories/holds';

const NO_DETAILS = Object.fromEntries(TOKEN_DETAIL_COLUMNS.map((c) => [c, 0]));

/** The ledger reader behind `GET /api/log/`: what settle wrote, per account, filtered and paged. */
describe('billing ledger', () => {
  let database: TestPool;
  let db: Pool;
  beforeAll(async () => {
    database = await openTestPool(5);
    db = database.pool;
  });
  afterAll(async () => {
    await database.close();
  });

  it('lists an account\'s billed calls newest first, with filters, paging and totals', async () => {
    const tokens = createTokenService({ repos: createRepositories(db), cipher: new KeyCipher(TEST_SECRET), publishKeyChange: async () => {}, afterKeyChange: async () => {} });
    const acct = await newAccount(db);
    const other = await newAccount(db);
    const a = await tokens.create(acct.id, { name: 'alpha', unlimited_quota: true });
    const b = await tokens.create(acct.id, { name: 'beta', unlimited_quota: true });
    const o = await tokens.create(other.id, { name: 'alpha', unlimited_quota: true });
    const bill = async (accountId: number, token: { id: number; name: string }, model: string, amount: number, prompt = 10) => {
      const businessKey = `req:${randomUUID()}`;
      await reserve(createHoldRepository(db), { businessKey, accountId, tokenId: token.id, amount, reason: 'test', ttlSeconds: 60 });
      const r = await settle(createHoldRepository(db), businessKey, {
        actualAmount: amount,
        requestId: businessKey,
        model,
        tokenName: token.name,
        usage: plainUsage(prompt, 2),
      });
      expect(r.status).toBe('settled');
    };
    await bill(acct.id, a, 'gpt-4o', 100);
    await bill(acct.id, b, 'gpt-4o', 200);
    await bill(acct.id, a, 'o1', 300, 20);
    await bill(other.id, o, 'gpt-4o', 999);
    // A released hold is not billed and not listed.
    await reserve(createHoldRepository(db), { businessKey: `req:${randomUUID()}`, accountId: acct.id, tokenId: a.id, amount: 5, reason: 'x', ttlSeconds: 60 });

    const all = await listLedger(db, acct.id, {}, { offset: 0, limit: 10 });
    expect(all.total).toBe(3);
    expect(all.items.map((e) => [e.tokenName, e.model, e.quota])).toEqual([
      ['alpha', 'o1', 300],
      ['beta', 'gpt-4o', 200],
      ['alpha', 'gpt-4o', 100],
    ]);
    expect(all.items[0]).toMatchObject({ accountId: acct.id, tokenId: a.id, promptTokens: 20, completionTokens: 2 });

    const alpha = await listLedger(db, acct.id, { tokenName: 'alpha' }, { offset: 0, limit: 1 });
    expect(alpha.total).toBe(2);
    expect(alpha.items.map((e) => e.model)).toEqual(['o1']);
    const page2 = await listLedger(db, acct.id, { tokenName: 'alpha' }, { offset: 1, limit: 1 });
    expect(page2.items.map((e) => e.model)).toEqual(['gpt-4o']);
    expect((await listLedger(db, acct.id, { modelName: 'gpt-4o' })).total).toBe(2);

    const now = Math.floor(Date.now() / 1000);
    expect((await listLedger(db, acct.id, { startTimestamp: now - 60, endTimestamp: now + 60 })).total).toBe(3);
    expect((await listLedger(db, acct.id, { startTimestamp: now + 60 })).total).toBe(0);
    expect((await listLedger(db, acct.id, { endTimestamp: now - 60 })).total).toBe(0);

    expect(await sumLedger(db, acct.id)).toEqual({ count: 3, quota: 600, promptTokens: 40, completionTokens: 6, units: 0, tokenDetails: NO_DETAILS });
    expect(await sumLedger(db, acct.id, { tokenName: 'alpha', modelName: 'gpt-4o' })).toMatchObject({ count: 1, quota: 100 });
    expect(await sumLedger(db, acct.id, { modelName: 'nothing' })).toEqual({ count: 0, quota: 0, promptTokens: 0, completionTokens: 0, units: 0, tokenDetails: NO_DETAILS });
  });
  it('bills a call whose upstream reported more tokens than the ledger columns hold: the row records their largest value', async () => {
    const tokens = createTokenService({ repos: createRepositories(db), cipher: new KeyCipher(TEST_SECRET), publishKeyChange: async () => {}, afterKeyChange: async () => {} });
    const acct = await newAccount(db);
    const key = await tokens.create(acct.id, { name: 'huge', unlimited_quota: true });
    const businessKey = `req:${randomUUID()}`;
    await reserve(createHoldRepository(db), { businessKey, accountId: acct.id, tokenId: key.id, amount: 70, reason: 'test', ttlSeconds: 60 });
    const r = await settle(createHoldRepository(db), businessKey, { actualAmount: 70, requestId: businessKey, model: 'm', tokenName: key.name, usage: plainUsage(3_000_000_000, 5_000_000_000) });
    expect(r.status).toBe('settled');
    const rows = await listLedger(db, acct.id, {}, { offset: 0, limit: 10 });
    expect(rows.items).toEqual([expect.objectContaining({ quota: 70, promptTokens: 2_147_483_647, completionTokens: 2_147_483_647 })]);
  });
});
