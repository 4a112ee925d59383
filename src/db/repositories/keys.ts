import type { Pool } from 'pg';
import { SEALED_CIPHER_BYTES, SEALED_HASH_BYTES, SEALED_KEY_BYTES } from '../../domain/keys/key-sealer';
import type { TokenRow } from '../../domain/keys/token-record';
import type { KeyRepository, NewKeyRecord, RotationSource, TokenAuthRow, TokenListFilter } from '../../domain/ports/keys';
import { on } from './queryable';

export const TOKEN_COLUMNS = `id, user_id, key_cipher, status, name, "group", models, remain_quota, unlimited_quota,
  used_quota, expired_time, created_time, accessed_time, batch_id, rpm_limit, tpm_limit, max_concurrency, period_quota, quota_period`;

const nowSeconds = () => Math.floor(Date.now() / 1000);

const AUTH_COLUMNS = `id, user_id, name, "group", models, status, unlimited_quota, expired_time, rpm_limit, tpm_limit, max_concurrency,
    period_quota, quota_period`;

const AUTH_BY_HASH = { name: 'key-auth-by-hash', text: `SELECT ${AUTH_COLUMNS} FROM tokens WHERE key_hash = $1` };

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

export function createKeyRepository(db: Pool): KeyRepository {
  /**
   * The list's total. Without a name search or a batch, from the counters the tokens triggers keep per (account,
   * status, group) (migration 021): a million keys are not counted on every page.
   */
  async function countKeys(accountId: number, filter: TokenListFilter, sql: string, args: unknown[]): Promise<number> {
    if (filter.keyword || filter.batchId !== undefined) return (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM tokens WHERE ${sql}`, args)).rows[0].n;
    const counted = ownerStatusGroup(accountId, filter);
    return (await db.query<{ n: number }>(`SELECT COALESCE(sum(n), 0)::bigint AS n FROM token_counts WHERE ${counted.where.join(' AND ')}`, counted.args)).rows[0].n;
  }

  return {
    async authByHash(hash) {
      const res = await db.query<TokenAuthRow>({ ...AUTH_BY_HASH, values: [hash] });
      return res.rows[0] ?? null;
    },

    async authById(id) {
      const res = await db.query<TokenAuthRow>(`SELECT ${AUTH_COLUMNS} FROM tokens WHERE id = $1`, [id]);
      return res.rows[0] ?? null;
    },

    async insert(rows, tx) {
      if (rows.length === 0) return [];
      // One array per column: the statement binds 17 parameters whatever the number of rows.
      const columns: Array<[string, string, (r: NewKeyRecord) => unknown]> = [
        ['user_id', 'bigint', (r) => r.userId],
        ['key_hash', 'bytea', (r) => r.keyHash],
        ['key_cipher', 'bytea', (r) => r.keyCipher],
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
      const arrays = columns.map(([, , value]) => rows.map(value));
      const res = await on(db, tx).query<{ id: number }>(
        `INSERT INTO tokens (${columns.map(([name]) => name).join(', ')}, created_time)
         SELECT *, $${columns.length + 1}::bigint FROM unnest(${columns.map(([, type], c) => `$${c + 1}::${type}[]`).join(', ')})
         ON CONFLICT (batch_id, batch_index) DO NOTHING RETURNING id`,
        [...arrays, nowSeconds()],
      );
      return res.rows.map((r) => r.id);
    },

    async insertRange(blob, r, tx) {
      const n = r.to - r.from + 1;
      if (n <= 0) return 0;
      const width = SEALED_KEY_BYTES;
      if (blob.length !== n * width) throw new Error(`key material for ${n} keys is ${blob.length} bytes, expected ${n * width}`);
      const s = r.settings;
      // The material travels as one blob of fixed-width records, cut up in SQL: a million keys are not a million
      // array elements to escape.
      const res = await on(db, tx).query(
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
    },

    async owned(accountId, id, tx) {
      const res = await on(db, tx).query<TokenRow>(`SELECT ${TOKEN_COLUMNS} FROM tokens WHERE id = $1 AND user_id = $2`, [id, accountId]);
      return res.rows[0] ?? null;
    },

    async list(accountId, page, filter) {
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
        const total = found.rows.length > 0 ? found.rows[0].total : await countKeys(accountId, filter, sql, args);
        return { rows: found.rows, total };
      }
      // The page's ids first (an index-only walk past the offset), then only those rows: a deep page does not
      // read the rows it skips.
      const [rows, total] = await Promise.all([
        db.query<TokenRow>(
          `SELECT ${TOKEN_COLUMNS} FROM tokens WHERE id IN (
             SELECT id FROM tokens WHERE ${pageWhere} ORDER BY ${order} LIMIT ${page.limit} OFFSET ${offset}
           ) ORDER BY ${order}`,
          pageArgs,
        ),
        countKeys(accountId, filter, sql, args),
      ]);
      return { rows: rows.rows, total };
    },

    async update(accountId, id, s, tx) {
      await on(db, tx).query(
        `UPDATE tokens SET name = $3, remain_quota = $4, unlimited_quota = $5, "group" = $6, models = $7,
           expired_time = $8, rpm_limit = $9, tpm_limit = $10, max_concurrency = $11, period_quota = $12, quota_period = $13
         WHERE id = $1 AND user_id = $2`,
        [id, accountId, s.name, s.remain_quota, s.unlimited_quota, s.group, s.models, s.expired_time, s.rpm_limit, s.tpm_limit, s.max_concurrency, s.period_quota, s.quota_period],
      );
    },

    async setStatus(accountId, id, status, tx) {
      await on(db, tx).query('UPDATE tokens SET status = $3 WHERE id = $1 AND user_id = $2', [id, accountId, status]);
    },

    async delete(accountId, id, tx) {
      const q = on(db, tx);
      // Holds before the key, the order settle, release and the sweeper lock in; deleting the key updates
      // its holds (ON DELETE SET NULL), and the opposite order deadlocks with a concurrent settle.
      await q.query('SELECT id FROM quota_holds WHERE token_id = $1 ORDER BY id FOR UPDATE', [id]);
      await q.query('DELETE FROM tokens WHERE id = $1 AND user_id = $2', [id, accountId]);
    },

    async setStatusOf(ids, status, tx) {
      if (ids.length > 0) await on(db, tx).query('SELECT tokens_set_status($1::bigint[], $2)', [ids, status]);
    },

    async setBatchRangeStatus(r, tx) {
      const res = await on(db, tx).query<{ id: number }>(
        `SELECT o_id AS id FROM tokens_set_status(
           ARRAY(SELECT id FROM tokens WHERE batch_id = $1 AND user_id = $2 AND batch_index BETWEEN $3 AND $4 AND status <> $5), $5)`,
        [r.batchId, r.accountId, r.from, r.to, r.status],
      );
      return res.rows.map((row) => row.id);
    },

    async balance(tokenId) {
      const res = await db.query<{ remain_quota: number; used_quota: number; unlimited_quota: boolean; expired_time: number; held: number }>(
        `SELECT COALESCE(b.remain_quota, t.remain_quota) AS remain_quota, t.used_quota,
           COALESCE(b.unlimited_quota, t.unlimited_quota) AS unlimited_quota, t.expired_time,
           (SELECT COALESCE(sum(amount), 0)::bigint FROM quota_holds WHERE token_id = t.id) AS held
         FROM tokens t LEFT JOIN tokens b ON b.id = t.quota_owner_id WHERE t.id = $1`,
        [tokenId],
      );
      return res.rows[0] ?? null;
    },

    async periodUsage(tokenId) {
      const res = await db.query<{ period_used: number; period_start: number }>('SELECT period_used, period_start FROM tokens WHERE id = $1', [tokenId]);
      return res.rows[0] ?? null;
    },

    async batchKeys(batchId, accountId, afterIndex, limit) {
      const res = await db.query<TokenRow & { batch_index: number }>(
        `SELECT ${TOKEN_COLUMNS}, batch_index FROM tokens WHERE batch_id = $1 AND user_id = $2 AND batch_index > $3
          ORDER BY batch_index LIMIT $4`,
        [batchId, accountId, afterIndex, limit],
      );
      return res.rows;
    },

    async batchKeyCount(batchId, accountId, tx) {
      const res = await on(db, tx).query<{ n: number; end: number }>(
        'SELECT count(*)::int AS n, coalesce(max(batch_index), 0)::int AS "end" FROM tokens WHERE batch_id = $1 AND user_id = $2',
        [batchId, accountId],
      );
      return res.rows[0];
    },

    async lockRotationSources(r, tx) {
      const q = on(db, tx);
      const args = [r.sourceBatchId, r.accountId, r.from, r.to];
      const locked = await q.query<{ id: number }>(
        `WITH src AS (
           SELECT id, COALESCE(quota_owner_id, id) AS budget FROM tokens
            WHERE batch_id = $1 AND user_id = $2 AND batch_index BETWEEN $3 AND $4)
         SELECT id FROM tokens WHERE id IN (SELECT budget FROM src UNION SELECT id FROM src)
         ORDER BY quota_owner_id IS NOT NULL, id
         FOR NO KEY UPDATE`,
        args,
      );
      const res = await q.query<RotationSource>(
        `SELECT s.id, s.user_id, s.name, s."group", s.models, s.remain_quota, s.unlimited_quota, s.expired_time, s.status,
                s.batch_index, b.id AS budget_id, b.remain_quota AS budget_remain, b.unlimited_quota AS budget_unlimited,
                b.quota_owner_id AS budget_owner
           FROM tokens s JOIN tokens b ON b.id = COALESCE(s.quota_owner_id, s.id)
          WHERE s.batch_id = $1 AND s.user_id = $2 AND s.batch_index BETWEEN $3 AND $4
          ORDER BY s.batch_index`,
        args,
      );
      return { locked: new Set(locked.rows.map((row) => row.id)), sources: res.rows };
    },

    async idsByIndex(batchId, ids, tx) {
      const res = await on(db, tx).query<{ id: number; batch_index: number }>('SELECT id, batch_index FROM tokens WHERE batch_id = $1 AND id = ANY($2::bigint[])', [
        batchId,
        ids,
      ]);
      return new Map(res.rows.map((row) => [row.batch_index, row.id]));
    },

    async moveBudgets(moves, tx) {
      if (moves.length === 0) return;
      await on(db, tx).query(
        `UPDATE tokens t SET quota_owner_id = m.replacement,
                remain_quota = CASE WHEN t.id = m.budget THEN 0 ELSE t.remain_quota END
           FROM unnest($1::bigint[], $2::bigint[]) AS m(budget, replacement)
          WHERE t.id = m.budget OR t.quota_owner_id = m.budget`,
        [moves.map((m) => m.budget), moves.map((m) => m.replacement)],
      );
    },
  };
}
