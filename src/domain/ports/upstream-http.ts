import type { IncomingHttpHeaders } from 'node:http';

/** An upstream's HTTP answer whose body is read as it arrives (a finished video's file). */
export interface UpstreamHttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** Readable; errors while reading it are UpstreamError (timeout, aborted, or protocol for a cut body). */
  body: AsyncIterable<Buffer>;
  /** Drops the connection (used when the body will not be read to its end). */
  destroy(): void;
}
