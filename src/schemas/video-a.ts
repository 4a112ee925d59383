import { z } from 'zod';
import { binaryFile } from './binary-file';
import { VIDEO_A_MODELS, VIDEO_PROMPT_MAX } from '../domain/video/validation';
import { videoPrompt } from './video-common';

/** POST /v1/videos (spec "Video, family A"). Rules and error codes: src/domain/video/validation.ts `validateVideoA`. */
export const videoACreateBody = z.object({
  model: z.enum(VIDEO_A_MODELS, { error: `must be one of ${VIDEO_A_MODELS.join(', ')}` }),
  prompt: videoPrompt(VIDEO_PROMPT_MAX),
  seconds: z.union([z.int().min(1).max(60), z.string().regex(/^\d{1,2}$/)]).optional().describe('length in seconds, 1 to 60 (the OpenAI clients send a string)'),
  size: z.string().regex(/^\d{2,5}x\d{2,5}$/).optional().describe('<width>x<height>, passed upstream'),
  input_reference: binaryFile('multipart/form-data only: a first frame (JPEG, PNG or WebP, at most 10 MiB) for the -fl models').optional(),
});
export type VideoACreateBody = z.infer<typeof videoACreateBody>;

/** Path parameter of GET /v1/videos/{video_id}[/content]. */
export const videoAIdParam = z.object({ video_id: z.string().min(1).max(128) });
