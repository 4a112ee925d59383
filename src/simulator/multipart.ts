/** A minimal multipart/form-data parser for buffered bodies (enough for image edits and audio uploads). */

export interface FormFile {
  filename: string;
  contentType: string;
  data: Buffer;
}

export interface Form {
  /** Text fields; a repeated name keeps the last value. */
  fields: Record<string, string>;
  /** Every value of each text field, in order (for repeated names such as `timestamp_granularities[]`). */
  lists: Record<string, string[]>;
  /** File fields, in order; a name may repeat (`image[]`). */
  files: Array<FormFile & { name: string }>;
}

/** The boundary of a `multipart/form-data; boundary=...` content type, else undefined. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) return undefined;
  const m = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return m ? m[1] ?? m[2] : undefined;
}

/** Parses the body; undefined when it is not well-formed multipart with this boundary. */
export function parseMultipart(body: Buffer, boundary: string): Form | undefined {
  const delimiter = Buffer.from(`--${boundary}`);
  const form: Form = { fields: {}, lists: {}, files: [] };
  let pos = body.indexOf(delimiter);
  if (pos < 0) return undefined;
  for (;;) {
    pos += delimiter.length;
    if (body[pos] === 0x2d && body[pos + 1] === 0x2d) return form; // "--": the closing delimiter
    if (body[pos] === 0x0d && body[pos + 1] === 0x0a) pos += 2;
    const headerEnd = body.indexOf('\r\n\r\n', pos);
    if (headerEnd < 0) return undefined;
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), headerEnd + 4);
    if (next < 0) return undefined;
    const headers = body.subarray(pos, headerEnd).toString('utf8');
    const data = body.subarray(headerEnd + 4, next);
    const disposition = /content-disposition:([^\r\n]*)/i.exec(headers)?.[1] ?? '';
    const name = /\bname="([^"]*)"/i.exec(disposition)?.[1];
    const filename = /\bfilename="([^"]*)"/i.exec(disposition)?.[1];
    if (name !== undefined) {
      if (filename !== undefined) {
        const contentType = /content-type:\s*([^\r\n;]*)/i.exec(headers)?.[1]?.trim() ?? 'application/octet-stream';
        form.files.push({ name, filename, contentType, data });
      } else {
        const value = data.toString('utf8');
        form.fields[name] = value;
        (form.lists[name] ??= []).push(value);
      }
    }
    pos = next + 2;
  }
}
