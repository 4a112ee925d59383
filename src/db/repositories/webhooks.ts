import type { Pool } from 'pg';
import type { WebhookAttemptRecord, WebhookRepository } from '../../domain/ports/webhooks';

export function createWebhookRepository(db: Pool): WebhookRepository {
  return {
    async secretOrInsert(accountId, fresh) {
      await db.query('INSERT INTO account_webhook_secrets (account_id, secret_cipher) VALUES ($1, $2) ON CONFLICT (account_id) DO NOTHING', [accountId, fresh]);
      const res = await db.query<{ secret_cipher: Buffer }>('SELECT secret_cipher FROM account_webhook_secrets WHERE account_id = $1', [accountId]);
      return res.rows[0].secret_cipher;
    },
    async replaceSecret(accountId, secret) {
      await db.query(
        `INSERT INTO account_webhook_secrets (account_id, secret_cipher) VALUES ($1, $2)
         ON CONFLICT (account_id) DO UPDATE SET secret_cipher = EXCLUDED.secret_cipher, created_at = now()`,
        [accountId, secret],
      );
    },
    async recordAttempt(a) {
      await db.query(
        'INSERT INTO webhook_attempts (webhook_id, task_id, account_id, attempt, status, error, delivered) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [a.webhookId, a.taskId, a.accountId, a.attempt, a.status, a.error, a.delivered],
      );
    },
    async attemptsOf(accountId, taskId) {
      const res = await db.query<WebhookAttemptRecord>(
        `SELECT attempt, status, error, delivered, extract(epoch FROM created_at)::bigint AS created_at
           FROM webhook_attempts WHERE account_id = $1 AND task_id = $2 ORDER BY id LIMIT 1000`,
        [accountId, taskId],
      );
      return res.rows;
    },
  };
}
