// The console's one way to the gateway: the public /api/* endpoints with the session cookie (sent by the
// browser, HttpOnly) and the session's CSRF token on every write. Errors come back in the management envelope.

let csrfToken = '';

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

export class ApiError extends Error {
  constructor(message: string, readonly status: number) {
    super(message);
  }
}

export interface Page<T> {
  items: T[];
  total: number;
}

type Query = Record<string, string | number | boolean | undefined | null>;

function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** Called with 401 answers, so the shell can show the sign-in form again. */
let onSignedOut: () => void = () => {};
export function whenSignedOut(fn: () => void): void {
  onSignedOut = fn;
}

async function call(method: string, path: string, opts: { query?: Query; body?: unknown } = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  const res = await fetch(withQuery(path, opts.query), {
    method,
    headers,
    credentials: 'same-origin',
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const body = (await res.json()) as { message?: string };
      if (body.message) message = body.message;
    } catch {
      // not JSON: keep the status line
    }
    if (res.status === 401 && !path.startsWith('/console/session')) onSignedOut();
    throw new ApiError(message, res.status);
  }
  return res;
}

/** The `data` of a management envelope. */
export async function api<T>(method: string, path: string, opts: { query?: Query; body?: unknown } = {}): Promise<T> {
  const res = await call(method, path, opts);
  return ((await res.json()) as { data: T }).data;
}

/** A page of a list endpoint: its items and X-Total-Count. */
export async function apiPage<T>(path: string, query: Query): Promise<Page<T>> {
  const res = await call('GET', path, { query });
  const items = ((await res.json()) as { data: T[] }).data;
  return { items, total: Number(res.headers.get('x-total-count') ?? items.length) };
}

