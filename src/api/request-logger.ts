import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, FastifyChildLoggerFactory } from 'fastify/types/logger';

type LogArgs = [obj: unknown, msg?: string, ...args: unknown[]];

/**
 * `request.log`, made the first time a request logs through it. Fastify gives every request a child logger binding
 * its request id; with the redaction that is a microsecond and over a kilobyte of garbage per request (the relay
 * bench's heap profile), and most requests never log through it: their access line has a logger of its own.
 */
class LazyRequestLogger {
  private made: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly opts: ChildLoggerOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.opts));
  }

  get level(): string {
    return this.made?.level ?? this.opts.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  fatal(...args: LogArgs): void {
    this.logger.fatal(...(args as [unknown]));
  }

  error(...args: LogArgs): void {
    this.logger.error(...(args as [unknown]));
  }

  warn(...args: LogArgs): void {
    this.logger.warn(...(args as [unknown]));
  }

  info(...args: LogArgs): void {
    this.logger.info(...(args as [unknown]));
  }

  debug(...args: LogArgs): void {
    this.logger.debug(...(args as [unknown]));
  }

  trace(...args: LogArgs): void {
    this.logger.trace(...(args as [unknown]));
  }

  silent(...args: LogArgs): void {
    this.logger.silent(...(args as [unknown]));
  }

  child(bindings: Bindings, opts?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, opts);
  }
}

/** Fastify's childLoggerFactory: each request's logger, made on first use. */
export const lazyRequestLogger: FastifyChildLoggerFactory = (logger, bindings, opts) =>
  new LazyRequestLogger(logger, bindings, opts) as unknown as FastifyBaseLogger;
