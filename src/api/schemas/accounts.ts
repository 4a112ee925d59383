import { z } from 'zod';

/**
 * POST /api/user/token: the account password buys a new system token. Only presence and type are
 * checked here; whether the pair is right is the domain's answer (401, same for unknown user and wrong
 * password). Lengths are capped so a huge password cannot make the hash check expensive.
 */
export const systemTokenRequestBody = z.object({
  username: z.string({ error: 'must be a string' }).min(1, 'is required').max(64, 'must be at most 64 characters'),
  password: z.string({ error: 'must be a string' }).min(1, 'is required').max(1024, 'must be at most 1024 characters'),
});

export type SystemTokenRequestBody = z.infer<typeof systemTokenRequestBody>;
