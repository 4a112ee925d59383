/** An upstream's HTTP answer whose body is read as it arrives (a finished video's file). */
export interface UpstreamHttpResponse {
  status: number;
  /** Names in lower case, as Node reads them. */
  headers: Record<string, string | string[] | undefined>;
  /** Readable; errors while reading it are UpstreamError (timeout, aborted, or protocol for a cut body). */
  body: AsyncIterable<Buffer>;
  /**
   * The whole body at once, at most `maxBytes` (then a protocol error), with the errors `body` has: read off the
   * socket's events, without an async iterator's turns per chunk (the relay's plain answers). Instead of `body`.
   */
  readAll(maxBytes: number): Promise<Buffer>;
  /** Drops the connection (used when the body will not be read to its end). */
  destroy(): void;
}
