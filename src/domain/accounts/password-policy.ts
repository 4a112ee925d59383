import { ValidationError } from '../errors';

export const MIN_PASSWORD_LENGTH = 12;
const MAX_PASSWORD_LENGTH = 1024;

/**
 * Passwords guessers try first (lists of leaked passwords, keyboard walks, the product's own words), compared
 * without case and ignoring the digits and symbols people append to make them "stronger".
 */
const COMMON = new Set([
  'password', 'passw0rd', 'p@ssword', 'p@ssw0rd', 'qwerty', 'qwertyuiop', 'asdfghjkl', 'zxcvbnm', 'letmein', 'welcome',
  'iloveyou', 'admin', 'administrator', 'root', 'changeme', 'secret', 'default', 'gateway', 'aigateway', 'login',
  'master', 'monkey', 'dragon', 'football', 'baseball', 'sunshine', 'princess', 'shadow', 'superman', 'trustno',
  'abc', 'abcdef', 'abcdefgh', 'abcdefghijkl', 'qazwsx', 'qazwsxedc', 'whatever', 'starwars', 'computer', 'internet',
  'openai', 'anthropic', 'chatgpt', 'claude', 'temporal', 'postgres', 'mypassword', 'yourpassword', 'passwordpassword',
]);

/** The reason a new password is refused, or null when it may be used. */
export function weakPasswordReason(password: string, username: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `must be at least ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > MAX_PASSWORD_LENGTH) return `must be at most ${MAX_PASSWORD_LENGTH} characters`;
  const lower = password.toLowerCase();
  const core = lower.replace(/[^a-z]+$/, '').replace(/^[^a-z]+/, '');
  if (COMMON.has(lower) || COMMON.has(core)) return 'is one of the most common passwords';
  if (username && lower.includes(username.toLowerCase())) return 'must not contain the username';
  if (new Set(password).size < 4) return 'must use more than a few different characters';
  if (/^\d+$/.test(password)) return 'must not be only digits';
  return null;
}

export function assertStrongPassword(password: string, username: string): void {
  const reason = weakPasswordReason(password, username);
  if (reason) throw new ValidationError(`password: ${reason}`, 'password');
}
