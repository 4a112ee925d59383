import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cpuSeconds, startDeployedApi, type DeployedApi } from '../lib/deployed-api';
import { runLoad } from '../lib/load';
import { rssMiB, startSimulatorProcess } from '../lib/probe';
import type { Scenario } from '../lib/types';

const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello in five words.' }], max_tokens: 16 });
const CONNECTIONS = [10, 50] as const;
/** Process counts in ABBA order: drift of a shared machine over the run weighs on both alike. */
const ORDER = [1, 2, 2, 1] as const;

interface Cell {
  rps: number;
  p99: number;
  gatewayCpuUs: number;
  databaseCpuUs: number;
}

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);

/**
 * Issue 48: `gateway api --processes N` as deployed (the compiled CLI, LOG_LEVEL=info, journal on), 1 and 2
 * processes, at 10 and 50 connections, against the simulator called directly in the same run; nothing pinned: the
 * gateway's processes share the machine's cores with the simulator, PostgreSQL and this load generator, as a
 * single box would. Per call: the gateway's CPU (every process of the group) and PostgreSQL's (the backends of the
 * bench database), which give the model for N cores.
 */
export const processesScenario: Scenario = {
  name: 'processes',
  title: 'gateway api with 1 and 2 processes (node:cluster), 10 and 50 connections, vs the simulator directly',
  async run(ctx) {
    const { key } = await ctx.newApiKey({ name: 'bench-processes', unlimited_quota: true });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-processes-'));
    const simulator = await startSimulatorProcess();
    const configFile = path.join(dir, 'gateway.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        channels: [{ name: 'sim', type: 'openai', base_url: `${simulator.url}/v1`, key: 'sim', models: ['gpt-4o-mini'] }],
        models: { 'gpt-4o-mini': { input_per_1m: 0.15, output_per_1m: 0.6 } },
      }),
    );
    const json = { 'content-type': 'application/json' };
    const { durationSeconds, warmupSeconds } = ctx.options;
    const backendsCpu = async () => {
      const r = await ctx.db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database()');
      return r.rows.reduce((s, b) => s + cpuSeconds(b.pid), 0);
    };
    const direct: Record<number, number[]> = { 10: [], 50: [] };
    const cells = new Map<string, Cell[]>();
    const memory = new Map<number, string>();
    try {
      for (const processes of ORDER) {
        let api: DeployedApi | null = null;
        try {
          api = await startDeployedApi({ databaseUrl: ctx.databaseUrl, secret: ctx.secret, dataDir: path.join(dir, `data-${processes}`), processes, env: { GATEWAY_CONFIG: configFile }, log: ctx.log });
          const url = `${api.baseUrl}/v1/chat/completions`;
          for (const connections of CONNECTIONS) {
            ctx.log(`processes: ${processes} process(es), ${connections} connections: direct, then through the gateway`);
            const d = await runLoad({ url: `${simulator.url}/v1/chat/completions`, connections, durationSeconds, method: 'POST', headers: { ...json, authorization: 'Bearer sim' }, body: BODY });
            direct[connections].push(d.requestsPerSecond);
            await runLoad({ url, connections, durationSeconds: warmupSeconds, method: 'POST', headers: { ...json, authorization: `Bearer ${key}` }, body: BODY });
            const [g0, b0] = [api.cpuSeconds(), await backendsCpu()];
            const g = await runLoad({ url, connections, durationSeconds, method: 'POST', headers: { ...json, authorization: `Bearer ${key}` }, body: BODY });
            const [g1, b1] = [api.cpuSeconds(), await backendsCpu()];
            if (g.non2xx || g.errors) throw new Error(`gateway errors with ${processes} process(es) at ${connections} connections: ${JSON.stringify(g.statusCodes)} / ${g.errors}`);
            const n = Math.max(1, g.totalRequests);
            const cell = { rps: g.requestsPerSecond, p99: g.latencyMs.p99, gatewayCpuUs: ((g1 - g0) * 1e6) / n, databaseCpuUs: ((b1 - b0) * 1e6) / n };
            cells.set(`${processes}/${connections}`, [...(cells.get(`${processes}/${connections}`) ?? []), cell]);
          }
          const rss = [api.pid, ...(processes > 1 ? api.servingPids() : [])].map((p) => rssMiB(p)?.now ?? NaN);
          memory.set(processes, processes > 1 ? `${rss.slice(1).map((r) => r.toFixed(0)).join(' + ')} MiB, ${rss.reduce((s, r) => s + r, 0).toFixed(0)} MiB with the primary's ${rss[0].toFixed(0)}` : `${rss[0].toFixed(0)} MiB`);
        } finally {
          await api?.stop();
        }
      }
    } finally {
      await simulator.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    const avg = (processes: number, connections: number) => {
      const cs = cells.get(`${processes}/${connections}`) ?? [];
      return { rps: mean(cs.map((c) => c.rps)), p99: mean(cs.map((c) => c.p99)), gatewayCpuUs: mean(cs.map((c) => c.gatewayCpuUs)), databaseCpuUs: mean(cs.map((c) => c.databaseCpuUs)) };
    };
    const figures: Array<[string, string]> = [];
    for (const connections of CONNECTIONS) {
      figures.push([`${connections} conn: direct (mean of ${direct[connections].length} runs)`, `${mean(direct[connections]).toFixed(0)} req/s`]);
      for (const processes of [1, 2]) {
        const c = avg(processes, connections);
        figures.push([
          `${connections} conn: ${processes} process${processes > 1 ? 'es' : ''}`,
          `${c.rps.toFixed(0)} req/s (p99 ${c.p99.toFixed(0)} ms); per call: gateway CPU ${c.gatewayCpuUs.toFixed(0)} µs, PostgreSQL CPU ${c.databaseCpuUs.toFixed(0)} µs`,
        ]);
      }
    }
    const one = avg(1, 50);
    const two = avg(2, 50);
    figures.push(['50 conn: 2 processes over 1', `${((two.rps / Math.max(1, one.rps) - 1) * 100).toFixed(0)}%`]);
    for (const processes of [1, 2]) figures.push([`RSS with ${processes} process${processes > 1 ? 'es' : ''} (after the runs)`, memory.get(processes) ?? 'n/a']);
    // The model: a gateway core serves 1 / (its CPU per call) calls a second; PostgreSQL needs its CPU per call for each.
    const perCore = 1e6 / Math.max(1, one.gatewayCpuUs);
    const dbShare = one.databaseCpuUs / Math.max(1, one.gatewayCpuUs);
    figures.push(
      ['model: calls a second per gateway core (1 / gateway CPU per call, 50 conn, 1 process)', perCore.toFixed(0)],
      ['model: PostgreSQL CPU per gateway CPU', `${dbShare.toFixed(2)} (a PostgreSQL core for every ${(1 / Math.max(0.01, dbShare)).toFixed(1)} gateway cores)`],
      ['model: 16 gateway cores (16 processes), upstream and PostgreSQL elsewhere', `~${Math.round((perCore * 16) / 100) * 100} req/s, needing ~${(dbShare * 16).toFixed(1)} PostgreSQL cores`],
    );
    return {
      figures,
      target: { description: '2 processes ahead of 1 at 50 connections', met: two.rps > one.rps },
      notes: [
        `Nothing pinned: the gateway's processes, the simulator, PostgreSQL and the load generator (autocannon, in the bench process) share the machine's ${os.cpus().length} cores, so a second process can take at most what the others leave.`,
        `Process counts run in the order ${ORDER.join(', ')} (each a fresh \`gateway api --processes N\`); each row is the mean of its two runs.`,
        'CPU per call: user + system CPU of every gateway process (a group: primary and members) and of every PostgreSQL backend of the bench database over the measured run, divided by the calls answered.',
      ],
    };
  },
};
