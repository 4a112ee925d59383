import { randomBytes } from 'node:crypto';
import type { ProviderBatchAdapter, ProviderBatchCall, ProviderLineResult } from '../domain/ports/provider-batches';
import { DEFAULT_ANTHROPIC_VERSION } from '../domain/ports/messages';
import { UpstreamError } from '../domain/ports/upstream-error';
import { readAll, sendUpstream, withChannelHeaders } from './http';
import { statusError } from './openai-http';

/**
 * The providers' batch APIs over a channel: OpenAI's Files and Batch API (`{base_url}/files`, `{base_url}/batches`)
 * and Anthropic's Message Batches (`{base_url}/messages/batches`), with the channel's key and `headers:`.
 */

const BATCH_TIMEOUT_MS = 5 * 60_000;

async function call(c: ProviderBatchCall, method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: string | Buffer): Promise<Buffer> {
  const res = await sendUpstream({
    url: `${c.channel.base_url}${path}`,
    method,
    headers: withChannelHeaders(headers, c.channel),
    body,
    timeoutMs: Math.max(c.channel.timeout_ms, BATCH_TIMEOUT_MS),
    signal: c.signal,
  });
  if (res.status < 200 || res.status >= 300) throw await statusError(res, { channel: c.channel, upstreamModel: '', signal: c.signal, requestId: '' });
  return readAll(res, 1024 * 1024 * 1024);
}

const json = (buf: Buffer): Record<string, unknown> => {
  try {
    return JSON.parse(buf.toString('utf8')) as Record<string, unknown>;
  } catch {
    throw new UpstreamError('protocol', 'the provider answered with something other than JSON');
  }
};

const jsonLines = (buf: Buffer): Array<Record<string, unknown>> =>
  buf
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);

const openAiHeaders = (c: ProviderBatchCall, contentType = 'application/json'): Record<string, string> => ({
  'content-type': contentType,
  accept: 'application/json',
  ...(c.channel.key ? { authorization: `Bearer ${c.channel.key}` } : {}),
});

const OPENAI_ENDED = new Set(['completed', 'failed', 'expired', 'cancelled']);

export const openAiProviderBatches: ProviderBatchAdapter = {
  async find(c, tag) {
    const list = json(await call(c, 'GET', '/batches?limit=100', openAiHeaders(c)));
    const found = (list.data as Array<{ id: string; metadata?: Record<string, string> | null }> | undefined)?.find((b) => b.metadata?.gateway_batch === tag);
    return found?.id ?? null;
  },

  async create(c, endpoint, lines, tag) {
    const text = lines.map((l) => JSON.stringify({ custom_id: l.customId, method: 'POST', url: endpoint, body: l.body })).join('\n') + '\n';
    const boundary = `gateway${randomBytes(12).toString('hex')}`;
    const form = Buffer.concat([
      Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n`),
      Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="batch.jsonl"\r\ncontent-type: application/jsonl\r\n\r\n`),
      Buffer.from(text),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const file = json(await call(c, 'POST', '/files', openAiHeaders(c, `multipart/form-data; boundary=${boundary}`), form));
    const batch = json(
      await call(c, 'POST', '/batches', openAiHeaders(c), JSON.stringify({ input_file_id: file.id, endpoint, completion_window: '24h', metadata: { gateway_batch: tag } })),
    );
    return String(batch.id);
  },

  async ended(c, id) {
    return OPENAI_ENDED.has(String(json(await call(c, 'GET', `/batches/${encodeURIComponent(id)}`, openAiHeaders(c))).status));
  },

  async cancel(c, id) {
    await call(c, 'POST', `/batches/${encodeURIComponent(id)}/cancel`, openAiHeaders(c));
  },

  async results(c, id) {
    const batch = json(await call(c, 'GET', `/batches/${encodeURIComponent(id)}`, openAiHeaders(c)));
    const out: ProviderLineResult[] = [];
    for (const fileId of [batch.output_file_id, batch.error_file_id]) {
      if (typeof fileId !== 'string' || !fileId) continue;
      for (const l of jsonLines(await call(c, 'GET', `/files/${encodeURIComponent(fileId)}/content`, openAiHeaders(c)))) {
        const response = l.response as { status_code?: number; body?: unknown } | null;
        const status = response?.status_code ?? 500;
        out.push({ customId: String(l.custom_id), ok: status === 200, status, body: response?.body ?? l.error ?? null });
      }
    }
    return out;
  },
};

const anthropicHeaders = (c: ProviderBatchCall): Record<string, string> => ({
  'content-type': 'application/json',
  accept: 'application/json',
  'anthropic-version': DEFAULT_ANTHROPIC_VERSION,
  ...(c.channel.key ? { 'x-api-key': c.channel.key } : {}),
});

export const anthropicProviderBatches: ProviderBatchAdapter = {
  async find(c, _tag, hint) {
    const list = json(await call(c, 'GET', '/messages/batches?limit=100', anthropicHeaders(c)));
    const counts = (b: { request_counts?: Record<string, number> }) => Object.values(b.request_counts ?? {}).reduce((s, n) => s + n, 0);
    const candidates = ((list.data as Array<{ id: string; created_at: string; request_counts?: Record<string, number> }>) ?? []).filter(
      (b) => Date.parse(b.created_at) >= hint.since - 5000 && counts(b) === hint.count,
    );
    return candidates.length === 1 ? candidates[0].id : null;
  },

  async create(c, _endpoint, lines) {
    const batch = json(await call(c, 'POST', '/messages/batches', anthropicHeaders(c), JSON.stringify({ requests: lines.map((l) => ({ custom_id: l.customId, params: l.body })) })));
    return String(batch.id);
  },

  async ended(c, id) {
    return json(await call(c, 'GET', `/messages/batches/${encodeURIComponent(id)}`, anthropicHeaders(c))).processing_status === 'ended';
  },

  async cancel(c, id) {
    await call(c, 'POST', `/messages/batches/${encodeURIComponent(id)}/cancel`, anthropicHeaders(c));
  },

  async results(c, id) {
    const out: ProviderLineResult[] = [];
    for (const l of jsonLines(await call(c, 'GET', `/messages/batches/${encodeURIComponent(id)}/results`, anthropicHeaders(c)))) {
      const result = l.result as { type?: string; message?: unknown; error?: unknown } | undefined;
      if (result?.type === 'succeeded') out.push({ customId: String(l.custom_id), ok: true, status: 200, body: result.message });
      else if (result?.type === 'errored') out.push({ customId: String(l.custom_id), ok: false, status: 400, body: result.error });
    }
    return out;
  },
};

/** The provider batch API of a channel type, where it has one. */
export const PROVIDER_BATCHES: Record<string, ProviderBatchAdapter> = { openai: openAiProviderBatches, anthropic: anthropicProviderBatches };
