import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import type { ObjectStore } from '../domain/ports/object-store';
import { byteCounter } from './byte-counter';

/**
 * Files under `dir` (DATA_DIR/videos in the embedded default), readable by the gateway's user only. A put writes a
 * temporary file and renames it into place, so a reader never sees half a video.
 */
export function createLocalObjectStore(dir: string): ObjectStore {
  const root = path.resolve(dir);
  const fileOf = (key: string) => {
    const file = path.resolve(root, key);
    if (!file.startsWith(root + path.sep)) throw new Error('object key outside the store');
    return file;
  };
  return {
    description: `local ${root}`,

    async put(key, body, _meta, signal) {
      let file: string;
      try {
        file = fileOf(key);
        await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      } catch (err) {
        // Never read: the source (an upload, an upstream download) is ended rather than left paused.
        body.destroy();
        throw err;
      }
      const temp = `${file}.${randomUUID()}.part`;
      const counter = byteCounter();
      try {
        await pipeline(body, counter, createWriteStream(temp, { mode: 0o600 }), { signal });
        await rename(temp, file);
      } catch (err) {
        await rm(temp, { force: true });
        throw err;
      }
      return counter.bytes;
    },

    async get(key, range) {
      const file = fileOf(key);
      const stream = createReadStream(file, range ? { start: range.start, end: range.end } : {});
      // Absent files surface as an open error: answer null rather than a stream that fails at once.
      return new Promise<Readable | null>((resolve, reject) => {
        stream.once('open', () => resolve(stream));
        stream.once('error', (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? resolve(null) : reject(err)));
      });
    },

    async delete(key) {
      await rm(fileOf(key), { force: true });
    },
  };
}
