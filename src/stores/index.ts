import path from 'node:path';
import { createLocalObjectStore } from './local-store';
import type { ObjectStore } from '../domain/ports/object-store';
import { createS3ObjectStore } from './s3-store';


/**
 * The store VIDEO_STORE_URL names: `s3://bucket/prefix` (an S3 API; AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for an
 * S3-compatible one), `file:///dir`, or, unset, `<DATA_DIR>/videos`.
 */
export function openObjectStore(url: string | undefined, dataDir: string, env: NodeJS.ProcessEnv = process.env): ObjectStore {
  if (!url) return createLocalObjectStore(path.join(dataDir, 'videos'));
  const parsed = new URL(url);
  if (parsed.protocol === 'file:') return createLocalObjectStore(decodeURIComponent(parsed.pathname));
  if (parsed.protocol !== 's3:' || !parsed.hostname) throw new Error('VIDEO_STORE_URL: expected s3://bucket/prefix or file:///dir');
  return createS3ObjectStore({
    bucket: parsed.hostname,
    prefix: decodeURIComponent(parsed.pathname).replace(/^\/+|\/+$/g, ''),
    endpoint: env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined,
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined,
    forcePathStyle: env.AWS_S3_FORCE_PATH_STYLE === undefined ? undefined : env.AWS_S3_FORCE_PATH_STYLE === 'true',
  });
}
