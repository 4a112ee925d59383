/**
 * The HTTP client of the `gateway` command line: calls a running gateway's management API (`/api/*`, the
 * `{success, message, data}` envelope) with a system token. Used by `keys` and, later, the video task commands.
 */

import { readSecret, SecretSpec } from '../secrets';

export interface ApiOptions {
  /** Default: $GATEWAY_URL, else http://127.0.0.1:$PORT (or 3000). */
  baseUrl?: string;
  /** A system token given as an argument (warns); prefer tokenFile, $GATEWAY_SYSTEM_TOKEN or stdin. */
  token?: string;
  tokenFile?: string;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class GatewayApi {
  constructor(readonly baseUrl: string, private readonly token: string) {}

  /** One call; retried (same request, same Idempotency-Key) on transport errors and 502/503/504. */
  async call<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; data: T; total: number | null }> {
    for (let attempt = 1; ; attempt++) {
      let res: Response;
      try {
        res = await fetch(`${this.baseUrl}${path}`, {
          method,
          headers: {
            authorization: this.token,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...headers,
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (err) {
        if (attempt >= 5) throw new Error(`cannot reach the gateway at ${this.baseUrl}: ${(err as Error).message}`);
        await sleep(attempt * 500);
        continue;
      }
      if ([502, 503, 504].includes(res.status) && attempt < 5) {
        await sleep(attempt * 500);
        continue;
      }
      const text = await res.text();
      let parsed: { success?: boolean; message?: string; data?: T } = {};
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: reported below
      }
      if (!res.ok || parsed.success !== true) {
        throw new Error(`${method} ${path}: HTTP ${res.status}: ${parsed.message ?? text.slice(0, 200)}`);
      }
      const total = res.headers.get('x-total-count');
      return { status: res.status, data: parsed.data as T, total: total === null ? null : Number(total) };
    }
  }
}

/** The client for --base-url/--token, falling back to GATEWAY_URL/GATEWAY_SYSTEM_TOKEN. */
/** The system token: --token (warns), --token-file, GATEWAY_SYSTEM_TOKEN, standard input, or a hidden prompt. */
export const SYSTEM_TOKEN: SecretSpec = {
  what: 'system token',
  argOption: '--token',
  fileOption: '--token-file',
  envVar: 'GATEWAY_SYSTEM_TOKEN',
  prompt: 'System token: ',
};

export async function apiFrom(opts: ApiOptions): Promise<GatewayApi> {
  const baseUrl = (opts.baseUrl ?? process.env.GATEWAY_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`).replace(/\/+$/, '');
  const token = await readSecret(SYSTEM_TOKEN, { arg: opts.token, file: opts.tokenFile });
  return new GatewayApi(baseUrl, token);
}
