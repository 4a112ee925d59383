import type { VideoFamily } from './validation';

/** The row of a video task (table video_tasks), as the domain reads it. */
export interface VideoTask {
  id: string;
  family: VideoFamily;
  accountId: number;
  tokenId: number | null;
  tokenName: string;
  model: string;
  prompt: string;
  request: Record<string, unknown>;
  channel: string;
  status: VideoStatus;
  progress: number;
  upstreamId: string | null;
  quota: number;
  billed: number | null;
  errorCode: string | null;
  errorMessage: string | null;
  duration: number | null;
  resolution: string | null;
  callbackUrl: string | null;
  /** The origin the client submitted to: its links, in a webhook, point there. */
  publicOrigin: string | null;
  requestId: string;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  /** When its workflow was started (null: not yet; the outbox starter or the reconciler will). */
  workflowStartedAt: Date | null;
  /** A first frame the client uploaded (`-fl` models): its object key, type and file name. */
  input: { key: string; contentType: string; filename: string } | null;
  /** Where its finished file is: stored (since when), fallen back to the upstream's link (why), or deleted by retention. */
  result: { storedAt: Date | null; fallback: string | null; deletedAt: Date | null };
}

/** The gateway's own states; each family's view names them in its own words. */
export type VideoStatus = 'queued' | 'processing' | 'completed' | 'failed';

/** The columns of a new task, as video_task_insert (migration 010) takes them. */
export interface NewVideoTask {
  id: string;
  family: VideoFamily;
  account: number;
  token: number;
  token_name: string;
  model: string;
  prompt: string;
  request: Record<string, unknown>;
  channel: string;
  amount: number;
  callback_url: string | null;
  idempotency_key: string | null;
  request_id: string;
  public_origin: string | null;
  task_queue: string;
}

/** A task just inserted from `t` (video_task_insert answers a created task with its created_at only). */
export function insertedVideoTask(t: NewVideoTask, createdAt: Date): VideoTask {
  return {
    id: t.id,
    family: t.family,
    accountId: t.account,
    tokenId: t.token,
    tokenName: t.token_name,
    model: t.model,
    prompt: t.prompt,
    request: t.request,
    channel: t.channel,
    status: 'queued',
    progress: 0,
    upstreamId: null,
    quota: t.amount,
    billed: null,
    errorCode: null,
    errorMessage: null,
    duration: null,
    resolution: null,
    callbackUrl: t.callback_url,
    publicOrigin: t.public_origin,
    requestId: t.request_id,
    createdAt,
    updatedAt: createdAt,
    finishedAt: null,
    workflowStartedAt: null,
    input: null,
    result: { storedAt: null, fallback: null, deletedAt: null },
  };
}

export type VideoOutcome =
  | { status: 'completed'; duration: number | null; resolution: string | null; billed: number }
  | { status: 'failed'; errorCode: string; errorMessage: string };

export interface VideoTaskFilters {
  status?: VideoStatus;
  model?: string;
  family?: VideoFamily;
  /** Unix seconds, inclusive, on the created time. */
  startTimestamp?: number;
  endTimestamp?: number;
}
