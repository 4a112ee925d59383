import { randomUUID } from 'node:crypto';
import { createAccount } from '../../src/domain/accounts/accounts';
import { createRepositories } from '../../src/db/repositories';
import { ensureBootstrapAccount } from '../../src/runtime/bootstrap';
import { startGateway, TestGateway } from '../helpers/harness';

describe('bootstrap account', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw.close();
  });
  const keysOf = async (accountId: number) =>
    (await gw.db.query<{ name: string }>('SELECT name FROM tokens WHERE user_id = $1', [accountId])).rows;

  it('creates the account and one working key once; a restart creates nothing', async () => {
    const username = `boot_${randomUUID().slice(0, 8)}`;
    const first = await ensureBootstrapAccount(gw.deps, { username });
    expect(first.created).toBe(true);
    expect(first.apiKey).toMatch(/^sk-[A-Za-z0-9]{48}$/);
    await expect(gw.deps.keyAuth.authenticate(first.apiKey!)).resolves.toMatchObject({ accountId: first.accountId });

    const again = await ensureBootstrapAccount(gw.deps, { username });
    expect(again).toMatchObject({ created: false, apiKey: null, password: null, accountId: first.accountId });
    expect(await keysOf(first.accountId)).toEqual([{ name: 'bootstrap' }]);
  });

  it('finishes a first start that died between creating the account and its key', async () => {
    const username = `boot_${randomUUID().slice(0, 8)}`;
    const { account } = await createAccount(createRepositories(gw.db), { username, password: 'long enough password' });
    const repaired = await ensureBootstrapAccount(gw.deps, { username });
    expect(repaired.created).toBe(false);
    expect(repaired.apiKey).toMatch(/^sk-/);
    expect(await keysOf(account.id)).toEqual([{ name: 'bootstrap' }]);
  });

  it('does not bring back a bootstrap key the operator deleted', async () => {
    const username = `boot_${randomUUID().slice(0, 8)}`;
    const first = await ensureBootstrapAccount(gw.deps, { username });
    const [key] = (await gw.db.query<{ id: number }>('SELECT id FROM tokens WHERE user_id = $1', [first.accountId])).rows;
    await gw.deps.tokens.remove(first.accountId, key.id);
    const again = await ensureBootstrapAccount(gw.deps, { username });
    expect(again.apiKey).toBeNull();
    expect(await keysOf(first.accountId)).toEqual([]);
  });
});
