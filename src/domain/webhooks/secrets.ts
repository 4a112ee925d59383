import type { Pool } from 'pg';
import type { KeyCipher } from '../keys/key-material';
import { generateWebhookSecret } from './standard-webhooks';

/** The account's webhook signing secret (`whsec_...`), made on first use; stored only encrypted. */
export async function webhookSecretOf(db: Pool, cipher: KeyCipher, accountId: number): Promise<string> {
  const fresh = generateWebhookSecret();
  await db.query('INSERT INTO account_webhook_secrets (account_id, secret_cipher) VALUES ($1, $2) ON CONFLICT (account_id) DO NOTHING', [
    accountId,
    cipher.encrypt(fresh),
  ]);
  const res = await db.query<{ secret_cipher: Buffer }>('SELECT secret_cipher FROM account_webhook_secrets WHERE account_id = $1', [accountId]);
  return cipher.decrypt(res.rows[0].secret_cipher);
}

/** Replaces the secret; deliveries signed from now on use the new one. */
export async function rotateWebhookSecret(db: Pool, cipher: KeyCipher, accountId: number): Promise<string> {
  const fresh = generateWebhookSecret();
  await db.query(
    `INSERT INTO account_webhook_secrets (account_id, secret_cipher) VALUES ($1, $2)
     ON CONFLICT (account_id) DO UPDATE SET secret_cipher = EXCLUDED.secret_cipher, created_at = now()`,
    [accountId, cipher.encrypt(fresh)],
  );
  return fresh;
}
