/**
 * The relay benchmark's floor: the least any Node gateway that bills before it answers does per call. It reads the
 * request, forwards it to the upstream on a keep-alive connection, reads the answer's usage, settles it from a
 * credit lease through the gateway's own group commit (BillingBatcher, billing_batch) and answers; no framework,
 * no auth, no validation, no logging, no metrics. What the gateway adds over this proxy is its own cost; what this
 * proxy adds over the upstream called directly is the billing round trip's and the machine's.
 * Started by bench/lib/probe.ts (startFloorProxy) with FLOOR_UPSTREAM (the chat completions URL), DATABASE_URL,
 * FLOOR_TOKEN and FLOOR_ACCOUNT (a key and its account); prints `listening on <url>`.
 *
 * FLOOR_JOURNAL=<file>: the settle is appended to a local file (a write to the page cache, which outlives the
 * process) before the answer, and sent to PostgreSQL after it, through the gateway's group commit
 * (BillingBatcher: the settles of the next 20 ms, at most 16, in one batch), as the gateway does by default (decision
 * 0062).
 * FLOOR_LEDGER_FIRST=1: the option that decision weighed against it: the ledger row alone is inserted (one round
 * trip, asynchronous commit) before the answer, and the lease, key and account counters are moved after it.
 * FLOOR_FASTIFY=1: the same behind Fastify (its JSON body parser and reply, nothing else): what the stack the
 * gateway is built on costs by itself, before any of the gateway's own work.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import http from 'node:http';
import Fastify from 'fastify';
import { Pool } from 'pg';
import { BillingBatcher } from '../src/domain/billing/batcher';
import { createHoldRepository } from '../src/db/repositories/holds';

async function main(): Promise<void> {
  const upstream = new URL(process.env.FLOOR_UPSTREAM ?? '');
  const token = Number(process.env.FLOOR_TOKEN);
  const account = Number(process.env.FLOOR_ACCOUNT);
  // One connection, as a pool: the gateway's group commit (BillingBatcher) sends through one.
  // Never closed when idle: FLOOR_LEDGER_FIRST's session setting stays with it.
  const db = new Pool({ connectionString: process.env.DATABASE_URL, max: 1, idleTimeoutMillis: 0 });
  const lease = `lease:floor:${process.pid}`;
  await db.query('SELECT billing_batch($1::jsonb)', [JSON.stringify([{ op: 'lease', key: lease, account, token, amount: 1e12, ttl: 3600 }])]);
  const agent = new http.Agent({ keepAlive: true });
  let calls = 0;
  const journal = process.env.FLOOR_JOURNAL ? openSync(process.env.FLOOR_JOURNAL, 'a') : null;
  const ledgerFirst = process.env.FLOOR_LEDGER_FIRST === '1';
  if (ledgerFirst) await db.query('SET synchronous_commit = off');
  // The settles go through the gateway's own group commit, with its defaults: a journaled one lingers for company.
  const batcher = new BillingBatcher(createHoldRepository(db));
  /** How an answer leaves: through Node's server directly, or through Fastify's reply (FLOOR_FASTIFY). */
  interface Answer {
    ok(text: Buffer): void;
    fail(status: number, message: string): void;
  }

  /** Forwards one request body, bills its usage as the mode says, answers. */
  const relay = (body: Buffer | string, answer: Answer) => {
    const out = http.request(
      { host: upstream.hostname, port: upstream.port, path: upstream.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', authorization: 'Bearer sim', 'content-length': Buffer.byteLength(body) } },
      (upstreamAnswer) => {
        const chunks: Buffer[] = [];
        upstreamAnswer.on('data', (c: Buffer) => chunks.push(c));
        upstreamAnswer.on('end', () => {
          const text = Buffer.concat(chunks);
          const usage = (JSON.parse(text.toString()) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
          const entry = { request_id: `floor_${process.pid}_${++calls}`, model: 'floor', token_name: 'floor', channel: 'floor', is_stream: false, prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, latency_ms: 0 };
          if (ledgerFirst) {
            const row = db.query({
              name: 'ledger_first',
              text: 'SELECT billing_ledger_insert($1::jsonb, $2, $3, 1, 0)',
              values: [JSON.stringify(entry), account, token],
            });
            row.then(
              () => {
                answer.ok(text);
                void db.query({ name: 'counters_after', text: 'SELECT billing_lease_counters($1, 1, $2, $3, 1)', values: [lease, token, account] });
              },
              (err: Error) => answer.fail(500, err.message),
            );
            return;
          }
          const op = JSON.stringify({ op: 'settle_lease', key: lease, portion: 1, actual: 1, account, token, entry });
          if (journal !== null) {
            writeSync(journal, `${op}\n`);
            answer.ok(text);
            batcher.submitEncoded(op, { linger: true }).catch(() => undefined);
            return;
          }
          batcher.submitEncoded(op).then(
            () => answer.ok(text),
            (err: Error) => answer.fail(500, err.message),
          );
        });
      },
    );
    out.on('error', () => answer.fail(502, ''));
    out.end(body);
  };

  let url: string;
  let close: () => Promise<void>;
  if (process.env.FLOOR_FASTIFY === '1') {
    // The stack's floor: Fastify with its own JSON body parser, the body serialised again for the upstream (as any
    // gateway that reads the request does), the answer through reply.send. No hooks, no validation, no logging.
    const app = Fastify({ logger: false });
    app.post('/v1/chat/completions', (request, reply) => {
      relay(JSON.stringify(request.body), {
        ok: (text) => void reply.header('content-type', 'application/json').send(text),
        fail: (status, message) => void reply.code(status).send(message),
      });
      return reply;
    });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
    close = () => app.close();
  } else {
    const server = http.createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        relay(Buffer.concat(parts), {
          ok: (text) => {
            res.writeHead(200, { 'content-type': 'application/json', 'content-length': text.length });
            res.end(text);
          },
          fail: (status, message) => {
            res.writeHead(status);
            res.end(message);
          },
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    close = () => new Promise((resolve) => server.close(() => resolve()));
  }
  process.stdout.write(`listening on ${url}\n`);
  process.once('SIGTERM', () => {
    void close();
    if (journal !== null) closeSync(journal);
    // What still lingers is settled before the connection closes.
    void batcher
      .idle()
      .then(() => db.end())
      .finally(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`floor proxy: ${String(err)}\n`);
  process.exit(1);
});
