import type { Pool } from 'pg';
import type { TokenSettings } from '../../src/domain/keys/token-record';
import type { LoadResult } from './load';

export interface BenchOptions {
  /** Measured seconds per load run. */
  durationSeconds: number;
  /** Concurrent HTTP connections. */
  connections: number;
  /** Unmeasured load before each measured run (JIT, caches, pool). */
  warmupSeconds: number;
  /** The commit the relay scenario runs side by side with this checkout (`--against=<rev>`; `none` skips it). */
  against?: string;
}

/** What a scenario gets: a running api process and a way to make accounts and keys. */
export interface BenchContext {
  baseUrl: string;
  /** The database the api uses, and the secret it was started with (to start more api processes). */
  databaseUrl: string;
  secret: string;
  /** The api's database (scenarios may seed data or check results through it). */
  db: Pool;
  options: BenchOptions;
  /** A new account with one API key; returns the usable `sk-...` key. */
  newApiKey(settings?: Partial<TokenSettings>): Promise<{ key: string; accountId: number; tokenId: number }>;
  log(line: string): void;
}

export interface ScenarioResult {
  /** Label/value rows for the report. */
  figures: Array<[string, string]>;
  /** The main load run, when the scenario is an HTTP load test (feeds the history table). */
  load?: LoadResult;
  target?: { description: string; met: boolean };
  notes?: string[];
}

export interface Scenario {
  /** Short name used on the command line and as the results section key. */
  name: string;
  title: string;
  run(ctx: BenchContext): Promise<ScenarioResult>;
}
