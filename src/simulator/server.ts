import { randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deliver, type Pacing } from './deliver';
import { apiError } from './errors';
import { FaultBook, parseFaultHeader, type ActiveFault } from './faults';
import { multipartBoundary, parseMultipart, type Form } from './multipart';
import { checkAnthropicVersion, checkAuth, resolveRoute, type Route } from './routes';
import type { HandlerContext, Reply, Simulator, SimulatorOptions, SimulatorRequestRecord } from './types';
import { BatchStore } from './batches';
import { VideoStore } from './video-store';
import { type AzureTarget, azureTarget, checkAzureAuth, contentFilter, SimulatedEntra } from './azure';
import { SimulatedGoogleAuth, type VertexTarget, vertexAnthropicBody, vertexPredictBody, vertexPredictReply, vertexTarget } from './vertex';
import { json } from './reply';
import { bedrockReply, type BedrockTarget, bedrockBody, bedrockTarget, checkBedrockAuth } from './bedrock';

const HOST = '127.0.0.1';
/** Bodies above this get 413 (image edits carry files). */
const MAX_BODY_BYTES = 50 * 1024 * 1024;
const DEFAULTS = { latencyMs: 0, chunkDelayMs: 0, streamChunks: 5, maxRecords: 1000, strictModels: false, videoGenerationMs: 3000, videoFailureRate: 0, videoSeed: 1, batchMs: 200 };

type Settings = Omit<Required<SimulatorOptions>, 'port' | 'apiKey' | 'azureAd' | 'googleServiceAccount' | 'bedrock'> & { apiKey: string | undefined };

/** Starts the upstream simulator on 127.0.0.1 (see index.ts for what it serves). */
export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const settings: Settings = { ...DEFAULTS, apiKey: undefined };
  const videos = new VideoStore(opts.videoSeed ?? DEFAULTS.videoSeed);
  const batches = new BatchStore();
  let bearer: string | undefined;
  const apply = (o: Partial<SimulatorOptions>) => {
    for (const k of ['latencyMs', 'chunkDelayMs', 'maxRecords', 'videoGenerationMs'] as const) {
      const v = o[k];
      if (v !== undefined && !(Number.isFinite(v) && v >= 0)) throw new Error(`simulator option ${k} must be a number >= 0, got ${v}`);
    }
    if (o.streamChunks !== undefined && !(Number.isInteger(o.streamChunks) && o.streamChunks >= 1)) throw new Error(`simulator option streamChunks must be an integer >= 1, got ${o.streamChunks}`);
    if (o.videoFailureRate !== undefined && !(Number.isFinite(o.videoFailureRate) && o.videoFailureRate >= 0 && o.videoFailureRate <= 1)) throw new Error(`simulator option videoFailureRate must be a number in 0..1, got ${o.videoFailureRate}`);
    if (o.videoSeed !== undefined && !Number.isInteger(o.videoSeed)) throw new Error(`simulator option videoSeed must be an integer, got ${o.videoSeed}`);
    if (o.videoSeed !== undefined) videos.reseed(o.videoSeed);
    if (o.batchMs !== undefined) batches.batchMs = o.batchMs;
    for (const k of ['latencyMs', 'chunkDelayMs', 'streamChunks', 'maxRecords', 'strictModels', 'videoGenerationMs', 'videoFailureRate', 'videoSeed'] as const) {
      if (o[k] !== undefined) (settings as unknown as Record<string, unknown>)[k] = o[k];
    }
    if ('apiKey' in o) {
      settings.apiKey = o.apiKey || undefined;
      bearer = settings.apiKey === undefined ? undefined : `Bearer ${settings.apiKey}`;
    }
  };
  apply(opts);

  const entra = opts.azureAd ? new SimulatedEntra(opts.azureAd) : undefined;
  const google = opts.googleServiceAccount ? new SimulatedGoogleAuth(opts.googleServiceAccount) : undefined;
  const aws = opts.bedrock;
  const googleUnconfigured = () => json(401, { error: { code: 401, message: 'Request had invalid authentication credentials.', status: 'UNAUTHENTICATED' } });
  const faults = new FaultBook();
  /** Video submits by Idempotency-Key: a repeated key is answered with the first submit's reply, no new task. */
  const submitted = new Map<string, Reply>();
  const records: SimulatorRequestRecord[] = [];
  let closing = false;
  const timers = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const entry = { timer: setTimeout(() => { timers.delete(entry); resolve(); }, ms), resolve };
      timers.add(entry);
    });
  const idBase = randomBytes(4).toString('hex');
  let counter = 0;
  const id = (prefix: string) => `${prefix}sim${idBase}${(counter++).toString(36)}`;
  let baseUrl = '';

  const pacing = (latencyMs: number): Pacing => ({ latencyMs, chunkDelayMs: settings.chunkDelayMs, sleep, closed: () => closing });

  function record(req: IncomingMessage, path: string, body: unknown): void {
    if (settings.maxRecords <= 0) return;
    records.push({ method: req.method ?? '', path, url: req.url ?? path, headers: req.headers, body, at: Date.now() });
    if (records.length > settings.maxRecords) records.splice(0, records.length - settings.maxRecords);
  }

  function respond(req: IncomingMessage, res: ServerResponse, path: string, route: Route, raw: Buffer | undefined, azure?: AzureTarget, vertex?: VertexTarget, bedrock?: BedrockTarget): void {
    const headers = req.headers;
    const parsed = parseBody(raw, headers['content-type']);
    // A deployment path serves its deployment, whatever `model` the body names.
    if (azure?.deployment && parsed.body && typeof parsed.body === 'object' && !Array.isArray(parsed.body) && !('files' in parsed.body)) {
      (parsed.body as Record<string, unknown>).model = azure.deployment;
    }
    // The record keeps the body as the cloud received it, before it is made the body of the route that serves it.
    record(req, path, bedrock || vertex?.predict ? structuredClone(parsed.record) : parsed.record);
    const model = bedrock?.model ?? modelOf(parsed.body);
    const videoSubmit = route.videoSubmit === true;
    let fault: ActiveFault | undefined = parseFaultHeader(headers['x-sim-fault']) ?? (faults.size ? faults.take(path, model, videoSubmit) : undefined);
    const forceFail = fault?.kind === 'video-fail';
    if (forceFail) fault = undefined; // the submission itself succeeds
    const latency = headerMs(headers['x-sim-latency-ms']) ?? settings.latencyMs;
    const requestId = id('req_');

    if (fault?.kind === 'stall') return; // never answered; close() ends the connection
    if (fault?.kind === 'reset') {
      const reset = () => { if (!req.socket.destroyed) req.socket.resetAndDestroy(); };
      if (latency > 0) void sleep(latency).then(reset);
      else reset();
      return;
    }
    let reply: Reply;
    const idempotencyKey = videoSubmit && typeof headers['idempotency-key'] === 'string' ? `${path}\u0000${headers['idempotency-key']}` : undefined;
    const again = idempotencyKey ? submitted.get(idempotencyKey) : undefined;
    if (again) reply = { ...again, headers: { ...again.headers } };
    else if (fault?.kind === 'status') reply = apiError(route.api, fault.status, { message: `Simulated upstream error ${fault.status}.`, requestId });
    else {
      const video = { store: videos, generationMs: headerMs(headers['x-sim-video-ms']) ?? settings.videoGenerationMs, forceFail, failureRate: settings.videoFailureRate };
      const auth = bedrock
        ? undefined // checked before: the signature is verified asynchronously
        : azure
        ? checkAzureAuth(headers, settings.apiKey, entra)
        : vertex
          ? google
            ? google.check(headers)
            : googleUnconfigured()
          : route.auth
            ? checkAuth(route.api, headers, settings.apiKey, bearer, requestId)
            : undefined;
      reply =
        auth ??
        (azure ? contentFilter(parsed.body) : undefined) ??
        (vertex ? vertexAnthropicBody(vertex, parsed.body) ?? vertexPredictBody(vertex, parsed.body) : undefined) ??
        (bedrock ? bedrockBody(bedrock, parsed.body) : undefined) ??
        (route.auth && route.api === 'anthropic' && !vertex && !bedrock ? checkAnthropicVersion(headers) : undefined) ??
        (parsed.error ? apiError(route.api, 400, { message: parsed.error, code: 'invalid_json', requestId }) : undefined) ??
        route.handle({ body: parsed.body, headers, streamChunks: settings.streamChunks, strictModels: settings.strictModels, baseUrl, id, requestId, video, batches } satisfies HandlerContext);
    }
    if (idempotencyKey && !again && reply.status === 200) {
      submitted.set(idempotencyKey, { ...reply, headers: { ...reply.headers } });
      if (submitted.size > 10_000) submitted.delete(submitted.keys().next().value as string);
    }
    if (bedrock) reply = bedrockReply(bedrock, reply);
    if (vertex) reply = vertexPredictReply(vertex, reply);
    reply.headers[route.api === 'anthropic' ? 'request-id' : 'x-request-id'] = requestId;
    const done = deliver(res, reply, pacing(latency), fault);
    if (done) done.catch(() => res.destroy());
  }

  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const requestPath = q < 0 ? url : url.slice(0, q);
    const azure = azureTarget(requestPath, q < 0 ? '' : url.slice(q + 1));
    if (azure?.refusal) {
      req.resume();
      void deliver(res, azure.refusal, pacing(0));
      return;
    }
    const vertex = azure ? undefined : vertexTarget(requestPath, google?.project);
    const bedrock = aws ? bedrockTarget(requestPath) : undefined;
    if (vertex?.refusal) {
      req.resume();
      void deliver(res, vertex.refusal, pacing(0));
      return;
    }
    const path = azure?.path ?? vertex?.path ?? bedrock?.path ?? requestPath;
    const route = resolveRoute(req.method, path, req.headers);
    const metadata = google && req.method === 'GET' ? google.metadataToken(path, req.headers) : undefined;
    if (metadata) {
      record(req, path, undefined);
      req.resume();
      void deliver(res, metadata, pacing(settings.latencyMs));
      return;
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      respond(req, res, path, route, undefined, azure, vertex);
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) {
        void deliver(res, apiError(route.api, 413, { message: `Request body larger than ${MAX_BODY_BYTES} bytes.` }), pacing(0));
        return;
      }
      const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      const token = entra && req.method === 'POST' ? entra.tokenEndpoint(path, new URLSearchParams(raw?.toString('utf8') ?? '')) : undefined;
      if (token) {
        record(req, path, undefined);
        void deliver(res, token, pacing(settings.latencyMs));
        return;
      }
      if (google && req.method === 'POST' && path === '/token') {
        record(req, path, undefined);
        void google
          .tokenEndpoint(path, new URLSearchParams(raw?.toString('utf8') ?? ''), `${baseUrl}/token`)
          .then((r) => deliver(res, r ?? json(404, { error: 'not_found' }), pacing(settings.latencyMs)))
          .catch(() => res.destroy());
        return;
      }
      if (bedrock && aws) {
        void checkBedrockAuth(aws, req.method ?? 'POST', url, req.headers, raw?.toString('utf8') ?? '')
          .then((refusal) => (refusal ? void deliver(res, refusal, pacing(0)) : respond(req, res, path, route, raw, undefined, undefined, bedrock)))
          .catch(() => res.destroy());
        return;
      }
      respond(req, res, path, route, raw, azure, vertex);
    });
    req.on('error', () => {});
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  baseUrl = `http://${HOST}:${port}`;

  return {
    url: baseUrl,
    port,
    entra,
    google,
    setOptions: apply,
    addFault: (f) => faults.add(f),
    clearFaults: () => faults.clear(),
    deleteVideoFiles: () => videos.deleteFinishedFiles(),
    videoTiming: (id) => {
      const t = videos.get(id);
      return t && { submittedAt: t.createdAt, generationMs: t.generationMs };
    },
    requests: records,
    resetRecords: () => { records.length = 0; },
    close: () =>
      new Promise<void>((resolve) => {
        if (closing) return resolve();
        closing = true;
        for (const t of timers) { clearTimeout(t.timer); t.resolve(); }
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

interface ParsedBody {
  /** What handlers get. */
  body: unknown;
  /** What the request record keeps (multipart: fields and file descriptions, without file bytes). */
  record: unknown;
  /** A parse failure message (400). */
  error?: string;
}

function parseBody(raw: Buffer | undefined, contentType: string | undefined): ParsedBody {
  if (!raw || raw.length === 0) return { body: undefined, record: undefined };
  const boundary = multipartBoundary(contentType);
  if (boundary) {
    const form = parseMultipart(raw, boundary);
    if (!form) return { body: undefined, record: undefined, error: 'Could not parse the multipart/form-data body.' };
    return { body: form, record: formRecord(form) };
  }
  try {
    const body: unknown = JSON.parse(raw.toString('utf8'));
    return { body, record: body };
  } catch {
    return { body: undefined, record: undefined, error: 'We could not parse the JSON body of your request. (HINT: This likely means you aren\'t using your HTTP library correctly.)' };
  }
}

function formRecord(form: Form) {
  return { fields: form.fields, files: form.files.map((f) => ({ name: f.name, filename: f.filename, contentType: f.contentType, size: f.data.length })) };
}

/** A `x-sim-*-ms` header: a number >= 0, else undefined. */
function headerMs(v: string | string[] | undefined): number | undefined {
  if (typeof v !== 'string' || v.trim() === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

function modelOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const b = body as { model?: unknown; fields?: Record<string, unknown> };
  if (typeof b.model === 'string') return b.model;
  const m = b.fields?.model;
  return typeof m === 'string' ? m : undefined;
}
