import type { Pool, PoolClient } from 'pg';
import { inTransaction } from '../../db/pool';
import { recordAudit } from '../audit';
import { NotFoundError, ValidationError } from '../errors';
import type { KeyChange } from './key-change-bus';
import { generateKeyMaterial, hashKey, KeyCipher } from './key-material';
import { IssuedSettings, isExpired, TOKEN_COLUMNS, TOKEN_DEFAULTS, TokenRecord, TokenRow, TokenSettings, toTokenRecord } from './token-record';

/** `R` is the receipt of one key change (the bus's KeyChange); the service only carries it across the commit. */
export interface TokenServiceDeps<R = KeyChange> {
  db: Pool;
  cipher: KeyCipher;
  /** Called inside the writing transaction so every replica drops its cached copy of the key. */
  publishKeyChange: (tx: PoolClient, tokenId: number) => Promise<R>;
  /** Called after commit with that call's receipt; resolves once no replica can serve the old key from cache. */
  afterKeyChange: (change: R) => Promise<void>;
}

/** Optional filters of a key list: a batch's keys, a name substring, a status, a group ('' = default). */
export interface TokenListFilter {
  batchId?: number;
  keyword?: string;
  status?: number;
  group?: string;
  /** Cursor: only keys listed after this id (newest-first order: smaller ids); the page's offset is then ignored. */
  afterId?: number;
}

export interface Page {
  offset: number;
  limit: number;
}

export interface NewKeyRow extends IssuedSettings {
  userId: number;
  batchId?: number | null;
  batchIndex?: number | null;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** A periodic budget needs its period (a group default never fills in half of a key's own setting). */
export function assertPeriodComplete(s: Pick<TokenSettings, 'period_quota' | 'quota_period'>): void {
  if (s.period_quota > 0 && !s.quota_period) throw new ValidationError('quota_period: is required when period_quota is set', 'quota_period');
}

export function assertNotExpired(expiredTime: number): void {
  if (isExpired(expiredTime)) {
    throw new ValidationError('expired_time must be -1 (never) or a Unix time in the future', 'expired_time');
  }
}

/**
 * Inserts keys with fresh material. With a batch id, rows whose (batch_id, batch_index) exist already are
 * skipped, which makes a retried chunk idempotent. Returns the ids of the rows this call inserted.
 */
export async function insertKeys(tx: Pool | PoolClient, cipher: KeyCipher, rows: NewKeyRow[]): Promise<number[]> {
  if (rows.length === 0) return [];
  const created = nowSeconds();
  const cols = ['user_id', 'key_hash', 'key_cipher', 'name', '"group"', 'models', 'remain_quota', 'unlimited_quota',
    'expired_time', 'created_time', 'batch_id', 'batch_index', 'rpm_limit', 'tpm_limit', 'max_concurrency', 'period_quota', 'quota_period'];
  const params: unknown[] = [];
  const tuples = rows.map((r) => {
    const key = generateKeyMaterial();
    const values = [r.userId, hashKey(key), cipher.encrypt(key), r.name, r.group, r.models, r.remain_quota,
      r.unlimited_quota, r.expired_time, created, r.batchId ?? null, r.batchIndex ?? null, r.rpm_limit ?? 0, r.tpm_limit ?? 0,
      r.max_concurrency ?? 0, r.period_quota ?? 0, r.quota_period ?? null];
    const start = params.length;
    params.push(...values);
    return `(${values.map((_, i) => `$${start + i + 1}`).join(', ')})`;
  });
  const res = await tx.query<{ id: number }>(
    `INSERT INTO tokens (${cols.join(', ')}) VALUES ${tuples.join(', ')}
     ON CONFLICT (batch_id, batch_index) DO NOTHING RETURNING id`,
    params,
  );
  return res.rows.map((r) => r.id);
}

/**
 * The list's total. Without a name search or a batch, from the counters the tokens triggers keep per (account,
 * status, group) (migration 021): a million keys are not counted on every page.
 */
function countKeys(db: Pool, accountId: number, filter: TokenListFilter, sql: string, args: unknown[]): Promise<{ rows: Array<{ n: number }> }> {
  if (filter.keyword || filter.batchId !== undefined) return db.query<{ n: number }>(`SELECT count(*)::int AS n FROM tokens WHERE ${sql}`, args);
  const where = ['user_id = $1'];
  const params: unknown[] = [accountId];
  if (filter.status !== undefined) where.push(`status = $${params.push(filter.status)}`);
  if (filter.group !== undefined) where.push(`"group" = $${params.push(filter.group === 'default' ? '' : filter.group)}`);
  return db.query<{ n: number }>(`SELECT COALESCE(sum(n), 0)::bigint AS n FROM token_counts WHERE ${where.join(' AND ')}`, params);
}

export function createTokenService<R>(deps: TokenServiceDeps<R>) {
  const { db, cipher } = deps;

  async function readOwned(q: Pool | PoolClient, accountId: number, id: number): Promise<TokenRow> {
    const res = await q.query<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM tokens WHERE id = $1 AND user_id = $2`, [id, accountId]);
    // Another account's key reads exactly like a missing one.
    if (res.rowCount === 0) throw new NotFoundError(`token ${id} not found`, 'id');
    return res.rows[0];
  }

  return {
    async create(accountId: number, input: Partial<TokenSettings>, requestId?: string): Promise<TokenRecord> {
      const settings = { ...TOKEN_DEFAULTS, ...input };
      assertNotExpired(settings.expired_time);
      assertPeriodComplete(settings);
      return inTransaction(db, async (tx) => {
        const [id] = await insertKeys(tx, cipher, [{ ...settings, userId: accountId }]);
        await recordAudit(tx, {
          accountId, action: 'token.create', targetType: 'token', targetId: id, requestId,
          details: { name: settings.name },
        });
        return toTokenRecord(await readOwned(tx, accountId, id), cipher);
      });
    },

    async get(accountId: number, id: number): Promise<TokenRecord> {
      return toTokenRecord(await readOwned(db, accountId, id), cipher);
    },

    async list(accountId: number, page: Page, filter: TokenListFilter = {}): Promise<{ items: TokenRecord[]; total: number }> {
      const where = ['user_id = $1'];
      const args: unknown[] = [accountId];
      const add = (sql: string, v: unknown) => {
        args.push(v);
        where.push(sql.replace('?', `$${args.length}`));
      };
      if (filter.batchId !== undefined) add('batch_id = ?', filter.batchId);
      if (filter.keyword) add("name ILIKE '%' || ? || '%'", filter.keyword.replace(/[\\%_]/g, (c) => `\\${c}`));
      if (filter.group !== undefined) add('"group" = ?', filter.group === 'default' ? '' : filter.group);
      if (filter.status !== undefined) add('status = ?', filter.status);
      const order = filter.batchId === undefined ? 'id DESC' : 'batch_index ASC';
      const sql = where.join(' AND ');
      const cursor = filter.afterId !== undefined && filter.batchId === undefined;
      const pageWhere = cursor ? `${sql} AND id < $${args.length + 1}` : sql;
      const pageArgs = cursor ? [...args, filter.afterId] : args;
      const offset = cursor ? 0 : page.offset;
      // The page's ids first (an index-only walk past the offset), then only those rows: a deep page does not
      // read the rows it skips.
      const [rows, count] = await Promise.all([
        db.query<TokenRow>(
          `SELECT ${TOKEN_COLUMNS} FROM tokens WHERE id IN (
             SELECT id FROM tokens WHERE ${pageWhere} ORDER BY ${order} LIMIT ${page.limit} OFFSET ${offset}
           ) ORDER BY ${order}`,
          pageArgs,
        ),
        countKeys(db, accountId, filter, sql, args),
      ]);
      return { items: rows.rows.map((r) => toTokenRecord(r, cipher)), total: count.rows[0].n };
    },

    /** Whole-object update: omitted settings go back to their creation defaults; status is untouched. */
    async update(accountId: number, id: number, input: Partial<TokenSettings>, requestId?: string): Promise<TokenRecord> {
      const settings = { ...TOKEN_DEFAULTS, ...input };
      assertNotExpired(settings.expired_time);
      assertPeriodComplete(settings);
      const { record, change } = await inTransaction(db, async (tx) => {
        await readOwned(tx, accountId, id);
        await tx.query(
          `UPDATE tokens SET name = $3, remain_quota = $4, unlimited_quota = $5, "group" = $6, models = $7,
             expired_time = $8, rpm_limit = $9, tpm_limit = $10, max_concurrency = $11, period_quota = $12, quota_period = $13
           WHERE id = $1 AND user_id = $2`,
          [id, accountId, settings.name, settings.remain_quota, settings.unlimited_quota, settings.group,
            settings.models, settings.expired_time, settings.rpm_limit, settings.tpm_limit, settings.max_concurrency,
            settings.period_quota, settings.quota_period],
        );
        const change = await deps.publishKeyChange(tx, id);
        await recordAudit(tx, {
          accountId, action: 'token.update', targetType: 'token', targetId: id, requestId,
          details: { fields: Object.keys(TOKEN_DEFAULTS) },
        });
        return { record: toTokenRecord(await readOwned(tx, accountId, id), cipher), change };
      });
      await deps.afterKeyChange(change);
      return record;
    },

    async setStatus(accountId: number, id: number, status: 1 | 2, requestId?: string): Promise<TokenRecord> {
      const { record, change } = await inTransaction(db, async (tx) => {
        await readOwned(tx, accountId, id);
        await tx.query('UPDATE tokens SET status = $3 WHERE id = $1 AND user_id = $2', [id, accountId, status]);
        const change = await deps.publishKeyChange(tx, id);
        await recordAudit(tx, {
          accountId, action: status === 1 ? 'token.enable' : 'token.disable', targetType: 'token', targetId: id,
          requestId, details: { status },
        });
        return { record: toTokenRecord(await readOwned(tx, accountId, id), cipher), change };
      });
      await deps.afterKeyChange(change);
      return record;
    },

    async remove(accountId: number, id: number, requestId?: string): Promise<void> {
      const change = await inTransaction(db, async (tx) => {
        const row = await readOwned(tx, accountId, id);
        // Holds before the key, the order settle, release and the sweeper lock in; deleting the key updates
        // its holds (ON DELETE SET NULL), and the opposite order deadlocks with a concurrent settle.
        await tx.query('SELECT id FROM quota_holds WHERE token_id = $1 ORDER BY id FOR UPDATE', [id]);
        await tx.query('DELETE FROM tokens WHERE id = $1 AND user_id = $2', [id, accountId]);
        const change = await deps.publishKeyChange(tx, id);
        await recordAudit(tx, {
          accountId, action: 'token.delete', targetType: 'token', targetId: id, requestId, details: { name: row.name },
        });
        return change;
      });
      await deps.afterKeyChange(change);
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
