import { createAccount, replaceSystemToken } from '../domain/accounts/accounts';
import type { Repositories } from '../domain/ports/repositories';
import { generateKeyMaterial, KEY_PREFIX } from '../domain/keys/key-material';
import type { TokenService } from '../domain/keys/tokens';

/** The account the first start creates. */
export const BOOTSTRAP_USERNAME = 'admin';
export const BOOTSTRAP_KEY_NAME = 'bootstrap';
// Serialises bootstrap across processes that start together (two api replicas); any constant works.
const BOOTSTRAP_LOCK_ID = 727_002;

export interface BootstrapResult {
  username: string;
  accountId: number;
  /** True on the start that created the account (and its key). */
  created: boolean;
  /** Plain values exist only on the start that generated them; afterwards only hashes are stored. */
  password: string | null;
  apiKey: string | null;
  /** Plain system token: generated now, or taken from GATEWAY_BOOTSTRAP_TOKEN; null on a plain restart. */
  systemToken: string | null;
  /** GATEWAY_BOOTSTRAP_TOKEN replaced a different stored token on this start. */
  systemTokenReplaced: boolean;
}

/**
 * Makes sure the bootstrap account exists. The first start creates it with a random password, a system
 * token (GATEWAY_BOOTSTRAP_TOKEN when set) and one unlimited API key named `bootstrap`, and returns them in
 * plain text once. Later starts create nothing; with GATEWAY_BOOTSTRAP_TOKEN set they make it the account's
 * system token again, so scripts always know it. The account's existence is what marks "first start".
 */
export async function ensureBootstrapAccount(
  deps: { repos: Repositories; tokens: TokenService },
  opts: { systemToken?: string; username?: string } = {},
): Promise<BootstrapResult> {
  const { repos } = deps;
  const username = opts.username ?? BOOTSTRAP_USERNAME;
  const createKey = async (accountId: number) => {
    const key = await deps.tokens.create(accountId, { name: BOOTSTRAP_KEY_NAME, unlimited_quota: true });
    return `${KEY_PREFIX}${key.key}`;
  };
  return repos.locks.exclusive(BOOTSTRAP_LOCK_ID, async (): Promise<BootstrapResult> => {
    const existing = await repos.accounts.byUsername(username);
    if (!existing) {
      const password = generateKeyMaterial(24);
      const { account, systemToken } = await createAccount(repos, { username, password, systemToken: opts.systemToken, admin: true });
      return {
        username: account.username,
        accountId: account.id,
        created: true,
        password,
        apiKey: await createKey(account.id),
        systemToken,
        systemTokenReplaced: false,
      };
    }
    // A first start that died between creating the account and its key: finish it now. The audit log, not the
    // key list, is the witness, so a bootstrap key the operator deleted on purpose is not brought back.
    const keyMade = await repos.audit.has(existing.id, 'token.create', { key: 'name', value: BOOTSTRAP_KEY_NAME });
    const apiKey = keyMade ? null : await createKey(existing.id);
    let replaced = false;
    if (opts.systemToken) {
      const token = opts.systemToken;
      replaced = await repos.transactions.run(async (tx) => {
        if (!(await replaceSystemToken(repos, tx, existing.id, token))) return false;
        await repos.audit.record({
          accountId: existing.id,
          action: 'account.system_token.set',
          targetType: 'account',
          targetId: existing.id,
          details: { source: 'GATEWAY_BOOTSTRAP_TOKEN' },
        }, tx);
        return true;
      });
    }
    return {
      username: existing.username,
      accountId: existing.id,
      created: false,
      password: null,
      apiKey,
      systemToken: opts.systemToken ?? null,
      systemTokenReplaced: replaced,
    };
  });
}
