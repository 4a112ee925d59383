import v8 from 'node:v8';

/**
 * How far V8 lets the old generation grow past what survived its last full collection before collecting again:
 * 1.5x for the api, where V8 would go up to 4x under a high allocation rate. Under 50 connections of relay traffic
 * that is the difference between about 120 MiB and 200 MiB resident, at the same throughput (bench/RESULTS.md,
 * relay; docs/decisions/0032-compiled-gateway-and-heap-growth.md). Unlike a --max-old-space-size cap, it never makes a process that needs more memory
 * (large multimodal bodies) run out of heap. Set at start-up of the gateway's long-running processes.
 */
export const API_HEAP_GROWING_PERCENT = 50;

/**
 * 1.2x for a worker-only process: with thousands of video tasks waiting, its garbage (polls, heartbeats) would
 * otherwise keep tens of MiB of heap it does not need, and it is background work where the extra collections
 * cost little (bench/RESULTS.md, video).
 */
export const WORKER_HEAP_GROWING_PERCENT = 20;

export function tuneHeapGrowth(percent = API_HEAP_GROWING_PERCENT): void {
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
