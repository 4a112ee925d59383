import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Pool } from 'pg';
import type { KeyCipher } from '../domain/keys/key-material';
import type { VideoLinkSigner } from '../domain/video/signed-links';
import { getVideoTask } from '../domain/video/tasks';
import { videoFinalView } from '../domain/video/views';
import { attemptWebhook } from '../domain/webhooks/delivery';

export interface WebhookDelivery {
  /** The same on every attempt: receivers deduplicate by it. */
  webhookId: string;
  taskId: string;
  accountId: number;
  url: string;
  /** The JSON body. */
  body: string;
}

/**
 * Webhook activities. The account's signing secret is read and used inside `sendWebhook` only: it never enters
 * an activity's input, result or the workflow history.
 */
export function createWebhookActivities(deps: { db: Pool; cipher: KeyCipher; videoLinks: VideoLinkSigner }) {
  return {
    /** The delivery of a finished task that asked for one (X-Callback-Url): its family's final task object. */
    async videoWebhook(taskId: string): Promise<WebhookDelivery | null> {
      const task = await getVideoTask(deps.db, taskId);
      if (!task || !task.callbackUrl || !task.finishedAt) return null;
      const origin = task.publicOrigin ?? '';
      const view = videoFinalView(task, (id) => `${origin}${deps.videoLinks.signLink({ taskId: id }).path}`, origin);
      return { webhookId: `msg_${task.id}`, taskId, accountId: task.accountId, url: task.callbackUrl, body: JSON.stringify(view) };
    },

    /** One signed POST; a receiver that does not answer 2xx makes the activity fail, and Temporal retries it. */
    async sendWebhook(d: WebhookDelivery): Promise<{ status: number; attempt: number }> {
      const attempt = Context.current().info.attempt;
      const r = await attemptWebhook(deps.db, deps.cipher, { ...d, attempt });
      if (!r.delivered) throw ApplicationFailure.retryable(`webhook attempt ${attempt} not delivered: ${r.error}`, 'WebhookNotDelivered');
      return { status: r.status, attempt };
    },
  };
}
