import type { VideoFamily } from '../../domain/video/validation';
import type { VideoAdapter } from './adapter';
import { openaiVideoAdapter } from './openai-video';
import { videoAAdapter } from './video-a';
import { videoBAdapter } from './video-b';
import { videoCAdapter } from './video-c';

export type { VideoAdapter, VideoInputReference, VideoUpstreamStatus } from './adapter';
export { fetchVideoAsset } from './adapter';

export type VideoChannelType = 'video-a' | 'video-b' | 'video-c' | 'openai-video';

/** The channel types that serve each family. */
export const VIDEO_CHANNEL_TYPES: Record<VideoFamily, readonly VideoChannelType[]> = { A: ['video-a', 'openai-video'], B: ['video-b'], C: ['video-c'] };
const ADAPTERS: Record<VideoChannelType, VideoAdapter> = { 'video-a': videoAAdapter, 'video-b': videoBAdapter, 'video-c': videoCAdapter, 'openai-video': openaiVideoAdapter };

/** The adapter of a video channel's type; null for a channel type that serves no video. */
export function videoAdapterOf(channelType: string): VideoAdapter | null {
  return (ADAPTERS as Record<string, VideoAdapter>)[channelType] ?? null;
}
