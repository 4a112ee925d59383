import { CancellationScope, continueAsNew, ContinueAsNew, isCancellation, ParentClosePolicy, patched, proxyActivities, type RetryPolicy, startChild, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { failureMessage } from './failure-message';

// Workflow batch:<id>: one batch of batch inference (OpenAI Batch API or Anthropic Message Batches). Its lines'
// state lives in PostgreSQL, never here: the history holds a few events per run of lines, and a run that grows past
// HISTORY_LIMIT continues as new. Inputs are ids and timings only.

export interface InferenceBatchInput {
  batchId: string;
  /** The lines are in the database already (an Anthropic batch, or a run continued as new). */
  prepared: boolean;
  /** How long a run of lines may go without a heartbeat before it starts on another worker (default 30 s; tests shorten it). */
  heartbeatTimeoutMs?: number;
  /** Webhook retry timing; tests shorten it. */
  webhookRetry?: { initialIntervalMs: number; maximumIntervalMs: number; giveUpAfterMs?: number };
}

type BatchActivities = Pick<
  Activities,
  'prepareInferenceBatch' | 'runInferenceBatchLines' | 'finalizeInferenceBatch' | 'failInferenceBatch' | 'batchWebhook' | 'planProviderLines' | 'submitProviderBatch' | 'collectProviderBatch'
>;

/** From this patch on, lines of models on `batch_api` channels go to the providers' own batch APIs. */
const PROVIDER_BATCHES = 'provider-batches';

/** Events after which a run continues as new (a run of lines costs about six). */
const HISTORY_LIMIT = 300;

/**
 * Faults that pass are retried; one that repeats (or that no retry can fix: the worker marks those non-retryable)
 * fails the batch with its reason after at most this many attempts, never leaving it `validating` or `in_progress`.
 */
const RETRY: RetryPolicy = { initialInterval: '1 second', maximumInterval: '30 seconds', backoffCoefficient: 2, maximumAttempts: 10 };

const bookkeeping = proxyActivities<BatchActivities>({ startToCloseTimeout: '10 minutes', retry: RETRY });

/** A run of lines heartbeats; a worker lost mid-run is noticed within the heartbeat timeout and the run starts elsewhere. */
const linesOf = (heartbeatTimeoutMs = 30_000) =>
  proxyActivities<BatchActivities>({ startToCloseTimeout: '15 minutes', heartbeatTimeout: heartbeatTimeoutMs, retry: RETRY });

export async function inferenceBatchWorkflow(input: InferenceBatchInput): Promise<string> {
  try {
    return await runBatch(input);
  } catch (err) {
    if (err instanceof ContinueAsNew || isCancellation(err)) throw err;
    // The batch ends in a state its owner can read, with the reason; the workflow itself completes.
    await CancellationScope.nonCancellable(() => bookkeeping.failInferenceBatch(input.batchId, failureMessage(err)));
    return notify(input, 'failed');
  }
}

async function runBatch(input: InferenceBatchInput): Promise<string> {
  const { batchId } = input;
  if (!input.prepared) {
    const prepared = await bookkeeping.prepareInferenceBatch(batchId);
    if (prepared !== 'ready') return notify(input, prepared === 'failed' ? 'failed' : 'ended');
  }
  const lines = linesOf(input.heartbeatTimeoutMs);
  const channels = patched(PROVIDER_BATCHES) ? await bookkeeping.planProviderLines(batchId) : [];
  const providers = Promise.all(channels.map((channel) => providerBatch(batchId, channel, input.heartbeatTimeoutMs)));
  for (;;) {
    const run = await lines.runInferenceBatchLines(batchId);
    if (!run.more) break;
    // A run waiting on a provider batch keeps its history: a few events, however long the wait.
    if (channels.length === 0 && workflowInfo().historyLength > HISTORY_LIMIT) await continueAsNew<typeof inferenceBatchWorkflow>({ ...input, prepared: true });
  }
  await providers;
  const end = await bookkeeping.finalizeInferenceBatch(batchId);
  return notify(input, end?.status ?? 'ended');
}

/** One channel's lines as a provider batch: sent (created at most once), waited for, read back and billed. */
async function providerBatch(batchId: string, channel: string, heartbeatTimeoutMs = 30_000): Promise<void> {
  const sent = await bookkeeping.submitProviderBatch(batchId, channel);
  if (sent === null) return;
  // The provider has 24 hours; the results are read back and billed after.
  const { collectProviderBatch } = proxyActivities<BatchActivities>({ startToCloseTimeout: '26 hours', heartbeatTimeout: heartbeatTimeoutMs, retry: RETRY });
  await collectProviderBatch(batchId, channel);
}

/** A batch that asked for one (X-Callback-Url) gets its webhook from a child of its own, left running. */
async function notify(input: InferenceBatchInput, status: string): Promise<string> {
  const hook = await bookkeeping.batchWebhook(input.batchId);
  if (hook) {
    await startChild('deliverWebhook', {
      workflowId: `webhook:${input.batchId}`,
      args: [{ ...hook, retry: input.webhookRetry }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
    });
  }
  return status;
}
