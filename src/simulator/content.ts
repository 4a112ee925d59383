import { isObject } from './validate';

/**
 * Text (parts joined by newlines) and image count of a message's content: a string, or an array of parts that
 * `kindOf` reads as text (the part's text), an image (`true`), or neither (undefined).
 */
export function textAndImages(content: unknown, kindOf: (part: Record<string, unknown>) => string | true | undefined): { text: string; images: number } {
  if (typeof content === 'string') return { text: content, images: 0 };
  if (!Array.isArray(content)) return { text: '', images: 0 };
  let text = '';
  let images = 0;
  for (const part of content) {
    if (!isObject(part)) continue;
    const kind = kindOf(part);
    if (kind === true) images++;
    else if (kind !== undefined) text += (text ? '\n' : '') + kind;
  }
  return { text, images };
}
