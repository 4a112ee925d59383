import { z } from 'zod';

/**
 * Pieces shared by the video body schemas. These schemas document the wire shape (OpenAPI, inferred types); the
 * authoritative rules, cross-field limits, defaults and family error codes are in src/domain/video/validation.ts,
 * and these schemas are never stricter than it: `null` reads as omitted, lengths count code points.
 */

export const codePoints = (s: string): number => [...s].length;

/** A prompt: a non-blank string of at most `max` code points without NUL. */
export const videoPrompt = (max: number) =>
  z
    .string({ error: 'must be a string' })
    .refine((s) => s.trim().length > 0, 'must not be empty')
    .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters')
    .refine((s) => codePoints(s) <= max, `must be at most ${max} characters`);

/** A URL string with one of these protocols, e.g. `['https:']`. */
export const videoUrl = (protocols: readonly string[]) =>
  z.string({ error: 'must be a URL string' }).refine((s) => {
    try {
      const u = new URL(s);
      return protocols.includes(u.protocol) && u.hostname.length > 0;
    } catch {
      return false;
    }
  }, `must be an ${protocols.map((p) => p.slice(0, -1)).join(' or ')} URL`);

/** Optional, with `null` read as omitted. */
export const optional = <T extends z.ZodType>(schema: T) => schema.nullish();
