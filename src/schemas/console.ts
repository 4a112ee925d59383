import { z } from 'zod';
import { storedText } from './text';

/** POST /console/session: the account's username and password (the check of POST /api/user/token) or a system token. */
export const consoleSignInBody = z.union([
  z.object({ username: storedText(64).min(1, 'is required'), password: storedText(1024).min(1, 'is required') }).strict(),
  z.object({ token: storedText(256).min(1, 'is required') }).strict(),
], { error: 'send {username, password} or {token}' });

export const consoleSession = z.object({
  username: z.string(),
  csrf_token: z.string().describe('send it back as X-CSRF-Token on every write made with the session cookie'),
  is_admin: z.boolean().describe('the operator\'s role: channel health and global metrics'),
});
