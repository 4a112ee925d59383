import type { VideoChannelType } from '../../domain/ports/video';
import { type VideoAdapter, withAssetFetch } from './adapter';
import { openaiVideoAdapter } from './openai-video';
import { videoAAdapter } from './video-a';
import { videoBAdapter } from './video-b';
import { videoCAdapter } from './video-c';

export type { VideoAdapter, VideoInputReference, VideoUpstreamStatus } from './adapter';

const ADAPTERS: Record<VideoChannelType, VideoAdapter> = {
  'video-a': withAssetFetch(videoAAdapter),
  'video-b': withAssetFetch(videoBAdapter),
  'video-c': withAssetFetch(videoCAdapter),
  'openai-video': withAssetFetch(openaiVideoAdapter),
};

/** The adapter of a video channel's type; null for a channel type that serves no video. */
export function videoAdapterOf(channelType: string): VideoAdapter | null {
  return (ADAPTERS as Record<string, VideoAdapter>)[channelType] ?? null;
}
