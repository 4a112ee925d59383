import { Client } from 'pg';

/** The channel video_task_insert notifies (migration 013); the payload is the task's queue. */
export const VIDEO_SUBMITTED_CHANNEL = 'gateway_video_submitted';

/**
 * A worker's ear for new video tasks: a dedicated connection LISTENing on gateway_video_submitted, calling
 * `onSubmitted` for its task queue, and once after every (re)connect, since notifications sent while it was away
 * are gone. Reconnects after a second on loss. The outbox's periodic pass remains the backstop.
 */
export async function listenForVideoSubmits(
  databaseUrl: string,
  taskQueue: string,
  onSubmitted: () => void,
  log: (line: string) => void,
): Promise<{ close(): Promise<void> }> {
  let closed = false;
  let client: Client | null = null;
  let retry: NodeJS.Timeout | null = null;

  const scheduleReconnect = () => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = null;
      connect().catch((err: Error) => {
        log(`video submit listener: reconnect failed: ${err.message}`);
        scheduleReconnect();
      });
    }, 1000);
    retry.unref();
  };

  async function connect(): Promise<void> {
    const c = new Client({ connectionString: databaseUrl, keepAlive: true, application_name: 'gateway-video-starts' });
    c.on('notification', (n) => {
      if (n.channel === VIDEO_SUBMITTED_CHANNEL && n.payload === taskQueue) onSubmitted();
    });
    c.on('error', () => undefined);
    c.on('end', () => {
      if (client === c) client = null;
      scheduleReconnect();
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${VIDEO_SUBMITTED_CHANNEL}`);
    } catch (err) {
      await c.end().catch(() => undefined);
      throw err;
    }
    if (closed) {
      await c.end().catch(() => undefined);
      return;
    }
    client = c;
    onSubmitted();
  }

  await connect();
  return {
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      const c = client;
      client = null;
      await c?.end().catch(() => undefined);
    },
  };
}
