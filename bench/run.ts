/**
 * Load benchmarks (not part of `npm test`). Usage:
 *
 *   npm run bench                          # every scenario
 *   npm run bench -- models                # chosen scenarios
 *   npm run bench -- models --duration=15 --connections=50 --warmup=3 --no-write
 *   npm run bench -- relay --against=<rev>  # the relay side by side with another commit (default f204ecc; none: skip)
 *
 * Starts the api as a child process on a real PostgreSQL (BENCH_DATABASE_URL, else a fresh database on
 * 127.0.0.1:5432 dropped afterwards) so the load generator and the server do not share an event loop,
 * runs each scenario, prints the figures and updates bench/RESULTS.md (unless --no-write).
 */
import os from 'node:os';
import path from 'node:path';
import { migrate } from '../src/db/migrate';
import { createPool } from '../src/db/pool';
import { createAccount } from '../src/domain/accounts/accounts';
import { createRepositories } from '../src/db/repositories';
import { KeyCipher } from '../src/domain/keys/key-material';
import { createTokenService } from '../src/domain/keys/tokens';
import { benchDatabase } from './lib/database';
import { recordResult, RunInfo } from './lib/results';
import { startBenchServer } from './lib/server-process';
import type { BenchContext, BenchOptions } from './lib/types';
import { SCENARIOS } from './scenarios';

const SECRET = 'bench-secret-bench-secret-bench-secret-0123';

function parseArgs(argv: string[]): { names: string[]; options: BenchOptions; write: boolean } {
  const options: BenchOptions = { durationSeconds: 12, connections: 50, warmupSeconds: 3 };
  const names: string[] = [];
  let write = true;
  for (const arg of argv) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (!m) {
      names.push(arg);
      continue;
    }
    const [, flag, value] = m;
    const num = () => {
      const n = Number(value);
      if (!Number.isFinite(n) || n <= 0) throw new Error(`--${flag} needs a positive number`);
      return n;
    };
    if (flag === 'duration') options.durationSeconds = num();
    else if (flag === 'connections') options.connections = Math.round(num());
    else if (flag === 'warmup') options.warmupSeconds = num();
    else if (flag === 'no-write') write = false;
    else if (flag === 'against' && value) options.against = value;
    else throw new Error(`unknown option --${flag}`);
  }
  for (const n of names) {
    if (!SCENARIOS.some((s) => s.name === n)) {
      throw new Error(`unknown scenario ${n}; known: ${SCENARIOS.map((s) => s.name).join(', ')}`);
    }
  }
  return { names, options, write };
}

const log = (line: string) => process.stdout.write(`[bench] ${line}\n`);

async function main(): Promise<void> {
  const { names, options, write } = parseArgs(process.argv.slice(2));
  const scenarios = names.length ? SCENARIOS.filter((s) => names.includes(s.name)) : SCENARIOS;
  const command = ['npm run bench', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' ');

  const database = await benchDatabase();
  log(`database: ${database.description}`);
  const db = createPool(database.url, 4);
  const logFile = path.join(os.tmpdir(), `gateway-bench-${process.pid}.log`);
  let server: Awaited<ReturnType<typeof startBenchServer>> | null = null;
  let failed = false;
  try {
    await migrate(database.url);
    const pgVersion = (await db.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0].v;
    server = await startBenchServer({ databaseUrl: database.url, secret: SECRET, logFile });
    log(`api process ${server.pid} at ${server.baseUrl}, request log in ${logFile}`);

    const tokens = createTokenService({
      repos: createRepositories(db),
      cipher: new KeyCipher(SECRET),
      publishKeyChange: async () => undefined,
      afterKeyChange: async () => undefined,
    });
    let n = 0;
    const ctx: BenchContext = {
      baseUrl: server.baseUrl,
      databaseUrl: database.url,
      secret: SECRET,
      db,
      options,
      log,
      async newApiKey(settings = {}) {
        const username = `bench_${process.pid}_${++n}_${Date.now()}`;
        const { account } = await createAccount(createRepositories(db), { username, password: 'bench-password' });
        const record = await tokens.create(account.id, settings);
        return { key: `sk-${record.key}`, accountId: account.id, tokenId: record.id };
      },
    };

    const cpus = os.cpus();
    for (const scenario of scenarios) {
      const run: RunInfo = {
        date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        command,
        machine: `${cpus.length} cores (${cpus[0]?.model.trim() ?? 'unknown CPU'}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}`,
        database: `PostgreSQL ${pgVersion} (${database.description.replace(/, fresh database.*/, ', fresh database')})`,
        node: process.version,
        loadBefore: os.loadavg().map((x) => x.toFixed(2)).join(' / '),
      };
      log(`scenario ${scenario.name}: ${scenario.title}`);
      const result = await scenario.run(ctx);
      for (const [k, v] of result.figures) log(`  ${k.padEnd(20)} ${v}`);
      if (result.target) {
        log(`  target: ${result.target.description}: ${result.target.met ? 'met' : 'NOT met'}`);
        if (!result.target.met) failed = true;
      }
      if (write) recordResult(path.join(__dirname, 'RESULTS.md'), scenario.name, scenario.title, run, result);
    }
    if (write) log(`updated ${path.join('bench', 'RESULTS.md')}`);
  } finally {
    await server?.stop();
    await db.end();
    await database.close();
  }
  process.exitCode = failed ? 2 : 0;
}

main().catch((err) => {
  process.stderr.write(`[bench] failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
