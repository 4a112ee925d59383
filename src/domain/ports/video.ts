import type { ChannelConfig } from '../../gateway-config/schema';
import type { UpstreamHttpResponse } from './upstream-http';

/**
 * The upstream side of a video task: one adapter per channel type (video-a, video-b, video-c, openai-video), each
 * speaking its provider's API rooted at the channel's base_url (src/upstream/video/). Adapters hold no state: the
 * task record keeps the upstream id.
 */

/** The families of video submits the gateway serves (`/v1/videos`, the vendorA and vendorB paths). */
export type VideoFamily = 'A' | 'B' | 'C';

export type VideoChannelType = 'video-a' | 'video-b' | 'video-c' | 'openai-video';

/** The channel types that serve each family. */
export const VIDEO_CHANNEL_TYPES: Record<VideoFamily, readonly VideoChannelType[]> = { A: ['video-a', 'openai-video'], B: ['video-b'], C: ['video-c'] };

const ALL_VIDEO_TYPES: ReadonlySet<string> = new Set(Object.values(VIDEO_CHANNEL_TYPES).flat());

/** Whether a channel of this type serves video (its calls run in workers, not through the relay). */
export function isVideoChannelType(type: string): boolean {
  return ALL_VIDEO_TYPES.has(type);
}

export interface VideoUpstreamStatus {
  state: 'queued' | 'processing' | 'completed' | 'failed';
  progress: number;
  /** The upstream's hint for the next poll, in seconds (Retry-After). */
  retryAfterSeconds?: number;
  /** On completed: where the upstream serves the file (never shown to clients). */
  assetUrl?: string;
  duration?: number;
  resolution?: string;
  /** On failed: the upstream's reason, sanitised. */
  error?: { code: string; message: string };
}

/** A first frame the client uploaded with the task (models with the `-fl` suffix). */
export interface VideoInputReference {
  bytes: Buffer;
  contentType: string;
  filename: string;
}

export interface VideoAdapter {
  /**
   * Submits the normalised request (and the first frame, where given); the upstream's task id. `idempotencyKey` goes
   * upstream as `Idempotency-Key`: an upstream that honours it answers a repeated submit with the task it started.
   */
  submit(channel: ChannelConfig, request: Record<string, unknown>, signal: AbortSignal, input?: VideoInputReference, idempotencyKey?: string): Promise<string>;
  poll(channel: ChannelConfig, upstreamId: string, signal: AbortSignal): Promise<VideoUpstreamStatus>;
  /** Best effort: a task that already finished, or an upstream without cancel, is not an error. */
  cancel(channel: ChannelConfig, upstreamId: string, signal: AbortSignal): Promise<void>;
  /** The finished file at `assetUrl` (what poll returned), `range` passed on: the adapter's own fetch, or a GET of the link. */
  fetchAsset(channel: ChannelConfig, assetUrl: string, signal: AbortSignal, range?: string): Promise<UpstreamHttpResponse>;
}

/** The video adapters by channel type, as the composition root wires them. */
export type VideoAdapterLookup = (channelType: string) => VideoAdapter | null;
