import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { WebhookDelivery } from '../activities/webhooks';

// Workflow webhook:<task id>: delivers one signed webhook, retried with backoff for up to 24 hours as durable
// activity retries. The input carries the body and the receiver, never the signing secret.

export interface WebhookDeliveryInput extends WebhookDelivery {
  /** Retry timing; tests shorten it. Default: 5 s doubling to at most 1 hour, for 24 hours. */
  retry?: { initialIntervalMs: number; maximumIntervalMs: number; giveUpAfterMs?: number };
}

export async function deliverWebhook(input: WebhookDeliveryInput): Promise<{ delivered: boolean; attempts: number }> {
  const { retry, ...delivery } = input;
  const { sendWebhook } = proxyActivities<Pick<Activities, 'sendWebhook'>>({
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: retry?.giveUpAfterMs ?? 24 * 3600 * 1000,
    retry: {
      initialInterval: retry?.initialIntervalMs ?? 5000,
      maximumInterval: retry?.maximumIntervalMs ?? 3600 * 1000,
      backoffCoefficient: 2,
    },
  });
  try {
    const { attempt } = await sendWebhook(delivery);
    return { delivered: true, attempts: attempt };
  } catch (err) {
    if (err instanceof ActivityFailure) return { delivered: false, attempts: -1 };
    throw err;
  }
}
