import { GatewayConfigError, loadGatewayConfig } from './load';
import type { GatewayConfig } from './schema';

export type ReloadResult = { ok: true; config: GatewayConfig } | { ok: false; problems: string[] };

/** Pino/Fastify loggers fit. */
export interface ConfigLog {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/** Where SIGHUP is listened for: the process (tests pass the real one when theirs is sandboxed). */
export type SignalTarget = Pick<NodeJS.Process, 'on' | 'off'>;

/**
 * The current gateway config: an immutable (deeply frozen) snapshot, swapped whole on reload.
 *
 * The pattern that keeps a reload from dropping or confusing a request in flight: a request calls
 * `current()` ONCE when it starts and uses that object for routing, failover, the quota hold and the final
 * charge. A reload only replaces the store's reference; the request keeps the snapshot it took (channels,
 * keys and prices as they were when it began), and the old snapshot is garbage-collected when the last
 * such request ends. Never call `current()` again in the middle of a request.
 */
export class ConfigStore {
  private snapshot: GatewayConfig;
  private readonly listeners = new Set<(config: GatewayConfig) => void>();

  /** `load` reads the config (it throws GatewayConfigError on a bad one); it is called now and on every reload. */
  constructor(private readonly load: () => GatewayConfig) {
    this.snapshot = load();
  }

  /** A store over GATEWAY_CONFIG's file; throws GatewayConfigError when the first load fails. */
  static fromFile(path: string, env: NodeJS.ProcessEnv = process.env): ConfigStore {
    return new ConfigStore(() => loadGatewayConfig(path, env));
  }

  /** A store over a fixed config (the built-in one); reload() keeps it. */
  static fixed(config: GatewayConfig): ConfigStore {
    return new ConfigStore(() => config);
  }

  current(): GatewayConfig {
    return this.snapshot;
  }

  /** Re-reads the config. On failure the current snapshot stays and every problem is returned. */
  reload(): ReloadResult {
    let next: GatewayConfig;
    try {
      next = this.load();
    } catch (err) {
      if (err instanceof GatewayConfigError) return { ok: false, problems: err.problems };
      // Never echo an unknown error's message: it could quote the file.
      return { ok: false, problems: [`reload failed: ${(err as Error)?.name ?? 'error'}`] };
    }
    const changed = next !== this.snapshot;
    this.snapshot = next;
    if (changed) {
      for (const listener of this.listeners) {
        try {
          listener(next);
        } catch {
          // A listener's failure does not undo the reload nor stop the others.
        }
      }
    }
    return { ok: true, config: next };
  }

  /** Called with each new snapshot after a successful reload (to rebuild a catalog, say). Returns an unsubscribe. */
  onChange(listener: (config: GatewayConfig) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Reloads on SIGHUP and logs the outcome (problems and warnings, never a secret). Returns an unsubscribe.
   * While registered, SIGHUP no longer terminates the process (Node's default). The reload is synchronous
   * and swaps one reference, so requests in flight are untouched (see the class comment).
   */
  watchSighup(log: ConfigLog, target: SignalTarget = process): () => void {
    const handler = (): void => {
      const result = this.reload();
      if (result.ok) {
        log.info(
          `gateway config reloaded from ${result.config.source}: ${result.config.channels.length} channels, ${Object.keys(result.config.models).length} priced models`,
        );
        for (const w of result.config.warnings) log.warn(`gateway config: ${w}`);
      } else {
        log.error(
          `gateway config reload failed, keeping the previous config:\n${result.problems.map((p) => `  - ${p}`).join('\n')}`,
        );
      }
    };
    target.on('SIGHUP', handler);
    return () => {
      target.off('SIGHUP', handler);
    };
  }
}
