// What a bulk-key workflow is told to do. Pure types and constants: workflow code imports this file
// (type-only), so it must never import Node built-ins or runtime modules. Ids and counts only:
// no key material ever travels in a plan, an activity input or an activity result.

export type BatchKind = 'issue' | 'status' | 'rotate';
export type BatchStatus = 'running' | 'completed' | 'failed' | 'cancelled';
/** issuing -> done (issue); updating -> done (status); issuing -> grace -> disabling -> done (rotate). */
export type BatchPhase = 'issuing' | 'grace' | 'updating' | 'disabling' | 'done';

/** How a workflow cuts its work; fixed per batch when it starts. */
export interface ChunkTuning {
  /** Keys per activity call (one transaction each). */
  chunkSize: number;
  /**
   * Chunks an issue batch runs at once (their key ranges are disjoint, each its own transaction). Absent in
   * plans of batches started before it existed: one at a time.
   */
  parallelChunks?: number;
  /** Chunks per workflow run before it continues as new (also earlier when Temporal suggests it). */
  continueAsNewAfterChunks: number;
  /** A chunk activity that stops heartbeating for this long is retried (on another worker if need be). */
  heartbeatTimeoutMs: number;
}

/** Cursor over batch_index values `next..end` (1-based, inclusive). */
interface Cursor {
  batchId: number;
  end: number;
  next: number;
}

export interface IssuePlan extends ChunkTuning, Cursor {}

export interface StatusPlan extends ChunkTuning, Cursor {
  sourceBatchId: number;
  status: 1 | 2;
}

export interface RotatePlan extends ChunkTuning, Cursor {
  sourceBatchId: number;
  graceSeconds: number;
  /** The cursor walks the source batch twice: issuing replacements, then disabling the old keys. */
  phase: 'issuing' | 'grace' | 'disabling';
}

export type BatchPlan =
  | ({ kind: 'issue' } & IssuePlan)
  | ({ kind: 'status' } & StatusPlan)
  | ({ kind: 'rotate' } & RotatePlan);

export interface BatchOutcome {
  batchId: number;
  status: BatchStatus;
  created: number;
  changed: number;
}

export const batchWorkflowId = (batchId: number): string => `keys:${batchId}`;

/** Inputs and outputs of the chunk activities. */
export interface ChunkRange {
  batchId: number;
  from: number;
  to: number;
}

export interface SourceChunkRange extends ChunkRange {
  sourceBatchId: number;
}

export interface StatusChunkRange extends SourceChunkRange {
  status: 1 | 2;
  phase: 'updating' | 'disabling';
}
