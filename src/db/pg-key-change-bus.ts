import { randomUUID } from 'node:crypto';
import { Client, QueryResult, QueryResultRow } from 'pg';
import type { KeyAuthenticator } from '../domain/keys/key-auth';
import { KeyChange, KeyChangeBus, keyChangeIds } from '../domain/keys/key-change-bus';
import type { Tx } from '../domain/ports/transactions';
import { clientOf } from './repositories/queryable';

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

/** What one publish call sent, kept until its afterCommit has waited for the confirmations. */
interface Receipt {
  createdAt: number;
  /** Exactly the nonces this publish call sent, one per key id. */
  nonces: readonly string[];
  /** Per nonce, the replicas that confirmed they dropped that key. */
  acked: Map<string, Set<string>>;
  /** Per replica, how many of this receipt's nonces it confirmed. */
  confirmed: Map<string, number>;
  /** Called when confirmations for this receipt arrive, while afterCommit waits. */
  onAck: (() => void) | null;
  /** afterCommit's wait, shared if it is called again with the same receipt. */
  done: Promise<void> | null;
}

/** Rolled-back transactions never call afterCommit; their receipts are dropped after this. */
const PENDING_MAX_AGE_MS = 60_000;
/** NOTIFY payloads must stay under 8000 bytes; acks are batched well below that. */
const ACK_PAYLOAD_LIMIT = 7000;

/**
 * Cross-replica key invalidation over Postgres LISTEN/NOTIFY, confirmed by every replica.
 *
 * - Each replica keeps one dedicated connection LISTENing, named `gateway-keys:<channel>:<replica id>`
 *   (application_name), so the set of listening replicas is visible in pg_stat_activity.
 * - publish(tx, ids) runs `pg_notify(channel, 'k:<id>:<nonce>')` for each id inside the writing transaction
 *   (Postgres delivers them to every listener when, and only if, the transaction commits) and returns a
 *   receipt naming exactly the nonces this call sent.
 * - A replica receiving one drops the key from its cache, then confirms with `a:<replica id>:<nonces>`.
 * - afterCommit(receipt) drops the keys locally, reads which replicas are listening, and waits (bounded,
 *   2 s by default) until each of them confirmed every nonce of the receipt. Receipts never share nonces, so
 *   overlapping writes of one key each wait for their own notifications. When it returns, no replica that was
 *   listening can serve the old key from its cache: the next request anywhere re-reads the database.
 * - If this replica cannot observe the confirmations (its own listener is down or drops while waiting),
 *   afterCommit waits for the full bound instead of returning early: the others may still hold the key.
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
    /** Our own published changes, by nonce, until afterCommit has waited for their confirmations. */
    const pending = new Map<string, Receipt>();
    /** The bus's state behind each receipt handed out (receipts stay opaque to callers). */
    const receipts = new WeakMap<KeyChange, Receipt>();
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
        const touched = new Set<Receipt>();
        for (const nonce of list.split(',')) {
          const r = pending.get(nonce);
          const who = r?.acked.get(nonce);
          if (!r || !who || who.has(from)) continue;
          who.add(from);
          r.confirmed.set(from, (r.confirmed.get(from) ?? 0) + 1);
          touched.add(r);
        }
        for (const r of touched) r.onAck?.();
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
          serialQuery(c, 'SELECT pg_notify($1, $2)', [channel, payload]).catch((err) => lost(c, err));
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
      // Waiting afterCommits keep waiting (to their bound): acks sent while we are down are lost to us, and
      // the other replicas may still hold the key until they have processed the notification.
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
        await serialQuery(c, `LISTEN ${channel}`);
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
        await serialQuery(c, 'SELECT pg_notify($1, $2)', [channel, `s:${nonce}`]);
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
     * Replicas listening right now, or null if that cannot be read. Calls arriving in the same tick share one
     * query, which starts after all of them were called (so after their transactions committed).
     */
    let listenersBatch: Promise<string[] | null> | null = null;
    function listeningReplicas(c: Client): Promise<string[] | null> {
      if (listenersBatch) return listenersBatch;
      const batch = new Promise<string[] | null>((resolve) => {
        setImmediate(() => {
          listenersBatch = null;
          serialQuery<{ app: string }>(
            c,
            'SELECT application_name AS app FROM pg_stat_activity WHERE datname = current_database() AND starts_with(application_name, $1)',
            [appPrefix],
          ).then(
            (res) => resolve(res.rows.map((r) => r.app.slice(appPrefix.length))),
            () => resolve(null),
          );
        });
      });
      listenersBatch = batch;
      return batch;
    }

    /** Drops receipts whose afterCommit never came (their transaction rolled back). */
    function prunePending(now: number): void {
      for (const [nonce, r] of pending) {
        if (r.done === null && now - r.createdAt > PENDING_MAX_AGE_MS) pending.delete(nonce);
      }
    }

    /**
     * Waits until every replica listening now confirmed every nonce of `r`, or for syncTimeoutMs. When the
     * listening replicas cannot be read (our listener is down), nothing can be confirmed: it waits the bound.
     */
    async function waitForAcks(r: Receipt): Promise<void> {
      const c = client;
      const replicas = c ? await listeningReplicas(c) : null;
      const slow = () =>
        replicas === null ? null : replicas.filter((id) => (r.confirmed.get(id) ?? 0) < r.nonces.length);
      if (slow()?.length === 0) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          r.onAck = null;
          const late = slow();
          log(
            late === null
              ? `key change not confirmed within ${syncTimeoutMs} ms: the key change listener was down`
              : `key change not confirmed within ${syncTimeoutMs} ms by replica(s) ${late.join(', ')}`,
          );
          resolve();
        }, syncTimeoutMs);
        r.onAck = () => {
          if (slow()?.length !== 0) return;
          clearTimeout(timer);
          r.onAck = null;
          resolve();
        };
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
      serialQuery(c, 'SELECT 1').catch((err) => lost(c, err));
    }, pingIntervalMs);
    ping.unref();

    return {
      replicaId,
      listening: () => client !== null,
      async publish(tx: Tx, tokenIds: number | readonly number[]): Promise<KeyChange> {
        const ids = keyChangeIds(tokenIds);
        const change: KeyChange = Object.freeze({ tokenIds: Object.freeze(ids) });
        if (ids.length === 0) return change;
        const now = Date.now();
        if (pending.size > 1000) prunePending(now);
        const nonces = ids.map(() => newNonce());
        const r: Receipt = {
          createdAt: now,
          nonces,
          acked: new Map(nonces.map((n) => [n, new Set<string>()])),
          confirmed: new Map(),
          onAck: null,
          done: null,
        };
        for (const n of nonces) pending.set(n, r);
        receipts.set(change, r);
        const payloads = ids.map((tokenId, i) => `k:${tokenId}:${nonces[i]}`);
        await clientOf(tx).query('SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p', [channel, payloads]);
        return change;
      },
      async afterCommit(change: KeyChange) {
        for (const id of change.tokenIds) keyAuth.invalidate(id);
        const r = receipts.get(change);
        if (!r || r.nonces.length === 0) return;
        if (!r.done) {
          // Pruned only if its transaction ran for over a minute: route any further confirmations to it again.
          for (const n of r.nonces) pending.set(n, r);
          r.done = waitForAcks(r).finally(() => {
            for (const n of r.nonces) pending.delete(n);
          });
        }
        await r.done;
      },
      async close() {
        closed = true;
        clearInterval(ping);
        if (reconnectTimer) clearTimeout(reconnectTimer);
        reconnectTimer = null;
        const c = client;
        client = null;
        // An afterCommit still waiting keeps waiting to its bound: the change must reach the other replicas.
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

/** The tail of each listening connection's queries: pg 9 no longer queues a query sent while one runs. */
const queryTails = new WeakMap<Client, Promise<unknown>>();

/** Runs queries on one connection one after another (acks, pings and probes can overlap otherwise). */
function serialQuery<R extends QueryResultRow = QueryResultRow>(c: Client, text: string, values?: unknown[]): Promise<QueryResult<R>> {
  const run = (queryTails.get(c) ?? Promise.resolve())
    .catch(() => undefined)
    .then(() => c.query<R>(text, values));
  queryTails.set(c, run);
  return run;
}
