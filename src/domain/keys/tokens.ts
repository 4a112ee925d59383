import { NotFoundError, ValidationError } from '../errors';
import type { KeyRepository, NewKeyRecord, Page, TokenListFilter } from '../ports/keys';
import type { Repositories } from '../ports/repositories';
import type { Tx } from '../ports/transactions';
import type { KeyChange } from './key-change-bus';
import { generateKeyMaterial, hashKey, KeyCipher } from './key-material';
import { IssuedSettings, isExpired, TOKEN_DEFAULTS, TokenRecord, TokenRow, TokenSettings, toTokenRecord } from './token-record';

export type { Page, TokenListFilter };

/** `R` is the receipt of one key change (the bus's KeyChange); the service only carries it across the commit. */
export interface TokenServiceDeps<R = KeyChange> {
  repos: Pick<Repositories, 'keys' | 'audit' | 'transactions'>;
  cipher: KeyCipher;
  /** Called inside the writing transaction so every replica drops its cached copy of the key. */
  publishKeyChange: (tx: Tx, tokenId: number) => Promise<R>;
  /** Called after commit with that call's receipt; resolves once no replica can serve the old key from cache. */
  afterKeyChange: (change: R) => Promise<void>;
}

export interface NewKeyRow extends IssuedSettings {
  userId: number;
  batchId?: number | null;
  batchIndex?: number | null;
}

/** A periodic budget needs its period (a group default never fills in half of a key's own setting). */
export function assertPeriodComplete(s: Pick<TokenSettings, 'period_quota' | 'quota_period'>): void {
  if (s.period_quota > 0 && !s.quota_period) throw new ValidationError('quota_period: is required when period_quota is set', 'quota_period');
}

export function assertNotExpired(expiredTime: number): void {
  if (isExpired(expiredTime)) {
    throw new ValidationError('expired_time must be -1 (never) or a Unix time in the future', 'expired_time');
  }
}

/** New keys' records: fresh material for each, stored only as its lookup hash and its sealed form. */
export function withFreshMaterial(cipher: KeyCipher, rows: NewKeyRow[]): NewKeyRecord[] {
  return rows.map((r) => {
    const key = generateKeyMaterial();
    return { ...r, keyHash: hashKey(key), keyCipher: cipher.encrypt(key) };
  });
}

/**
 * Inserts keys with fresh material. With a batch id, rows whose (batch_id, batch_index) exist already are
 * skipped, which makes a retried chunk idempotent. Returns the ids of the rows this call inserted.
 */
export function insertKeys(keys: KeyRepository, cipher: KeyCipher, rows: NewKeyRow[], tx?: Tx): Promise<number[]> {
  return keys.insert(withFreshMaterial(cipher, rows), tx);
}

export function createTokenService<R>(deps: TokenServiceDeps<R>) {
  const { repos, cipher } = deps;
  const { keys, audit } = repos;

  async function readOwned(accountId: number, id: number, tx?: Tx): Promise<TokenRow> {
    const row = await keys.owned(accountId, id, tx);
    // Another account's key reads exactly like a missing one.
    if (!row) throw new NotFoundError(`token ${id} not found`, 'id');
    return row;
  }

  return {
    async create(accountId: number, input: Partial<TokenSettings>, requestId?: string): Promise<TokenRecord> {
      const settings = { ...TOKEN_DEFAULTS, ...input };
      assertNotExpired(settings.expired_time);
      assertPeriodComplete(settings);
      return repos.transactions.run(async (tx) => {
        const [id] = await insertKeys(keys, cipher, [{ ...settings, userId: accountId }], tx);
        await audit.record({ accountId, action: 'token.create', targetType: 'token', targetId: id, requestId, details: { name: settings.name } }, tx);
        return toTokenRecord(await readOwned(accountId, id, tx), cipher);
      });
    },

    async get(accountId: number, id: number): Promise<TokenRecord> {
      return toTokenRecord(await readOwned(accountId, id), cipher);
    },

    async list(accountId: number, page: Page, filter: TokenListFilter = {}): Promise<{ items: TokenRecord[]; total: number }> {
      const { rows, total } = await keys.list(accountId, page, filter);
      return { items: rows.map((r) => toTokenRecord(r, cipher)), total };
    },

    /** Whole-object update: omitted settings go back to their creation defaults; status is untouched. */
    async update(accountId: number, id: number, input: Partial<TokenSettings>, requestId?: string): Promise<TokenRecord> {
      const settings = { ...TOKEN_DEFAULTS, ...input };
      assertNotExpired(settings.expired_time);
      assertPeriodComplete(settings);
      const { record, change } = await repos.transactions.run(async (tx) => {
        await readOwned(accountId, id, tx);
        await keys.update(accountId, id, settings, tx);
        const change = await deps.publishKeyChange(tx, id);
        await audit.record({ accountId, action: 'token.update', targetType: 'token', targetId: id, requestId, details: { fields: Object.keys(TOKEN_DEFAULTS) } }, tx);
        return { record: toTokenRecord(await readOwned(accountId, id, tx), cipher), change };
      });
      await deps.afterKeyChange(change);
      return record;
    },

    async setStatus(accountId: number, id: number, status: 1 | 2, requestId?: string): Promise<TokenRecord> {
      const { record, change } = await repos.transactions.run(async (tx) => {
        await readOwned(accountId, id, tx);
        await keys.setStatus(accountId, id, status, tx);
        const change = await deps.publishKeyChange(tx, id);
        await audit.record(
          { accountId, action: status === 1 ? 'token.enable' : 'token.disable', targetType: 'token', targetId: id, requestId, details: { status } },
          tx,
        );
        return { record: toTokenRecord(await readOwned(accountId, id, tx), cipher), change };
      });
      await deps.afterKeyChange(change);
      return record;
    },

    async remove(accountId: number, id: number, requestId?: string): Promise<void> {
      const change = await repos.transactions.run(async (tx) => {
        const row = await readOwned(accountId, id, tx);
        await keys.delete(accountId, id, tx);
        const change = await deps.publishKeyChange(tx, id);
        await audit.record({ accountId, action: 'token.delete', targetType: 'token', targetId: id, requestId, details: { name: row.name } }, tx);
        return change;
      });
      await deps.afterKeyChange(change);
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
