import type { KeyCipher } from '../keys/key-material';
import type { OutboundPolicy } from '../outbound/address-policy';
import type { PostOutbound } from '../ports/outbound';
import type { WebhookRepository } from '../ports/webhooks';
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

/** What a delivery attempt needs: the account's secrets and attempts, the key cipher, where it may go, and the POST. */
export interface WebhookDeliveryDeps {
  webhooks: WebhookRepository;
  cipher: KeyCipher;
  outbound: OutboundPolicy;
  post: PostOutbound;
}

/**
 * One delivery attempt, signed by the Standard Webhooks convention with the account's secret (read here, never
 * passed around), recorded with the account's attempts. 2xx is delivered; anything else is for the caller to retry.
 */
export async function attemptWebhook(deps: WebhookDeliveryDeps, a: WebhookAttempt): Promise<AttemptResult> {
  const secret = await webhookSecretOf(deps.webhooks, deps.cipher, a.accountId);
  const headers = signWebhook(secret, a.webhookId, Math.floor(Date.now() / 1000), a.body);
  // The address is checked again at every attempt (DNS may answer differently than at submit); what a refused or
  // failed attempt records says nothing about what listens where.
  const res = await deps.post(deps.outbound, a.url, {
    headers: { 'content-type': 'application/json', 'user-agent': 'ai-gateway-webhooks', ...headers },
    body: a.body,
    timeoutMs: TIMEOUT_MS,
  });
  let result: AttemptResult;
  if (!res.ok) result = { delivered: false, status: null, error: res.error === 'refused' ? `refused: ${res.reason}` : res.error };
  else if (res.status >= 200 && res.status < 300) result = { delivered: true, status: res.status };
  else result = { delivered: false, status: res.status, error: `receiver answered ${res.status}` };
  await deps.webhooks.recordAttempt({
    webhookId: a.webhookId,
    taskId: a.taskId,
    accountId: a.accountId,
    attempt: a.attempt,
    status: result.status,
    error: result.delivered ? null : result.error,
    delivered: result.delivered,
  });
  return result;
}
