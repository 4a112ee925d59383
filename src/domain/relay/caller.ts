import type { PeriodBudget } from '../billing/holds';
import type { ApiKeyPrincipal } from '../keys/key-auth';
import type { CallSignal } from '../ports/call-signal';

/** What every relay endpoint needs of the HTTP exchange it serves (src/api/routes/inference/relay-transport.ts). */

/** Pino-compatible; only channel names, kinds and amounts are logged (never hosts, keys or bodies). */
export interface RelayLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Who calls, and how to reach them. */
export interface RelayCaller {
  key: ApiKeyPrincipal;
  /** The call's x-request-id: ledger request_id and hold business key `req:<id>`. */
  requestId: string;
  /** Aborted when the client disconnects. */
  signal: CallSignal;
  log?: RelayLog;
  /** Told the tokens (prompt + completion) of a call once it is billed: a key's tokens-per-minute count. */
  onBilledTokens?: (tokens: number) => void;
  /** The key's periodic budget in force and the current period: the call's hold is counted in it. */
  period?: PeriodBudget;
  /** Filled in by the relay as the call runs: where its time went (the transport's Server-Timing header). */
  timing?: CallTiming;
  /** Hosted tools a translation dropped from the request (the transport's `x-gateway-dropped-tools` header). */
  droppedTools?: Set<string>;
}

/** Milliseconds a call spent waiting on others, measured by the relay engine. */
export interface CallTiming {
  /** On upstreams, failover included: until the whole answer (plain call) or the first event (stream). */
  upstreamMs?: number;
  /** On the settle's group commit, before a plain call's answer leaves (docs/decisions/0037-a-delivered-answer-is-billed.md). */
  billingMs?: number;
}

/** Where a stream goes: the transport (SSE over HTTP) behind a plain interface. */
export interface StreamSink {
  /** Once, when the first chunk is in hand: send the status line and headers now. */
  start(): void;
  /** One `data:` payload (a chunk's JSON, or `[DONE]`); false (or a promise of false) when the client is gone. */
  send(payload: string): boolean | Promise<boolean>;
  /** Ends the response. */
  end(): void;
}

/** Where a stream of named events goes (`event: <name>` + `data: <json>`): Messages and Responses. */
export interface NamedEventSink {
  /** Once, when the first event is in hand: send the status line and headers now. */
  start(): void;
  /** One event; false (or a promise of false) when the client is gone. */
  send(event: string, data: string): boolean | Promise<boolean>;
  end(): void;
}

/** Where a byte stream goes (speech audio, transcription SSE): the upstream's Content-Type, then its bytes. */
export interface ByteSink {
  /** Before start: the Content-Type the client gets. */
  contentType(type: string): void;
  start(): void;
  /** Bytes as they came; false (or a promise of false) when the client is gone. */
  write(data: Buffer): boolean | Promise<boolean>;
  end(): void;
}
