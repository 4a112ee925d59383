import { randomBytes } from 'node:crypto';
import type { ImageInput } from '../domain/ports/upstream';

/** A multipart/form-data body built in memory (image edits and audio uploads: tens of MB at most). */
export class MultipartBuilder {
  private readonly boundary = `----gateway${randomBytes(12).toString('hex')}`;
  private readonly parts: Buffer[] = [];
  readonly contentType = `multipart/form-data; boundary=${this.boundary}`;

  field(name: string, value: string): void {
    this.parts.push(Buffer.from(`--${this.boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"\r\n\r\n${value}\r\n`));
  }

  image(name: string, img: ImageInput): void {
    if (img.kind === 'url') return this.field(name, img.url);
    this.file(name, img.filename, img.contentType, img.data);
  }

  file(name: string, filename: string, contentType: string, data: Buffer): void {
    this.parts.push(
      Buffer.from(
        `--${this.boundary}\r\nContent-Disposition: form-data; name="${quote(name)}"; filename="${quote(filename)}"\r\nContent-Type: ${contentType}\r\n\r\n`,
      ),
      data,
      Buffer.from('\r\n'),
    );
  }

  finish(): Buffer {
    return Buffer.concat([...this.parts, Buffer.from(`--${this.boundary}--\r\n`)]);
  }
}

function quote(s: string): string {
  return s.replace(/["\r\n\\]/g, '_');
}
