import { z } from 'zod';
import {
  VIDEO_B_DURATION_MAX,
  VIDEO_B_DURATION_MIN,
  VIDEO_B_MEDIA_TYPES,
  VIDEO_B_MODELS,
  VIDEO_B_PROMPT_MAX,
  VIDEO_B_RATIOS,
  VIDEO_B_RESOLUTIONS,
  VIDEO_B_VENDOR_A_MAX_FIRST_FRAMES,
  VIDEO_B_VENDOR_A_MAX_REFERENCES,
  VIDEO_B_VENDOR_C_MAX_IMAGES,
} from '../domain/video/validation';
import { optional, videoPrompt, videoUrl } from './video-common';

/**
 * POST /vendorA/api/v1/services/aigc/video-generation/video-synthesis (spec "Video, family B"). Per-field shape
 * only; the per-model rules (media counts, vendorC images only, duration 2-10 with a reference video, defaults by
 * vendor, ratio dropped with a first frame) are `validateVideoB` in src/domain/video/validation.ts.
 */
export const videoBMediaItem = z.object({
  type: z.enum(VIDEO_B_MEDIA_TYPES, { error: `must be one of ${VIDEO_B_MEDIA_TYPES.join(', ')}` }),
  url: videoUrl(['https:']),
  reference_voice: optional(videoUrl(['https:']).refine((s) => /\.(wav|mp3)$/i.test(new URL(s).pathname), 'must be a .wav or .mp3 file')),
});

const MAX_MEDIA = Math.max(VIDEO_B_VENDOR_A_MAX_REFERENCES + VIDEO_B_VENDOR_A_MAX_FIRST_FRAMES, VIDEO_B_VENDOR_C_MAX_IMAGES);

export const videoBCreateBody = z.object({
  model: z.enum(VIDEO_B_MODELS, { error: `must be one of ${VIDEO_B_MODELS.join(', ')}` }),
  input: z.object({
    prompt: videoPrompt(VIDEO_B_PROMPT_MAX),
    media: optional(z.array(videoBMediaItem).max(MAX_MEDIA)),
  }),
  parameters: optional(
    z.object({
      resolution: optional(z.enum(VIDEO_B_RESOLUTIONS)),
      ratio: optional(z.enum(VIDEO_B_RATIOS)),
      duration: optional(z.number().int().min(VIDEO_B_DURATION_MIN).max(VIDEO_B_DURATION_MAX)),
      prompt_extend: optional(z.boolean()),
      watermark: optional(z.boolean()),
    }),
  ),
});
export type VideoBCreateBody = z.infer<typeof videoBCreateBody>;

/** The required async header of the submission. */
export const videoBHeaders = z.object({ 'x-vendor-async': z.literal('enable', { error: "must be 'enable'" }) });

/** Path parameter of GET /v1/tasks/{task_id}. */
export const videoBTaskParam = z.object({ task_id: z.string().min(1).max(128) });
