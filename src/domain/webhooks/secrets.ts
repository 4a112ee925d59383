import type { KeyCipher } from '../keys/key-material';
import type { WebhookRepository } from '../ports/webhooks';
import { generateWebhookSecret } from './standard-webhooks';

/** The account's webhook signing secret (`whsec_...`), made on first use; stored only encrypted. */
export async function webhookSecretOf(webhooks: WebhookRepository, cipher: KeyCipher, accountId: number): Promise<string> {
  return cipher.decrypt(await webhooks.secretOrInsert(accountId, cipher.encrypt(generateWebhookSecret())));
}

/** Replaces the secret; deliveries signed from now on use the new one. */
export async function rotateWebhookSecret(webhooks: WebhookRepository, cipher: KeyCipher, accountId: number): Promise<string> {
  const fresh = generateWebhookSecret();
  await webhooks.replaceSecret(accountId, cipher.encrypt(fresh));
  return fresh;
}
