import type { Pool, PoolClient } from 'pg';
import { inTransaction } from '../../db/pool';
import { recordAudit } from '../audit';
import { NotFoundError, ValidationError } from '../errors';
import type { KeyChange } from './key-change-bus';
import { generateKeyMaterial, hashKey, KeyCipher } from './key-material';
import { SEALED_CIPHER_BYTES, SEALED_HASH_BYTES, SEALED_KEY_BYTES } from './key-sealer';
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
  // One array per column: the statement binds 17 parameters whatever the number of rows.
  const columns: Array<[string, string, (r: NewKeyRow, key: string) => unknown]> = [
    ['user_id', 'bigint', (r) => r.userId],
    ['key_hash', 'bytea', (_r, key) => hashKey(key)],
    ['key_cipher', 'bytea', (_r, key) => cipher.encrypt(key)],
    ['name', 'text', (r) => r.name],
    ['"group"', 'text', (r) => r.group],
    ['models', 'text', (r) => r.models],
    ['remain_quota', 'bigint', (r) => r.remain_quota],
    ['unlimited_quota', 'boolean', (r) => r.unlimited_quota],
    ['expired_time', 'bigint', (r) => r.expired_time],
    ['batch_id', 'bigint', (r) => r.batchId ?? null],
    ['batch_index', 'integer', (r) => r.batchIndex ?? null],
    ['rpm_limit', 'integer', (r) => r.rpm_limit ?? 0],
    ['tpm_limit', 'bigint', (r) => r.tpm_limit ?? 0],
    ['max_concurrency', 'integer', (r) => r.max_concurrency ?? 0],
    ['period_quota', 'bigint', (r) => r.period_quota ?? 0],
    ['quota_period', 'text', (r) => r.quota_period ?? null],
  ];
  const arrays: unknown[][] = columns.map(() => new Array(rows.length));
  rows.forEach((r, i) => {
    const key = generateKeyMaterial();
    columns.forEach(([, , value], c) => {
      arrays[c][i] = value(r, key);
    });
  });
  const res = await tx.query<{ id: number }>(
    `INSERT INTO tokens (${columns.map(([name]) => name).join(', ')}, created_time)
     SELECT *, $${columns.length + 1}::bigint FROM unnest(${columns.map(([, type], c) => `$${c + 1}::${type}[]`).join(', ')})
     ON CONFLICT (batch_id, batch_index) DO NOTHING RETURNING id`,
    [...arrays, nowSeconds()],
  );
  return res.rows.map((r) => r.id);
}

/**
 * Inserts the keys `from..to` of a batch, all with the same settings and named `<prefix>-00001` by index (the
 * number is the key's batch_index, zero-padded to five digits), from the material a KeySealer made (one record per
 * key, in index order); an index that exists already is skipped (a retried chunk is idempotent). The material
 * travels as one blob of fixed-width records, cut up in SQL: a million keys are not a million array elements to
 * escape. Returns how many rows this call inserted.
 */
export async function insertKeyRange(
  tx: Pool | PoolClient,
  blob: Buffer,
  r: { userId: number; settings: IssuedSettings; namePrefix: string; batchId: number; from: number; to: number },
): Promise<number> {
  const n = r.to - r.from + 1;
  if (n <= 0) return 0;
  const width = SEALED_KEY_BYTES;
  if (blob.length !== n * width) throw new Error(`key material for ${n} keys is ${blob.length} bytes, expected ${n * width}`);
  const s = r.settings;
  const res = await tx.query(
    `INSERT INTO tokens (user_id, key_hash, key_cipher, name, "group", models, remain_quota, unlimited_quota, expired_time,
       created_time, batch_id, batch_index, rpm_limit, tpm_limit, max_concurrency, period_quota, quota_period)
     SELECT $1, substring($2::bytea FROM (i - $3) * ${width} + 1 FOR ${SEALED_HASH_BYTES}),
       substring($2::bytea FROM (i - $3) * ${width} + ${SEALED_HASH_BYTES + 1} FOR ${SEALED_CIPHER_BYTES}),
       $5 || '-' || CASE WHEN i < 100000 THEN lpad(i::text, 5, '0') ELSE i::text END,
       $6, $7, $8, $9, $10, $11, $12, i, $13, $14, $15, $16, $17
     FROM generate_series($3::int, $4::int) AS i
     ON CONFLICT (batch_id, batch_index) DO NOTHING`,
    [r.userId, blob, r.from, r.to, r.namePrefix, s.group, s.models, s.remain_quota, s.unlimited_quota, s.expired_time,
      nowSeconds(), r.batchId, s.rpm_limit ?? 0, s.tpm_limit ?? 0, s.max_concurrency ?? 0, s.period_quota ?? 0, s.quota_period ?? null],
  );
  return res.rowCount ?? 0;
}

/**
 * The conditions on a key's owner, status and group ('default' is the empty group), in the columns both tokens and
 * token_counts have: the list filters by them, and its total is read from the counters by them.
 */
function ownerStatusGroup(accountId: number, filter: TokenListFilter): { where: string[]; args: unknown[] } {
  const where = ['user_id = $1'];
  const args: unknown[] = [accountId];
  if (filter.status !== undefined) where.push(`status = $${args.push(filter.status)}`);
  if (filter.group !== undefined) where.push(`"group" = $${args.push(filter.group === 'default' ? '' : filter.group)}`);
  return { where, args };
}

/**
 * The list's total. Without a name search or a batch, from the counters the tokens triggers keep per (account,
 * status, group) (migration 021): a million keys are not counted on every page.
 */
function countKeys(db: Pool, accountId: number, filter: TokenListFilter, sql: string, args: unknown[]): Promise<{ rows: Array<{ n: number }> }> {
  if (filter.keyword || filter.batchId !== undefined) return db.query<{ n: number }>(`SELECT count(*)::int AS n FROM tokens WHERE ${sql}`, args);
  const counted = ownerStatusGroup(accountId, filter);
  return db.query<{ n: number }>(`SELECT COALESCE(sum(n), 0)::bigint AS n FROM token_counts WHERE ${counted.where.join(' AND ')}`, counted.args);
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
      const { where, args } = ownerStatusGroup(accountId, filter);
      const add = (sql: string, v: unknown) => {
        args.push(v);
        where.push(sql.replace('?', `$${args.length}`));
      };
      if (filter.batchId !== undefined) add('batch_id = ?', filter.batchId);
      if (filter.keyword) add("name ILIKE '%' || ? || '%'", filter.keyword.replace(/[\\%_]/g, (c) => `\\${c}`));
      const order = filter.batchId === undefined ? 'id DESC' : 'batch_index ASC';
      const sql = where.join(' AND ');
      const cursor = filter.afterId !== undefined && filter.batchId === undefined;
      const pageWhere = cursor ? `${sql} AND id < $${args.length + 1}` : sql;
      const pageArgs = cursor ? [...args, filter.afterId] : args;
      const offset = cursor ? 0 : page.offset;
      if (filter.keyword && !cursor) {
        // A name search walks the trigram index once for the page and its total together (count over the window):
        // at a million keys that walk is most of the search's time. Past the last match the page is empty and the
        // total is counted on its own.
        const found = await db.query<TokenRow & { total: number }>(
          `WITH page AS (SELECT id, count(*) OVER () AS total FROM tokens WHERE ${pageWhere} ORDER BY ${order} LIMIT ${page.limit} OFFSET ${offset})
           SELECT ${TOKEN_COLUMNS}, page.total::int AS total FROM page JOIN tokens USING (id) ORDER BY ${order}`,
          pageArgs,
        );
        const total = found.rows.length > 0 ? found.rows[0].total : (await countKeys(db, accountId, filter, sql, args)).rows[0].n;
        return { items: found.rows.map((r) => toTokenRecord(r, cipher)), total };
      }
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
