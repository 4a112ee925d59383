import { z } from 'zod';
import { VIDEO_C_MAX_IMAGES, VIDEO_C_MODELS, VIDEO_PROMPT_MAX } from '../domain/video/validation';
import { optional, videoPrompt, videoUrl } from './video-common';

/** POST /vendorB/v1/api/video/submit (spec "Video, family C"). Rules, defaults and codes: `validateVideoC`. */
export const videoCSubmitBody = z.object({
  prompt: videoPrompt(VIDEO_PROMPT_MAX),
  model: optional(z.enum(VIDEO_C_MODELS, { error: `must be one of ${VIDEO_C_MODELS.join(', ')}` })),
  images: optional(z.array(videoUrl(['https:', 'http:'])).max(VIDEO_C_MAX_IMAGES)),
  enhance_prompt: optional(z.boolean()),
});
export type VideoCSubmitBody = z.infer<typeof videoCSubmitBody>;

/** Path parameter of GET /vendorB/v1/api/video/status/{taskId} (`<model>:<uuid>`). */
export const videoCTaskParam = z.object({ taskId: z.string().min(1).max(160) });
