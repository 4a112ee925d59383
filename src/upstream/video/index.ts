import type { VideoFamily } from '../../domain/video/validation';
import type { VideoAdapter } from './adapter';
import { videoAAdapter } from './video-a';
import { videoBAdapter } from './video-b';
import { videoCAdapter } from './video-c';

export type { VideoAdapter, VideoUpstreamStatus } from './adapter';

/** The channel type that serves each family, and its adapter. */
export const VIDEO_CHANNEL_TYPES: Record<VideoFamily, 'video-a' | 'video-b' | 'video-c'> = { A: 'video-a', B: 'video-b', C: 'video-c' };
export const VIDEO_ADAPTERS: Record<VideoFamily, VideoAdapter> = { A: videoAAdapter, B: videoBAdapter, C: videoCAdapter };
