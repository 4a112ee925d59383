import { startSimulator } from '../../src/upstream/simulator';
import { runLoad, type LoadResult } from '../lib/load';
import type { Scenario } from '../lib/types';

const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello in five words.' }], max_tokens: 16 });

/**
 * Non-streaming chat through the gateway with auth, the hold, the settle transaction and the ledger on, at 1, 10
 * and 50 connections, against the same simulator code called directly (a simulator started in this process).
 * The gateway's own upstream is the built-in config's simulator inside the api process, so the gateway figures
 * include the simulator's work on the api's event loop: they overstate the added latency a little, never
 * understate it. First figures only: the full bench (streaming first byte, RSS, one pinned core) is to come.
 */
export const relayScenario: Scenario = {
  name: 'relay',
  title: 'POST /v1/chat/completions through the gateway vs the simulator directly',
  async run(ctx) {
    const { key } = await ctx.newApiKey({ name: 'bench-relay', unlimited_quota: true });
    const direct = await startSimulator({ maxRecords: 0 });
    const { durationSeconds, warmupSeconds } = ctx.options;
    const run = async (url: string, connections: number, auth: string): Promise<LoadResult> => {
      const headers = { authorization: auth, 'content-type': 'application/json' };
      await runLoad({ url, connections, durationSeconds: warmupSeconds, method: 'POST', headers, body: BODY });
      return runLoad({ url, connections, durationSeconds, method: 'POST', headers, body: BODY });
    };
    try {
      const probe = await fetch(`${ctx.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: BODY,
      });
      if (probe.status !== 200) throw new Error(`chat answered ${probe.status}: ${(await probe.text()).slice(0, 200)}`);
      const figures: Array<[string, string]> = [];
      let one: { added: number } | null = null;
      let main: LoadResult | undefined;
      for (const connections of [1, 10, 50]) {
        ctx.log(`relay: ${connections} connection(s), direct then through the gateway`);
        const d = await run(`${direct.url}/v1/chat/completions`, connections, 'Bearer sim');
        const g = await run(`${ctx.baseUrl}/v1/chat/completions`, connections, `Bearer ${key}`);
        if (g.non2xx || g.errors) throw new Error(`gateway errors at ${connections} connections: ${JSON.stringify(g.statusCodes)} / ${g.errors}`);
        figures.push(
          [`${connections} conn: direct p50/p99`, `${d.latencyMs.p50} / ${d.latencyMs.p99} ms, ${d.requestsPerSecond.toFixed(0)} req/s`],
          [`${connections} conn: gateway p50/p99`, `${g.latencyMs.p50} / ${g.latencyMs.p99} ms, ${g.requestsPerSecond.toFixed(0)} req/s`],
        );
        if (connections === 1) one = { added: g.latencyMs.p50 - d.latencyMs.p50 };
        main = g;
      }
      const ledger = await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ledger WHERE token_name = 'bench-relay'`);
      figures.push(['Ledger rows written', String(ledger.rows[0].n)]);
      return {
        load: main,
        figures,
        target: { description: 'added p50 under 0.8 ms at 1 connection (issue 7)', met: one !== null && one.added < 0.8 },
      };
    } finally {
      await direct.close();
    }
  },
};
