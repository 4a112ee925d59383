import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Repositories } from '../domain/ports/repositories';
import type { PostOutbound } from '../domain/ports/outbound';
import type { KeyCipher } from '../domain/keys/key-material';
import type { OutboundPolicy } from '../domain/outbound/address-policy';
import { VIDEO_LINK_TTL_SECONDS, VideoLinkSigner } from '../domain/video/signed-links';
import { videoFinalView } from '../domain/video/views';
import { attemptWebhook } from '../domain/webhooks/delivery';

export interface WebhookDelivery {
  /** The same on every attempt: receivers deduplicate by it. */
  webhookId: string;
  taskId: string;
  accountId: number;
  url: string;
  /** What `taskId` names: a video task (the default) or an inference batch (`batch.<status>` events). */
  kind?: 'video' | 'batch';
  /**
   * The JSON body, only in deliveries started by earlier versions. It carries a live signed result link, so it is
   * now built inside `sendWebhook` and never enters a workflow history.
   */
  body?: string;
}

/**
 * Webhook activities. The account's signing secret and the task's signed result link are made inside
 * `sendWebhook` only: neither enters an activity's input, result or a workflow history.
 */
export interface WebhookActivityDeps {
  repos: Pick<Repositories, 'webhooks' | 'videoTasks' | 'batches'>;
  /** The POST of webhooks, to public addresses only (src/upstream/public-request.ts). */
  postOutbound: PostOutbound;
  /** Where webhooks may be delivered. */
  outbound: OutboundPolicy;
  /** Decrypts the accounts' signing secrets. */
  cipher: KeyCipher;
  /** Signs the result links a webhook carries. */
  videoLinks: VideoLinkSigner;
}

export function createWebhookActivities(deps: WebhookActivityDeps) {
  /** The finished task's family view; its link expires a day after the task finished, so every attempt sends the same bytes. */
  async function bodyOf(taskId: string): Promise<string | null> {
    const task = await deps.repos.videoTasks.get(taskId);
    if (!task || !task.finishedAt) return null;
    const origin = task.publicOrigin ?? '';
    const expiresAt = Math.floor(task.finishedAt.getTime() / 1000) + VIDEO_LINK_TTL_SECONDS;
    return JSON.stringify(videoFinalView(task, (id) => `${origin}${deps.videoLinks.signLink({ taskId: id, expiresAt }).path}`, origin));
  }

  /** A batch's end as an event (`batch.completed`, `batch.failed`, `batch.expired`, `batch.cancelled`), as OpenAI sends them. */
  async function batchBodyOf(batchId: string): Promise<string | null> {
    const b = await deps.repos.batches.get(batchId);
    if (!b || b.endedAt === null) return null;
    return JSON.stringify({ id: `evt_${batchId}`, object: 'event', type: `batch.${b.status}`, created_at: b.endedAt, data: { id: batchId } });
  }

  return {
    /** The delivery of an ended batch that asked for one (X-Callback-Url). */
    async batchWebhook(batchId: string): Promise<WebhookDelivery | null> {
      const b = await deps.repos.batches.get(batchId);
      if (!b || !b.callbackUrl || b.endedAt === null) return null;
      return { webhookId: `msg_${batchId}`, taskId: batchId, accountId: b.accountId, url: b.callbackUrl, kind: 'batch' };
    },

    /** The delivery of a finished task that asked for one (X-Callback-Url): who gets it, not what it says. */
    async videoWebhook(taskId: string): Promise<WebhookDelivery | null> {
      const task = await deps.repos.videoTasks.get(taskId);
      if (!task || !task.callbackUrl || !task.finishedAt) return null;
      return { webhookId: `msg_${task.id}`, taskId, accountId: task.accountId, url: task.callbackUrl };
    },

    /**
     * One signed POST; a receiver that does not answer 2xx makes the activity fail, and Temporal retries it. A
     * destination the outbound policy refuses is not retried.
     */
    async sendWebhook(d: WebhookDelivery): Promise<{ status: number; attempt: number }> {
      const attempt = Context.current().info.attempt;
      const body = d.body ?? (d.kind === 'batch' ? await batchBodyOf(d.taskId) : await bodyOf(d.taskId));
      if (body === null) throw ApplicationFailure.nonRetryable(`task ${d.taskId} is not finished`, 'WebhookTaskMissing');
      const r = await attemptWebhook({ webhooks: deps.repos.webhooks, cipher: deps.cipher, outbound: deps.outbound, post: deps.postOutbound }, { ...d, body, attempt });
      if (r.delivered) return { status: r.status, attempt };
      const message = `webhook attempt ${attempt} not delivered: ${r.error}`;
      if (r.error.startsWith('refused')) throw ApplicationFailure.nonRetryable(message, 'WebhookRefused');
      throw ApplicationFailure.retryable(message, 'WebhookNotDelivered');
    },
  };
}
