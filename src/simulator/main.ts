/**
 * Runs the upstream simulator by hand:
 *   npx tsx src/simulator/main.ts [--port 9000] [--api-key KEY] [--latency-ms N] [--chunk-delay-ms N] [--stream-chunks N]
 *     [--video-ms N] [--video-failure-rate 0..1]
 * Prints its URL; SIGINT/SIGTERM stop it.
 */
import { startSimulator, type SimulatorOptions } from './index';

function parseArgs(argv: string[]): SimulatorOptions {
  const o: SimulatorOptions = {};
  const num = (flag: string, v: string | undefined): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < 0) throw new Error(`${flag} needs a number >= 0`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2) as [string, string | undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '--port': o.port = num(flag, value()); break;
      case '--api-key': o.apiKey = value(); break;
      case '--latency-ms': o.latencyMs = num(flag, value()); break;
      case '--chunk-delay-ms': o.chunkDelayMs = num(flag, value()); break;
      case '--stream-chunks': o.streamChunks = num(flag, value()); break;
      case '--video-ms': o.videoGenerationMs = num(flag, value()); break;
      case '--video-failure-rate': o.videoFailureRate = num(flag, value()); break;
      case '-h':
      case '--help':
        process.stdout.write('usage: main.ts [--port N] [--api-key KEY] [--latency-ms N] [--chunk-delay-ms N] [--stream-chunks N] [--video-ms N] [--video-failure-rate 0..1]\n');
        process.exit(0);
        break;
      default:
        throw new Error(`unknown option ${flag}`);
    }
  }
  return o;
}

async function main(): Promise<void> {
  const sim = await startSimulator({ maxRecords: 0, ...parseArgs(process.argv.slice(2)) });
  process.stdout.write(`upstream simulator listening on ${sim.url} (OpenAI and Anthropic base: ${sim.url}/v1)\n`);
  const stop = () => void sim.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
