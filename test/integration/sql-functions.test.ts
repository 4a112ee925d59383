// test modes: postgres, embedded
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Pool, PoolClient } from 'pg';
import { BillingService } from '../../src/domain/billing/billing-service';
import { release, reserve, settle } from '../../src/domain/billing/holds';
import { type BillingOperation, encodeEntry, encodeOperation } from '../../src/domain/billing/operations';
import { sweepExpiredHolds } from '../../src/domain/billing/sweeper';
import { FUNCTIONS_FILE } from '../../src/db/migrate';
import { KeyCipher } from '../../src/domain/keys/key-material';
import { createTokenService } from '../../src/domain/keys/tokens';
import { NO_TOKENS } from '../../src/domain/pricing/usage';
import { newAccount, TEST_SECRET } from '../helpers/harness';
import { embeddedMode, openTestPool, type TestPool } from '../helpers/test-database';
import { createRepositories } from '../../src/db/repositories';
import { createHoldRepository } from '../../src/db/repositories/holds';

/** The bodies of every function src/db/functions.sql defines, by name. */
function definedFunctions(): Map<string, string> {
  const sql = readFileSync(FUNCTIONS_FILE, 'utf8');
  const out = new Map<string, string>();
  for (const m of sql.matchAll(/CREATE OR REPLACE FUNCTION (\w+)\([\s\S]*?\$\$([\s\S]*?)\$\$;/g)) out.set(m[1], m[2]);
  return out;
}

describe('SQL functions: one live definition, applied by migrate', () => {
  let database: TestPool;
  let db: Pool;
  beforeAll(async () => {
    database = await openTestPool();
    db = database.pool;
  });
  afterAll(async () => database?.close());

  it('the database runs exactly the functions of src/db/functions.sql, one signature each', async () => {
    const defined = definedFunctions();
    expect(defined.size).toBeGreaterThanOrEqual(12);
    const res = await db.query<{ name: string; src: string }>(
      `SELECT p.proname AS name, p.prosrc AS src FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = current_schema() AND p.prokind = 'f'`,
    );
    const running = new Map<string, string[]>();
    for (const r of res.rows) running.set(r.name, [...(running.get(r.name) ?? []), r.src]);
    expect([...running.keys()].sort()).toEqual([...defined.keys()].sort());
    for (const [name, body] of defined) expect({ name, bodies: running.get(name) }).toEqual({ name, bodies: [body] });
  });

  it('billing_batch refuses an operation that lacks a key it reads, by name, instead of billing a NULL', async () => {
    const entry = { requestId: 'r', model: 'm', usage: NO_TOKENS };
    const samples: BillingOperation[] = [
      { op: 'reserve', key: 'k', account: 1, token: null, amount: 1, reason: 'r', ttlSeconds: 1 },
      { op: 'settle', key: 'k', actual: 1, chargeExcess: false, entry },
      { op: 'release', key: 'k' },
      { op: 'lease', key: 'k', account: 1, token: 1, amount: 1, ttlSeconds: 1 },
      { op: 'renew', key: 'k', ttlSeconds: 1 },
      { op: 'settle_lease', key: 'k', portion: 1, actual: 1, account: 1, token: 1, entry },
    ];
    for (const sample of samples) {
      const encoded = encodeOperation(sample);
      for (const field of Object.keys(encoded).filter((k) => k !== 'op' && k !== 'token')) {
        const broken = { ...encoded, [`${field}_renamed`]: encoded[field] };
        delete broken[field];
        await expect(db.query('SELECT billing_batch($1::jsonb)', [JSON.stringify([broken])])).rejects.toThrow(`lacks "${field}"`);
      }
    }
    // A ledger entry without its request id or model is refused too, and the hold stays.
    const acct = await newAccount(db);
    for (const field of ['request_id', 'model']) {
      const key = `req:${randomUUID()}`;
      await reserve(createHoldRepository(db), { businessKey: key, accountId: acct.id, tokenId: null, amount: 5, reason: 'test', ttlSeconds: 60 });
      const e: Record<string, unknown> = { ...encodeEntry({ ...entry, requestId: key }) };
      delete e[field];
      await expect(db.query('SELECT * FROM billing_settle($1, 1, false, $2::jsonb, false)', [key, JSON.stringify(e)])).rejects.toThrow(`lacks "${field}"`);
      expect((await db.query('SELECT 1 FROM quota_holds WHERE business_key = $1', [key])).rowCount).toBe(1);
    }
  });

  it('every key of an encoded ledger entry is a ledger column (jsonb_populate_record would drop a renamed one)', async () => {
    const cols = await db.query<{ c: string }>("SELECT column_name AS c FROM information_schema.columns WHERE table_name = 'ledger' AND table_schema = current_schema()");
    const names = new Set(cols.rows.map((r) => r.c));
    for (const k of Object.keys(encodeEntry({ requestId: 'r', model: 'm', usage: NO_TOKENS }))) expect({ k, column: names.has(k) }).toEqual({ k, column: true });
  });

  describe('a hold gives money back only where it took it', () => {
    let tokens: ReturnType<typeof createTokenService>;
    beforeAll(() => {
      tokens = createTokenService({ repos: createRepositories(db), cipher: new KeyCipher(TEST_SECRET), publishKeyChange: async () => {}, afterKeyChange: async () => {} });
    });

    async function setup(wallet: number | null) {
      const acct = await newAccount(db);
      await db.query('UPDATE accounts SET quota = $2 WHERE id = $1', [acct.id, wallet]);
      const t = await tokens.create(acct.id, { name: 'w', remain_quota: 10_000 });
      return { accountId: acct.id, tokenId: t.id };
    }
    const wallet = async (id: number) => (await db.query<{ quota: number | null }>('SELECT quota FROM accounts WHERE id = $1', [id])).rows[0].quota;
    const remain = async (id: number) => (await db.query<{ r: number }>('SELECT remain_quota AS r FROM tokens WHERE id = $1', [id])).rows[0].r;

    it('taken while the wallet was unlimited: made limited meanwhile, release and sweep credit it nothing', async () => {
      const t = await setup(null);
      const a = `req:${randomUUID()}`;
      const b = `req:${randomUUID()}`;
      await reserve(createHoldRepository(db), { businessKey: a, ...t, amount: 300, reason: 'test', ttlSeconds: 600 });
      await reserve(createHoldRepository(db), { businessKey: b, ...t, amount: 200, reason: 'test', ttlSeconds: 600 });
      await db.query('UPDATE accounts SET quota = 1000 WHERE id = $1', [t.accountId]);
      expect(await release(createHoldRepository(db), a)).toEqual({ status: 'released', refunded: 300 });
      await db.query('UPDATE quota_holds SET expires_at = now() WHERE business_key = $1', [b]);
      expect(await sweepExpiredHolds(createHoldRepository(db))).toBeGreaterThanOrEqual(1);
      expect(await wallet(t.accountId)).toBe(1000);
      expect(await remain(t.tokenId)).toBe(10_000);
    });

    it('taken from a limited wallet: made unlimited meanwhile, settle leaves it unlimited; the budget gets its refund', async () => {
      const t = await setup(5000);
      const k = `req:${randomUUID()}`;
      await reserve(createHoldRepository(db), { businessKey: k, ...t, amount: 400, reason: 'test', ttlSeconds: 600 });
      expect(await wallet(t.accountId)).toBe(4600);
      await db.query('UPDATE accounts SET quota = NULL WHERE id = $1', [t.accountId]);
      expect(await settle(createHoldRepository(db), k, { actualAmount: 100, requestId: k, model: 'm' })).toMatchObject({ status: 'settled', billed: 100, refunded: 300 });
      expect(await wallet(t.accountId)).toBeNull();
      expect(await remain(t.tokenId)).toBe(9_900);
    });

    it('a credit lease taken against an unlimited wallet is not topped up from it once it turned limited', async () => {
      const t = await setup(null);
      const billing = new BillingService(createHoldRepository(db), { leases: false });
      const lease = `lease:${randomUUID()}`;
      expect((await billing.batcher.submit({ op: 'lease', key: lease, account: t.accountId, token: t.tokenId, amount: 100, ttlSeconds: 60 })).o_status).toBe('ok');
      await db.query('UPDATE accounts SET quota = 1000 WHERE id = $1', [t.accountId]);
      expect((await billing.batcher.submit({ op: 'lease', key: lease, account: t.accountId, token: t.tokenId, amount: 100, ttlSeconds: 60 })).o_status).toBe('moved');
      expect(await wallet(t.accountId)).toBe(1000);
      expect((await billing.batcher.submit({ op: 'release', key: lease })).o_status).toBe('released');
      expect(await wallet(t.accountId)).toBe(1000);
      expect(await remain(t.tokenId)).toBe(10_000);
    });
  });

  describe("a key's owner and batch are references, checked once per statement", () => {
    const insertKey = (q: Pool | PoolClient, userId: number, batchId: number | null = null) =>
      q.query(
        `INSERT INTO tokens (user_id, key_hash, key_cipher, name, created_time, batch_id, batch_index)
         VALUES ($1, $2, '\\x00', 'ref', 1, $3, CASE WHEN $3::bigint IS NULL THEN NULL ELSE 1 END) RETURNING id`,
        [userId, Buffer.from(randomUUID()), batchId],
      );
    const newBatch = async (accountId: number) =>
      (await db.query<{ id: number }>(
        "INSERT INTO key_batches (account_id, kind, status, requested) VALUES ($1, 'issue', 'running', 1) RETURNING id",
        [accountId],
      )).rows[0].id;

    it('a key of an account or a batch that does not exist is refused as a foreign key would refuse it', async () => {
      const account = await newAccount(db);
      await expect(insertKey(db, 2_000_000_000)).rejects.toMatchObject({ code: '23503' });
      await expect(insertKey(db, account.id, 2_000_000_000)).rejects.toMatchObject({ code: '23503' });
      const batch = await newBatch(account.id);
      const made = await insertKey(db, account.id, batch);
      await expect(db.query('UPDATE tokens SET user_id = 2000000000 WHERE id = $1', [made.rows[0].id])).rejects.toMatchObject({ code: '23503' });
    });

    it("deleting a batch leaves its keys without one; deleting an account deletes its keys", async () => {
      const account = await newAccount(db);
      const batch = await newBatch(account.id);
      const key = (await insertKey(db, account.id, batch)).rows[0].id;
      await db.query('DELETE FROM key_batches WHERE id = $1', [batch]);
      expect((await db.query('SELECT batch_id FROM tokens WHERE id = $1', [key])).rows).toEqual([{ batch_id: null }]);
      await db.query('DELETE FROM accounts WHERE id = $1', [account.id]);
      expect((await db.query('SELECT count(*)::int AS n FROM tokens WHERE user_id = $1', [account.id])).rows[0].n).toBe(0);
    });

    it('an account being given a key cannot be deleted until that insert ends', async () => {
      if (embeddedMode()) return; // one session: there is no second transaction to race
      const account = await newAccount(db);
      const writer = await db.connect();
      const deleter = await db.connect();
      try {
        await writer.query('BEGIN');
        await insertKey(writer, account.id);
        await deleter.query("SET lock_timeout = '300ms'");
        await expect(deleter.query('DELETE FROM accounts WHERE id = $1', [account.id])).rejects.toMatchObject({ code: '55P03' });
        await writer.query('COMMIT');
      } finally {
        await deleter.query('RESET lock_timeout');
        writer.release();
        deleter.release();
      }
    });
  });
});

