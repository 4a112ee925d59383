import { z } from 'zod';
import { storedText } from './text';

/**
 * POST /api/user/token: the account password buys a new system token. Only presence and type are
 * checked here; whether the pair is right is the domain's answer (401, same for unknown user and wrong
 * password). Lengths are capped so a huge password cannot make the hash check expensive.
 */
export const systemTokenRequestBody = z.object({
  username: storedText(64).min(1, 'is required'),
  password: storedText(1024).min(1, 'is required'),
});

export type SystemTokenRequestBody = z.infer<typeof systemTokenRequestBody>;

/** PUT /api/user/password: the current password proves who asks (as for a new system token); the new one is checked by the password policy. */
export const passwordChangeBody = z.object({
  username: storedText(64).min(1, 'is required'),
  password: storedText(1024).min(1, 'is required').describe('the current password'),
  new_password: storedText(1024).min(1, 'is required').describe('at least 12 characters, not a common password, not containing the username'),
});
