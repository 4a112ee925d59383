import type { Pool } from 'pg';
import type { KeyCipher } from '../keys/key-material';
import type { OutboundPolicy } from '../outbound/address-policy';
import { postOutbound } from '../outbound/public-request';
import { webhookSecretOf } from './secrets';
import { signWebhook } from './standard-webhooks';

export interface WebhookAttempt {
  webhookId: string;
  taskId: string;
  accountId: number;
  url: string;
  /** The JSON body, the same bytes on every attempt. */
  body: string;
  attempt: number;
}

export type AttemptResult = { delivered: true; status: number } | { delivered: false; status: number | null; error: string };

const TIMEOUT_MS = 10_000;

/**
 * One delivery attempt, signed by the Standard Webhooks convention with the account's secret (read here, never
 * passed around), recorded in webhook_attempts. 2xx is delivered; anything else is for the caller to retry.
 */
export async function attemptWebhook(db: Pool, cipher: KeyCipher, policy: OutboundPolicy, a: WebhookAttempt): Promise<AttemptResult> {
  const secret = await webhookSecretOf(db, cipher, a.accountId);
  const headers = signWebhook(secret, a.webhookId, Math.floor(Date.now() / 1000), a.body);
  // The address is checked again at every attempt (DNS may answer differently than at submit); what a refused or
  // failed attempt records says nothing about what listens where.
  const res = await postOutbound(policy, a.url, {
    headers: { 'content-type': 'application/json', 'user-agent': 'ai-gateway-webhooks', ...headers },
    body: a.body,
    timeoutMs: TIMEOUT_MS,
  });
  let result: AttemptResult;
  if (!res.ok) result = { delivered: false, status: null, error: res.error === 'refused' ? `refused: ${res.reason}` : res.error };
  else if (res.status >= 200 && res.status < 300) result = { delivered: true, status: res.status };
  else result = { delivered: false, status: res.status, error: `receiver answered ${res.status}` };
  await db.query(
    'INSERT INTO webhook_attempts (webhook_id, task_id, account_id, attempt, status, error, delivered) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [a.webhookId, a.taskId, a.accountId, a.attempt, result.status, result.delivered ? null : result.error, result.delivered],
  );
  return result;
}

/** A task's webhook delivery attempts, oldest first (the console's task timeline). */
export async function webhookAttemptsOf(
  db: Pool,
  accountId: number,
  taskId: string,
): Promise<Array<{ attempt: number; status: number | null; error: string | null; delivered: boolean; created_at: number }>> {
  const res = await db.query<{ attempt: number; status: number | null; error: string | null; delivered: boolean; created_at: number }>(
    `SELECT attempt, status, error, delivered, extract(epoch FROM created_at)::bigint AS created_at
       FROM webhook_attempts WHERE account_id = $1 AND task_id = $2 ORDER BY id LIMIT 1000`,
    [accountId, taskId],
  );
  return res.rows;
}
