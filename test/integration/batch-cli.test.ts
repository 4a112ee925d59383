import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { http, newAccount, startGateway, startWorker, TestGateway } from '../helpers/harness';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');

describe('CLI: gateway keys batch / rotate / batch-status', () => {
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let auth: string;
  let dir: string;

  beforeAll(async () => {
    gw = await startGateway();
    gw.deps.batches.settings.chunkSize = 200;
    worker = await startWorker(gw);
    auth = (await newAccount(gw.db)).systemToken;
    dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-cli-'));
  });
  afterAll(async () => {
    await worker.stop();
    await gw.close();
  });

  /** Runs the real CLI as an operator would (through tsx), against the test gateway. */
  async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(path.join(ROOT, 'node_modules/.bin/tsx'), ['src/cli/main.ts', 'keys', ...args], {
        cwd: ROOT,
        env: { ...process.env, GATEWAY_URL: gw.baseUrl, GATEWAY_SYSTEM_TOKEN: auth },
        timeout: 120_000,
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  function readKeys(file: string): Array<{ id: number; name: string; key: string }> {
    return readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  }

  it('keys batch: starts the batch over HTTP, follows it, writes exactly N working keys to a 0600 file', async () => {
    const out = path.join(dir, 'keys.jsonl');
    const res = await cli(['batch', '--count', '1000', '--name', 'team', '--remain-quota', '500000', '--out', out]);
    expect(res.stderr).not.toMatch(/sk-/);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/batch \d+ \(issue\) completed: 1000 of 1000 keys created/);
    expect(res.stdout).toContain(`wrote 1000 keys to ${out} (mode 0600)`);
    expect(res.stdout).not.toMatch(/sk-/);
    expect(statSync(out).mode & 0o777).toBe(0o600);

    const lines = readKeys(out);
    expect(lines).toHaveLength(1000);
    expect(lines.map((l) => l.name)).toEqual(Array.from({ length: 1000 }, (_, i) => `team-${String(i + 1).padStart(5, '0')}`));
    expect(new Set(lines.map((l) => l.key)).size).toBe(1000);
    for (const l of lines) {
      expect(l.key).toMatch(/^sk-[A-Za-z0-9]{48}$/);
      expect((await gw.deps.keyAuth.authenticate(l.key)).tokenId).toBe(l.id);
    }
    expect((await http(gw.baseUrl, 'GET', '/v1/models', { auth: `Bearer ${lines[999].key}` })).status).toBe(200);
    const batchId = Number(/batch (\d+)/.exec(res.stdout)![1]);
    const rec = await http(gw.baseUrl, 'GET', `/api/token/batch/${batchId}`, { auth });
    expect(rec.body.data).toMatchObject({ status: 'completed', created: 1000, params: { remain_quota: 500000 } });

    // Never overwrites a key file by accident, and then starts nothing.
    const before = (await http(gw.baseUrl, 'GET', '/api/token/batch', { auth })).headers.get('x-total-count');
    const again = await cli(['batch', '--count', '5', '--name', 'x', '--out', out]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('exists');
    expect((await http(gw.baseUrl, 'GET', '/api/token/batch', { auth })).headers.get('x-total-count')).toBe(before);
    expect(readKeys(out)).toHaveLength(1000);
  });

  it('keys batch --force replaces an existing file and makes it 0600', async () => {
    const out = path.join(dir, 'old.jsonl');
    writeFileSync(out, 'stale\n', { mode: 0o644 });
    const res = await cli(['batch', '--count', '3', '--name', 'f', '--out', out, '--force']);
    expect(res.code).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(readKeys(out)).toHaveLength(3);
  });

  it('keys rotate and keys batch-status drive rotation and status changes', async () => {
    const first = path.join(dir, 'first.jsonl');
    const issued = await cli(['batch', '--count', '50', '--name', 'r', '--remain-quota', '10', '--out', first]);
    expect(issued.code).toBe(0);
    const batchId = Number(/batch (\d+)/.exec(issued.stdout)![1]);

    const disabled = await cli(['batch-status', String(batchId), '--status', 'disabled']);
    expect(disabled.code).toBe(0);
    expect(disabled.stdout).toMatch(/\(status\) completed: 50 of 50 keys visited, 50 changed/);
    const old = readKeys(first);
    await expect(gw.deps.keyAuth.authenticate(old[0].key)).rejects.toMatchObject({ status: 401 });
    expect((await cli(['batch-status', String(batchId), '--status', '1'])).code).toBe(0);
    expect((await gw.deps.keyAuth.authenticate(old[0].key)).tokenId).toBe(old[0].id);

    const rotated = path.join(dir, 'rotated.jsonl');
    const rot = await cli(['rotate', String(batchId), '--grace-seconds', '1', '--out', rotated]);
    expect(rot.code).toBe(0);
    expect(rot.stdout).toMatch(/\(rotate\) completed: 50 replacement keys created, 50 old keys disabled/);
    expect(statSync(rotated).mode & 0o777).toBe(0o600);
    const fresh = readKeys(rotated);
    expect(fresh.map((k) => k.name)).toEqual(old.map((k) => k.name));
    for (const k of fresh) expect((await gw.deps.keyAuth.authenticate(k.key)).tokenId).toBe(k.id);
    for (const k of old.slice(0, 5)) await expect(gw.deps.keyAuth.authenticate(k.key)).rejects.toMatchObject({ status: 401 });

    const show = await cli(['batch-status', String(batchId)]);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ id: batchId, kind: 'issue', status: 'completed', created: 50 });
  });

  it('reports API errors with the message and a non-zero exit', async () => {
    const res = await cli(['batch', '--count', '0', '--name', 'x']);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('count');
    const noToken = await run(path.join(ROOT, 'node_modules/.bin/tsx'), ['src/cli/main.ts', 'keys', 'batch-status', '1'], {
      cwd: ROOT, env: { ...process.env, GATEWAY_URL: gw.baseUrl, GATEWAY_SYSTEM_TOKEN: '' },
    }).catch((e) => e);
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toContain('GATEWAY_SYSTEM_TOKEN');
  });
});
