import type { ObjectStore } from '../domain/ports/object-store';
import type { OutboundPolicy } from '../domain/outbound/address-policy';
import type { KeyLimiter } from '../domain/ports/key-limiter';
import type { BillingService } from '../domain/billing/billing-service';
import type { GatewayMetrics } from '../observability/metrics';
import type { Client as TemporalClient } from '@temporalio/client';
import type { Repositories } from '../domain/ports/repositories';
import type { Catalog } from '../domain/catalog';
import type { BatchService } from '../domain/keys/batches';
import type { KeyAuthenticator } from '../domain/keys/key-auth';
import type { KeyChangeBus } from '../domain/keys/key-change-bus';
import type { KeyCipher } from '../domain/keys/key-material';
import type { TokenService } from '../domain/keys/tokens';
import type { ConfigStore } from '../gateway-config/store';
import type { RelayEngine } from '../domain/relay/engine';
import type { UpstreamAdapters } from '../domain/ports/adapters';
import type { VideoService } from '../domain/video/video-service';
import type { VideoLinkSigner } from '../domain/video/signed-links';
import type { BatchFiles } from '../domain/batches/files';
import type { InferenceBatches } from '../domain/batches/batch-service';

/**
 * The group of processes this one serves in (`--processes N`), as `/metrics` and `/readyz` answer for all of it;
 * null when the api runs as one process.
 */
export interface ProcessGroupView {
  /** The group's metrics, counters and histograms summed over its processes. */
  metrics(): Promise<{ text: string; contentType: string }>;
  /** `ok` when every process of the group serves, else how many do. */
  readiness(): string;
}

export interface TemporalDeps {
  client: TemporalClient;
  taskQueue: string;
}

/**
 * Everything routes need, built once per process by the composition root (`createServices` in
 * src/runtime/services.ts, whose `.api` this is) and handed to the app.
 */
export interface GatewayDeps {
  /** Answers when the database does (`/readyz`). */
  probeDatabase(): Promise<unknown>;
  /** The gateway's data, one repository per aggregate. */
  repos: Repositories;
  cipher: KeyCipher;
  keyAuth: KeyAuthenticator;
  keyChanges: KeyChangeBus;
  tokens: TokenService;
  /** Bulk key rollouts (issue, status, rotate) as workflows keys:<batch id>. */
  batches: BatchService;
  temporal: TemporalDeps | null;
  /** The models of the gateway config's channels (follows `config` across reloads). */
  catalog: Catalog;
  /**
   * Channels and prices (GATEWAY_CONFIG, or the built-in simulator config), reloaded on SIGHUP. A request
   * takes `config.current()` ONCE at its start and uses that snapshot throughout (see ConfigStore).
   */
  config: ConfigStore;
  /** Holds, settles and releases of this process (group commit, credit leases), shared by every relay and video. */
  billing: BillingService;
  /**
   * The one relay engine: every inference endpoint (chat, embeddings, images, Messages, Responses, the token counts)
   * runs through it as an endpoint spec (src/domain/relay/endpoints), over one channel cooldown and one metering.
   */
  engine: RelayEngine;
  /** The adapters of every channel type (the engine's, and the video links' upstream files). */
  upstream: UpstreamAdapters;
  /** Video tasks of the three families, run as workflows video:<task id>. */
  videos: VideoService;
  /** Signs and checks the gateway's result links of video tasks. */
  videoLinks: VideoLinkSigner;
  /** Where finished videos are kept (links serve these copies). */
  videoStore: ObjectStore;
  /** Where calls made for users (webhooks) may go; submits check their X-Callback-Url against it. */
  outbound: OutboundPolicy;
  /** Per-key requests and tokens per minute and requests in flight, counted in PostgreSQL for every replica. */
  limits: KeyLimiter;
  /** Prometheus metrics of this process (`GET /metrics`). */
  metrics: GatewayMetrics;
  /** The process group this api serves in, or null when it is one process. */
  processGroup: ProcessGroupView | null;
  /** The Files API's files (batch inputs and outputs), in the object store that keeps videos. */
  batchFiles: BatchFiles;
  /** Batch inference (OpenAI Batch API, Anthropic Message Batches) as workflows batch:<id>. */
  inferenceBatches: InferenceBatches;
}
