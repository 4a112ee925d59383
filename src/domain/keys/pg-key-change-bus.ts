import { randomUUID } from 'node:crypto';
import { Client, PoolClient } from 'pg';
import type { KeyAuthenticator } from './key-auth';
import type { KeyChangeBus } from './key-change-bus';

export const KEY_CHANGE_CHANNEL = 'gateway_key_changes';
const APP_NAME_PREFIX = 'gateway-keys';

export interface PgKeyChangeBusOptions {
  /** LISTEN/NOTIFY channel; every replica of one deployment must use the same one. */
  channel?: string;
  /** Upper bound on how long afterCommit waits for the other replicas to confirm. */
  syncTimeoutMs?: number;
  /** Liveness probe of the listening connection (a silently dead socket would miss notifications). */
  pingIntervalMs?: number;
  /** First and last delay between reconnection attempts (doubling in between). */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** How long the startup self-test waits for its own notification. */
  probeTimeoutMs?: number;
  log?: (message: string, err?: unknown) => void;
}

export interface PgKeyChangeBus extends KeyChangeBus {
  /** This replica's id on the channel (its listener's application_name ends with it). */
  readonly replicaId: string;
  /** Whether the listening connection is up (while it is down this replica does not cache keys). */
  listening(): boolean;
}

interface Pending {
  createdAt: number;
  /** Replicas that confirmed they dropped the key. */
  acked: Set<string>;
  /** Called whenever an ack arrives, while afterCommit waits. */
  onAck: (() => void) | null;
}

/** Rolled-back transactions never call afterCommit; their pending entries are dropped after this. */
const PENDING_MAX_AGE_MS = 60_000;
/** NOTIFY payloads must stay under 8000 bytes; acks are batched well below that. */
const ACK_PAYLOAD_LIMIT = 7000;

/**
 * Cross-replica key invalidation over Postgres LISTEN/NOTIFY, confirmed by every replica.
 *
 * - Each replica keeps one dedicated connection LISTENing, named `gateway-keys:<channel>:<replica id>`
 *   (application_name), so the set of listening replicas is visible in pg_stat_activity.
 * - publish(tx, id) runs `pg_notify(channel, 'k:<id>:<nonce>')` inside the writing transaction: Postgres
 *   delivers it to every listener when (and only if) the transaction commits.
 * - A replica receiving it drops the key from its cache, then confirms with `a:<replica id>:<nonces>`.
 * - afterCommit(id) drops the key locally, reads which replicas are listening, and waits (bounded,
 *   2 s by default) until each of them confirmed. When it returns, no replica that was listening can
 *   serve the old key from its cache: the next request anywhere re-reads the database.
 * - A replica whose listening connection fails may have missed changes: it clears its cache and stops
 *   caching (every request reads the database) until it listens again, then clears it again.
 */
export function createPgKeyChangeBus(
  databaseUrl: string,
  opts: PgKeyChangeBusOptions = {},
): (keyAuth: KeyAuthenticator) => Promise<PgKeyChangeBus> {
  const channel = opts.channel ?? KEY_CHANGE_CHANNEL;
  if (!/^[a-z_][a-z0-9_]{0,35}$/.test(channel)) throw new Error(`invalid LISTEN channel name: ${channel}`);
  const syncTimeoutMs = opts.syncTimeoutMs ?? 2000;
  const pingIntervalMs = opts.pingIntervalMs ?? 15_000;
  const reconnectMinMs = opts.reconnectMinMs ?? 100;
  const reconnectMaxMs = opts.reconnectMaxMs ?? 5000;
  const probeTimeoutMs = opts.probeTimeoutMs ?? 2000;
  const log = opts.log ?? (() => undefined);
  const appPrefix = `${APP_NAME_PREFIX}:${channel}:`;

  return async (keyAuth) => {
    const replicaId = randomUUID().replace(/-/g, '').slice(0, 12);
    let seq = 0;
    let client: Client | null = null;
    let closed = false;
    let backoffMs = reconnectMinMs;
    let reconnectTimer: NodeJS.Timeout | null = null;
    /** Our own published changes, by nonce, until afterCommit has seen them confirmed. */
    const pending = new Map<string, Pending>();
    /** Nonces published per key and not yet taken by an afterCommit, oldest first. */
    const untaken = new Map<number, string[]>();
    /** Nonces received and dropped, to confirm in one batched notification. */
    let ackQueue: string[] = [];
    let ackScheduled = false;
    /** Startup probe / barrier nonces this replica waits to receive itself. */
    const probes = new Map<string, () => void>();

    const newNonce = () => `${replicaId}.${(++seq).toString(36)}`;

    function onNotification(msg: { channel: string; payload?: string }): void {
      if (msg.channel !== channel) return;
      const payload = msg.payload ?? '';
      const kind = payload.slice(0, 2);
      if (kind === 'k:') {
        const [idText, nonce] = payload.slice(2).split(':');
        const id = Number(idText);
        if (Number.isSafeInteger(id)) keyAuth.invalidate(id);
        else keyAuth.clear();
        if (nonce) queueAck(nonce);
      } else if (kind === 'a:') {
        const [from, list] = splitOnce(payload.slice(2), ':');
        for (const nonce of list.split(',')) {
          const p = pending.get(nonce);
          if (p) {
            p.acked.add(from);
            p.onAck?.();
          }
        }
      } else if (kind === 's:') {
        probes.get(payload.slice(2))?.();
      } else {
        // 'all' or anything unknown (a newer replica's message): dropping everything is always safe.
        keyAuth.clear();
      }
    }

    function queueAck(nonce: string): void {
      ackQueue.push(nonce);
      if (ackScheduled) return;
      ackScheduled = true;
      // Batches the confirmations of a burst (a bulk status change notifies once per key).
      setImmediate(() => {
        ackScheduled = false;
        const nonces = ackQueue;
        ackQueue = [];
        const c = client;
        if (!c) return;
        for (const payload of ackPayloads(nonces)) {
          c.query('SELECT pg_notify($1, $2)', [channel, payload]).catch((err) => lost(c, err));
        }
      });
    }

    function ackPayloads(nonces: string[]): string[] {
      const out: string[] = [];
      let cur: string[] = [];
      let size = 0;
      for (const n of nonces) {
        if (size + n.length + 1 > ACK_PAYLOAD_LIMIT && cur.length) {
          out.push(`a:${replicaId}:${cur.join(',')}`);
          cur = [];
          size = 0;
        }
        cur.push(n);
        size += n.length + 1;
      }
      if (cur.length) out.push(`a:${replicaId}:${cur.join(',')}`);
      return out;
    }

    function lost(c: Client, err?: unknown): void {
      if (c !== client) return;
      client = null;
      log('key change listener lost; key cache off until it reconnects', err);
      keyAuth.setCaching(false);
      for (const p of pending.values()) p.onAck?.();
      for (const release of [...probes.values()]) release();
      c.end().catch(() => undefined);
      scheduleReconnect();
    }

    function scheduleReconnect(): void {
      if (closed || reconnectTimer) return;
      const delay = backoffMs;
      backoffMs = Math.min(backoffMs * 2, reconnectMaxMs);
      reconnectTimer = setTimeout(() => {
        reconnectTimer = null;
        connect()
          .then(() => log('key change listener reconnected'))
          .catch((err) => {
            log('key change listener reconnect failed', err);
            scheduleReconnect();
          });
      }, delay);
      reconnectTimer.unref();
    }

    async function connect(): Promise<void> {
      const c = new Client({
        connectionString: databaseUrl,
        keepAlive: true,
        application_name: `${appPrefix}${replicaId}`,
        query_timeout: 10_000,
      });
      c.on('notification', onNotification);
      c.on('error', (err) => lost(c, err));
      c.on('end', () => lost(c));
      try {
        await c.connect();
        await c.query(`LISTEN ${channel}`);
      } catch (err) {
        c.removeAllListeners('end');
        c.on('error', () => undefined);
        await c.end().catch(() => undefined);
        throw err;
      }
      if (closed) {
        await c.end().catch(() => undefined);
        return;
      }
      client = c;
      backoffMs = reconnectMinMs;
      // Anything cached before this LISTEN took effect may have missed a change.
      keyAuth.clear();
      keyAuth.setCaching(true);
    }

    /** Sends a nonce through the channel; true once `c` itself received it (within the bound). */
    async function selfProbe(c: Client, timeoutMs: number): Promise<boolean> {
      const nonce = newNonce();
      let timer: NodeJS.Timeout | undefined;
      let seen = false;
      const arrived = new Promise<void>((resolve) => {
        probes.set(nonce, () => {
          seen = client === c;
          resolve();
        });
        timer = setTimeout(resolve, timeoutMs);
      });
      try {
        await c.query('SELECT pg_notify($1, $2)', [channel, `s:${nonce}`]);
        await arrived;
        return seen;
      } catch {
        return false;
      } finally {
        clearTimeout(timer);
        probes.delete(nonce);
      }
    }

    /**
     * Replicas listening right now. Calls arriving in the same tick share one query, which starts after all
     * of them were called (so after their transactions committed).
     */
    let listenersBatch: Promise<string[]> | null = null;
    function listeningReplicas(c: Client): Promise<string[]> {
      if (listenersBatch) return listenersBatch;
      const batch = new Promise<string[]>((resolve) => {
        setImmediate(() => {
          listenersBatch = null;
          c.query<{ app: string }>(
            'SELECT application_name AS app FROM pg_stat_activity WHERE datname = current_database() AND starts_with(application_name, $1)',
            [appPrefix],
          ).then(
            (res) => resolve(res.rows.map((r) => r.app.slice(appPrefix.length))),
            () => resolve([]),
          );
        });
      });
      listenersBatch = batch;
      return batch;
    }

    function prunePending(now: number): void {
      for (const [nonce, p] of pending) {
        if (now - p.createdAt > PENDING_MAX_AGE_MS) pending.delete(nonce);
      }
      for (const [id, nonces] of untaken) {
        const live = nonces.filter((n) => pending.has(n));
        if (live.length) untaken.set(id, live);
        else untaken.delete(id);
      }
    }

    /**
     * Waits until every listening replica confirmed one of `nonces`. Any of them will do: they are all
     * notifications about this key that were not yet taken by an earlier afterCommit, so each was
     * committed at or after the caller's own commit (or rolled back, and then never confirmed).
     */
    async function waitForAcks(nonces: string[], c: Client): Promise<void> {
      const replicas = await listeningReplicas(c);
      const missing = () =>
        client === c && replicas.some((r) => !nonces.some((n) => pending.get(n)?.acked.has(r)));
      if (!missing()) return;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          for (const n of nonces) {
            const p = pending.get(n);
            if (p) p.onAck = null;
          }
          resolve();
        };
        const timer = setTimeout(() => {
          const slow = replicas.filter((r) => !nonces.some((n) => pending.get(n)?.acked.has(r)));
          log(`key change not confirmed within ${syncTimeoutMs} ms by replica(s) ${slow.join(', ')}`);
          done();
        }, syncTimeoutMs);
        const check = () => {
          if (!missing()) done();
        };
        for (const n of nonces) {
          const p = pending.get(n);
          if (p) p.onAck = check;
        }
      });
    }

    await connect();
    const first = client as Client | null;
    if (first && !(await selfProbe(first, probeTimeoutMs))) {
      closed = true;
      await first.end().catch(() => undefined);
      throw new Error(
        'the database did not deliver LISTEN/NOTIFY to this connection (embedded PGlite does not carry it across ' +
          'its socket); use the in-process key change bus for a single-process deployment',
      );
    }

    const ping = setInterval(() => {
      const c = client;
      if (!c) return;
      c.query('SELECT 1').catch((err) => lost(c, err));
    }, pingIntervalMs);
    ping.unref();

    return {
      replicaId,
      listening: () => client !== null,
      async publish(tx: PoolClient, tokenIds: number | readonly number[]) {
        const ids = typeof tokenIds === 'number' ? [tokenIds] : tokenIds;
        if (ids.length === 0) return;
        const now = Date.now();
        if (pending.size > 1000) prunePending(now);
        const payloads = ids.map((tokenId) => {
          const nonce = newNonce();
          pending.set(nonce, { createdAt: now, acked: new Set(), onAck: null });
          const list = untaken.get(tokenId);
          if (list) list.push(nonce);
          else untaken.set(tokenId, [nonce]);
          return `k:${tokenId}:${nonce}`;
        });
        await tx.query('SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p', [channel, payloads]);
      },
      async afterCommit(tokenId: number) {
        keyAuth.invalidate(tokenId);
        // Taken at once, so a later change of the same key never counts an earlier change's confirmations.
        const nonces = untaken.get(tokenId) ?? [];
        untaken.delete(tokenId);
        try {
          const c = client;
          // Listener down: this replica is not caching; other replicas still got the notification.
          if (c && nonces.length > 0) await waitForAcks(nonces, c);
        } finally {
          for (const n of nonces) pending.delete(n);
        }
      },
      async close() {
        closed = true;
        clearInterval(ping);
        if (reconnectTimer) clearTimeout(reconnectTimer);
        reconnectTimer = null;
        const c = client;
        client = null;
        // With the listener gone nobody waits for confirmations any more.
        for (const p of pending.values()) p.onAck?.();
        if (c) {
          c.removeAllListeners('end');
          c.on('error', () => undefined);
          await c.end().catch(() => undefined);
        }
      },
    };
  };
}

function splitOnce(s: string, sep: string): [string, string] {
  const i = s.indexOf(sep);
  return i === -1 ? [s, ''] : [s.slice(0, i), s.slice(i + sep.length)];
}
