import { DeleteObjectCommand, GetObjectCommand, NoSuchKey, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ObjectStore } from '../domain/ports/object-store';
import { byteCounter } from './byte-counter';

export interface S3StoreOptions {
  bucket: string;
  /** Prepended to every key (no leading or trailing slash). */
  prefix: string;
  /** An S3-compatible store's address (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL); path-style addressing then. */
  endpoint?: string;
  region?: string;
  forcePathStyle?: boolean;
}

/**
 * Any S3 API, through the AWS SDK: credentials and region come from the SDK's usual chain (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_REGION, profiles, instance roles). Uploads are multipart, so a video of unknown length
 * streams through without being held in memory.
 */
export function createS3ObjectStore(opts: S3StoreOptions): ObjectStore {
  const config: S3ClientConfig = { region: opts.region ?? 'us-east-1' };
  if (opts.endpoint) config.endpoint = opts.endpoint;
  if (opts.forcePathStyle ?? Boolean(opts.endpoint)) config.forcePathStyle = true;
  const client = new S3Client(config);
  const keyOf = (key: string) => (opts.prefix ? `${opts.prefix}/${key}` : key);
  return {
    description: `s3://${opts.bucket}${opts.prefix ? `/${opts.prefix}` : ''}`,

    async put(key, body, meta, signal) {
      // The source's failure (a cut download, a size refusal) reaches the upload through the counter it feeds.
      const counter = byteCounter();
      const feeding = pipeline(body, counter).catch(() => undefined);
      const upload = new Upload({ client, params: { Bucket: opts.bucket, Key: keyOf(key), Body: counter, ContentType: meta.contentType } });
      const abort = () => void upload.abort();
      signal?.addEventListener('abort', abort, { once: true });
      try {
        await upload.done();
      } catch (err) {
        // The source is ended rather than left paused behind a failed upload.
        body.destroy();
        counter.destroy();
        throw err;
      } finally {
        signal?.removeEventListener('abort', abort);
      }
      await feeding;
      return counter.bytes;
    },

    async get(key, range) {
      try {
        const res = await client.send(
          new GetObjectCommand({ Bucket: opts.bucket, Key: keyOf(key), Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
        );
        return (res.Body as Readable | undefined) ?? null;
      } catch (err) {
        if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return null;
        throw err;
      }
    },

    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket: opts.bucket, Key: keyOf(key) }));
    },
  };
}
