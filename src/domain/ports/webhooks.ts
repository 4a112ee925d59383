/** One delivery attempt as recorded (the console's task timeline). */
export interface WebhookAttemptRecord {
  attempt: number;
  status: number | null;
  error: string | null;
  delivered: boolean;
  created_at: number;
}

/** The webhooks' data: each account's signing secret (stored encrypted) and the attempts made. */
export interface WebhookRepository {
  /** The account's stored secret; `fresh` (already encrypted) is stored first when it has none. */
  secretOrInsert(accountId: number, fresh: Buffer): Promise<Buffer>;
  /** Replaces the account's secret. */
  replaceSecret(accountId: number, secret: Buffer): Promise<void>;
  recordAttempt(a: { webhookId: string; taskId: string; accountId: number; attempt: number; status: number | null; error: string | null; delivered: boolean }): Promise<void>;
  /** A task's attempts, oldest first (at most 1,000). */
  attemptsOf(accountId: number, taskId: string): Promise<WebhookAttemptRecord[]>;
}
