import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { testEnv } from './harness';

const ROOT = path.resolve(__dirname, '..', '..');
const run = promisify(execFile);

/** `gateway <args>` as `npm run gateway` runs it, on the test Temporal server; never throws on a non-zero exit. */
export async function gatewayCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = testEnv();
  try {
    const { stdout, stderr } = await run(path.join(ROOT, 'node_modules/.bin/tsx'), ['src/cli/main.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, TEMPORAL_ADDRESS: env.temporalAddress, TEMPORAL_NAMESPACE: env.temporalNamespace, LOG_LEVEL: 'info' },
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
