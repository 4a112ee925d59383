import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildDatabase, commitBuild, currentBuild, type BuildDatabase, type GatewayBuild } from '../lib/gateway-build';
import { runLoad } from '../lib/load';
import { alternatedProbe, ms, pin, startFloorProxy, type ProbeTarget } from '../lib/probe';
import { cpuSeconds } from '../lib/deployed-api';
import { startBenchServer, type BenchServer } from '../lib/server-process';
import type { BenchContext } from '../lib/types';

/**
 * This checkout and another commit (`--against`, by default the commit before "a delivered answer is billed") side
 * by side in one run, on one machine, with one harness: each gateway compiled from its own tree, on a fresh
 * database migrated by its own code, with a finite key made by its own code, pinned alone on the gateway core; the
 * simulator, the load generator and PostgreSQL's backends on the other core(s). Latencies are taken with the
 * upstream called directly and the floor proxy in the same alternation, call by call; throughputs ABBA (this,
 * other, other, this), so a drift of the machine during the run weighs on both alike.
 */

export const DEFAULT_AGAINST = 'f204ecc';

interface Side {
  build: GatewayBuild;
  db: BuildDatabase;
  server: BenchServer;
  key: string;
}


export interface SideBySideInput {
  against: string;
  simulatorUrl: string;
  /** A folder for the config file and the request logs. */
  dir: string;
  gatewayCpu: string;
  otherCpus: string;
  warmupCalls: number;
  probeCount: number;
  /** Calls a target gets in a row in the 1-connection probe (relay.ts, PROBE_BLOCK). */
  probeBlock: number;
  bodies: { chat: string; stream: string };
}

export async function relaySideBySide(ctx: BenchContext, input: SideBySideInput): Promise<{ figures: Array<[string, string]>; met: boolean; label: string }> {
  const builds = [currentBuild(), commitBuild(input.against, ctx.log)];
  // The chat channel alone, in the form every commit since the gateway config file reads.
  const configFile = path.join(input.dir, 'side-by-side.json');
  writeFileSync(configFile, JSON.stringify({
    channels: [{ name: 'sim', type: 'openai', base_url: `${input.simulatorUrl}/v1`, key: 'sim', models: ['gpt-4o-mini'] }],
    models: { 'gpt-4o-mini': { input_per_1m: 0.15, output_per_1m: 0.6 } },
  }));
  const sides: Side[] = [];
  const stops: Array<() => Promise<void>> = [];
  try {
    for (const build of builds) {
      const db = await buildDatabase(build, ctx.databaseUrl, ctx.secret);
      stops.push(() => db.close());
      const { key } = await db.newKey('bench-side');
      const server = await startBenchServer({
        root: build.root,
        databaseUrl: db.url,
        secret: ctx.secret,
        logFile: path.join(input.dir, `api-${build.label}.log`),
        cpus: input.gatewayCpu,
        env: { GATEWAY_CONFIG: configFile },
      });
      stops.unshift(() => server.stop());
      sides.push({ build, db, server, key });
    }
    const [now, then] = sides;
    // The floors bill with this checkout's billing_batch, on its database, with a finite key: one settles before it
    // answers (as the gateway does without its journal), the other as the gateway does by default.
    const floorKey = await now.db.newKey('bench-side-floor');
    const floor = await startFloorProxy({
      upstream: `${input.simulatorUrl}/v1/chat/completions`, databaseUrl: now.db.url, tokenId: floorKey.tokenId, accountId: floorKey.accountId, cpus: input.gatewayCpu,
    });
    stops.unshift(() => floor.stop());
    // A local journal line before the answer, the settle after it.
    const journalKey = await now.db.newKey('bench-side-journal');
    const journalFloor = await startFloorProxy({
      upstream: `${input.simulatorUrl}/v1/chat/completions`, databaseUrl: now.db.url, tokenId: journalKey.tokenId, accountId: journalKey.accountId,
      cpus: input.gatewayCpu, journal: path.join(input.dir, 'floor-journal.jsonl'),
    });
    stops.unshift(() => journalFloor.stop());
    // The option weighed against the journal: the ledger row alone before the answer, the counters after it.
    const ledgerKey = await now.db.newKey('bench-side-ledger-first');
    const ledgerFloor = await startFloorProxy({
      upstream: `${input.simulatorUrl}/v1/chat/completions`, databaseUrl: now.db.url, tokenId: ledgerKey.tokenId, accountId: ledgerKey.accountId,
      cpus: input.gatewayCpu, ledgerFirst: true,
    });
    stops.unshift(() => ledgerFloor.stop());
    // The stack's floor: the journaling floor behind Fastify (its JSON parser and reply, no hooks, no validation).
    const fastifyKey = await now.db.newKey('bench-side-fastify');
    const fastifyFloor = await startFloorProxy({
      upstream: `${input.simulatorUrl}/v1/chat/completions`, databaseUrl: now.db.url, tokenId: fastifyKey.tokenId, accountId: fastifyKey.accountId,
      cpus: input.gatewayCpu, journal: path.join(input.dir, 'fastify-floor-journal.jsonl'), fastify: true,
    });
    stops.unshift(() => fastifyFloor.stop());
    const pinBackends = async () => {
      const r = await ctx.db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = ANY($1)', [
        sides.map((s) => new URL(s.db.url).pathname.slice(1)),
      ]);
      for (const b of r.rows) pin(b.pid, input.otherCpus);
    };

    const json = { 'content-type': 'application/json' };
    const direct = (body: string, firstByte = false): ProbeTarget => ({
      url: `${input.simulatorUrl}/v1/chat/completions`, headers: { ...json, authorization: 'Bearer sim' }, body, firstByte,
    });
    const through = (s: Side, body: string, firstByte = false): ProbeTarget => ({
      url: `${s.server.baseUrl}/v1/chat/completions`, headers: { ...json, authorization: `Bearer ${s.key}` }, body, firstByte,
    });
    const chat = input.bodies.chat;
    const stream = input.bodies.stream;

    ctx.log(`relay side by side: ${now.build.label} and ${then.build.label}, 1 connection with the direct call and the floor proxy in turn, after ${input.warmupCalls} warm-up rounds`);
    const oneConn = [
      direct(chat), through(now, chat), through(then, chat),
      { url: `${floor.url}/v1/chat/completions`, headers: json, body: chat },
      { url: `${journalFloor.url}/v1/chat/completions`, headers: json, body: chat },
      { url: `${ledgerFloor.url}/v1/chat/completions`, headers: json, body: chat },
      { url: `${fastifyFloor.url}/v1/chat/completions`, headers: json, body: chat },
    ];
    await alternatedProbe(oneConn, { count: 0, warmup: input.warmupCalls });
    await pinBackends();
    const [{ q: d1 }, { q: n1 }, { q: t1 }, { q: f1 }, { q: j1 }, { q: l1 }, { q: s1 }] = await alternatedProbe(oneConn, {
      count: input.probeCount, warmup: 10, block: input.probeBlock,
    });
    const [{ q: di }, { q: ni }, { q: ti }, , { q: ji }] = await alternatedProbe(oneConn.slice(0, 5), { count: Math.round(input.probeCount / 2), warmup: 10 });

    ctx.log('relay side by side: a stream\'s first chunk, 1 connection, in turn with the direct call');
    const streams = [direct(stream, true), through(now, stream, true), through(then, stream, true)];
    const streamCount = Math.max(200, Math.round(input.probeCount / 2));
    const [{ q: ds }, { q: ns }, { q: ts }] = await alternatedProbe(streams, { count: streamCount, warmup: 500, block: input.probeBlock });
    const [{ q: dsi }, { q: nsi }, { q: tsi }] = await alternatedProbe(streams, { count: streamCount, warmup: 10 });

    /** ABBA: this, other, other, this; each run after its own warm-up. Means per side, and CPU per call. */
    const abba = async (connections: number, body: string) => {
      const out = new Map<Side, { rps: number[]; cpuUsPerCall: number[] }>(sides.map((s) => [s, { rps: [], cpuUsPerCall: [] }]));
      for (const s of [now, then, then, now]) {
        const { url, headers } = through(s, body);
        await runLoad({ url, connections, durationSeconds: ctx.options.warmupSeconds, method: 'POST', headers, body });
        await pinBackends();
        const cpu0 = cpuSeconds(s.server.pid);
        const r = await runLoad({ url, connections, durationSeconds: ctx.options.durationSeconds, method: 'POST', headers, body });
        const cpu = cpuSeconds(s.server.pid) - cpu0;
        if (r.non2xx || r.errors) throw new Error(`${s.build.label} at ${connections} connections: ${JSON.stringify(r.statusCodes)} / ${r.errors} errors`);
        out.get(s)!.rps.push(r.requestsPerSecond);
        out.get(s)!.cpuUsPerCall.push((cpu * 1e6) / Math.max(1, r.totalRequests));
      }
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const { url, headers } = direct(body);
      await runLoad({ url, connections, durationSeconds: ctx.options.warmupSeconds, method: 'POST', headers, body });
      const d = await runLoad({ url, connections, durationSeconds: ctx.options.durationSeconds, method: 'POST', headers, body });
      return {
        direct: d.requestsPerSecond,
        now: { rps: mean(out.get(now)!.rps), cpu: mean(out.get(now)!.cpuUsPerCall) },
        then: { rps: mean(out.get(then)!.rps), cpu: mean(out.get(then)!.cpuUsPerCall) },
      };
    };
    ctx.log('relay side by side: chat at 10 connections, ABBA');
    const c10 = await abba(10, chat);
    ctx.log('relay side by side: chat at 50 connections, ABBA');
    const c50 = await abba(50, chat);
    ctx.log('relay side by side: stream at 10 connections, ABBA');
    const s10 = await abba(10, stream);

    const a = now.build.label;
    const b = then.build.label;
    const both = (x: string, y: string) => `${a}: ${x} · ${b}: ${y}`;
    const rps = (v: number) => `${v.toFixed(0)} req/s`;
    const nowOverFloor = n1.p50 - j1.p50;
    const rows: Array<[string, string, boolean]> = [
      ['chat, 1 connection: added p50 / p99', both(`${ms(n1.p50 - d1.p50)} / ${ms(n1.p99 - d1.p99)}`, `${ms(t1.p50 - d1.p50)} / ${ms(t1.p99 - d1.p99)}`), n1.p50 <= t1.p50 && n1.p99 <= t1.p99],
      ['chat, 10 connections: requests/s (one core)', `${both(rps(c10.now.rps), rps(c10.then.rps))} (direct ${rps(c10.direct)})`, c10.now.rps >= c10.then.rps],
      ['chat, 50 connections: requests/s', `${both(rps(c50.now.rps), rps(c50.then.rps))} (direct ${rps(c50.direct)})`, c50.now.rps >= c50.then.rps],
      ['gateway CPU per call (10 connections)', both(`${c10.now.cpu.toFixed(0)} µs`, `${c10.then.cpu.toFixed(0)} µs`), c10.now.cpu <= c10.then.cpu],
      ['stream, 10 connections: requests/s', `${both(rps(s10.now.rps), rps(s10.then.rps))} (direct ${rps(s10.direct)})`, s10.now.rps >= s10.then.rps],
      ['stream first byte, added p50', both(ms(ns.p50 - ds.p50), ms(ts.p50 - ds.p50)), ns.p50 <= ts.p50],
      [
        `chat, 1 connection: ${a} added p50 over the floor proxy's (journaling its settle before the answer, as ${a} does)`,
        `${ms(nowOverFloor)} (floor added p50 / p99 ${ms(j1.p50 - d1.p50)} / ${ms(j1.p99 - d1.p99)}; target within 0.20 ms)`,
        nowOverFloor <= 0.2,
      ],
    ];
    const figures: Array<[string, string]> = rows.map(([label, value, ok]) => [`vs ${b}: ${label}`, `${value}${ok ? '' : ' (not yet)'}`]);
    figures.push([
      `vs ${b}: chat, 1 connection: a floor proxy that settles before it answers (BILLING_JOURNAL_DIR=off), added p50 / p99`,
      `${ms(f1.p50 - d1.p50)} / ${ms(f1.p99 - d1.p99)}`,
    ]);
    figures.push([
      `vs ${b}: chat, 1 connection: a floor proxy that inserts the ledger row alone before it answers and moves the counters after, added p50 / p99`,
      `${ms(l1.p50 - d1.p50)} / ${ms(l1.p99 - d1.p99)}`,
    ]);
    figures.push([
      `vs ${b}: chat, 1 connection: the stack's floor (the journaling floor behind Fastify: its JSON parser and reply, nothing else), added p50 / p99; ${a} over it`,
      `${ms(s1.p50 - d1.p50)} / ${ms(s1.p99 - d1.p99)}; ${ms(n1.p50 - s1.p50)}`,
    ]);
    // The same 1-connection rows with the calls interleaved one by one, beside the ones judged (in blocks).
    const beside = (label: string, value: string, ok: boolean): [string, string] => [
      `vs ${b}: ${label}, calls interleaved one by one (every call cache-cold)`,
      `${value}${ok ? '' : ` (${a} behind)`}`,
    ];
    figures.push(
      beside('chat, 1 connection: added p50 / p99', both(`${ms(ni.p50 - di.p50)} / ${ms(ni.p99 - di.p99)}`, `${ms(ti.p50 - di.p50)} / ${ms(ti.p99 - di.p99)}`), ni.p50 <= ti.p50 && ni.p99 <= ti.p99),
      beside('stream first byte, added p50', both(ms(nsi.p50 - dsi.p50), ms(tsi.p50 - dsi.p50)), nsi.p50 <= tsi.p50),
      beside(`chat, 1 connection: ${a} added p50 over the journaling floor's`, `${ms(ni.p50 - ji.p50)} (${ni.n} calls per target)`, ni.p50 - ji.p50 <= 0.2),
    );
    figures.push([`vs ${b}: 1 connection calls per target`, `${n1.n} in blocks of ${input.probeBlock} (direct p50 ${ms(d1.p50)}, stream first chunk direct p50 ${ms(ds.p50)})`]);
    return { figures, met: rows.every(([, , ok]) => ok), label: `${a} vs ${b}` };
  } finally {
    for (const stop of stops) await stop().catch(() => undefined);
  }
}
