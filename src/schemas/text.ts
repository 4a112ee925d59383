import { z } from 'zod';

/**
 * A string that will be stored: bounded, and without NUL characters, which PostgreSQL cannot store in text
 * (or JSONB) and would otherwise reject with a server error.
 */
export const storedText = (max: number) =>
  z
    .string({ error: 'must be a string' })
    .max(max, `must be at most ${max} characters`)
    // eslint-disable-next-line no-control-regex -- matching the NUL character is the point of this check
    .regex(/^[^\u0000]*$/, 'must not contain NUL characters');
