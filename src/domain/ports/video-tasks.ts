import type { VideoFamily } from '../video/validation';
import type { VideoOutcome, VideoStatus, VideoTask, VideoTaskFilters } from '../video/tasks';
import type { Tx } from './transactions';

/** Where a completed task's file is served from: our stored copy when there is one, else the upstream's link. */
export interface VideoResultSource {
  taskId: string;
  family: VideoFamily;
  channel: string;
  status: string;
  /** The upstream's file (never shown to clients). */
  assetUrl: string | null;
  stored: { key: string; bytes: number; contentType: string } | null;
  /** Retention removed the copy. */
  deleted: boolean;
}

/** Video tasks (src/db/repositories/video-tasks.ts). */
export interface VideoTaskRepository {
  /** The task of this account with this id, or null (another account's task reads as absent). */
  find(accountId: number, id: string): Promise<VideoTask | null>;
  get(id: string, tx?: Tx): Promise<VideoTask | null>;
  /** A task as the submit's statement answered it (a replayed submit: the whole row, as JSON). */
  fromSubmitted(row: Record<string, unknown>): VideoTask;
  /** Their workflows are running (or ran): the reconciler leaves them alone. */
  markWorkflowsStarted(ids: string[]): Promise<void>;
  /** Tasks of `taskQueue` submitted at least `olderThanMs` ago whose workflow was never started, oldest first. */
  unstarted(taskQueue: string, olderThanMs: number, limit: number): Promise<VideoTask[]>;
  /** Progress of a running task; a finished task is never changed back. */
  recordProgress(id: string, p: { status: 'queued' | 'processing'; progress: number; upstreamId?: string }): Promise<void>;
  /** The latest progress of many running tasks, in one write. */
  recordProgressOf(updates: Array<{ id: string; status: string; progress: number }>): Promise<void>;
  /** Records the terminal state once (a repeat of the same finish is a no-op). */
  finish(id: string, o: VideoOutcome, tx?: Tx): Promise<void>;
  /** What the upstream finished: its file's link, length and size, and where our copy is (or why there is none). */
  recordResult(
    id: string,
    r: { assetUrl: string; duration: number | null; resolution: string | null; stored?: { key: string; bytes: number; contentType: string }; fallback?: string },
  ): Promise<void>;
  /** The first frame a submit uploaded: where it is kept, and what it is. */
  recordInput(id: string, r: { key: string; contentType: string; filename: string }): Promise<void>;
  /** An account's tasks, newest first, filtered and paged. */
  list(accountId: number, f: VideoTaskFilters, page: { offset: number; limit: number }): Promise<{ items: VideoTask[]; total: number }>;
  resultSource(id: string): Promise<VideoResultSource | null>;
  /** Stored copies older than the retention, oldest first. */
  expiredResults(retentionSeconds: number, limit: number): Promise<Array<{ taskId: string; key: string }>>;
  markResultsDeleted(ids: string[]): Promise<void>;
  /** Copies kept now, completions that fell back to the upstream's link, copies expired. */
  resultCounts(): Promise<{ stored: number; fallback: number; deleted: number; storedBytes: number }>;
}

export type { VideoStatus };
