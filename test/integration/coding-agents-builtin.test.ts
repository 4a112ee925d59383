// test modes: embedded
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentWorkspace, ensureAgents, runClaudeCode, runCodex, runGeminiCli } from '../helpers/agents';
import { newAccount, startGateway, type TestGateway } from '../helpers/harness';

/**
 * A newcomer's first try: the real Claude Code, Codex and Gemini CLI pointed at a gateway on the built-in config (what
 * `npm start` serves), with a model of its catalog. The simulator answers text when nothing asks for a tool, so
 * each agent finishes its task in one or two upstream calls, every one of them billed.
 */
describe('coding agents against the built-in simulator', () => {
  let gw: TestGateway;
  let key: string;
  let root: string;

  // A first install of the pinned agents takes a while; later runs find them in place.
  beforeAll(() => ensureAgents(), 600_000);
  beforeAll(async () => {
    gw = await startGateway();
    const acct = await newAccount(gw.db);
    key = `sk-${(await gw.deps.tokens.create(acct.id, { name: 'agents-builtin', remain_quota: 50_000_000 })).key}`;
    root = await mkdtemp(join(tmpdir(), 'gateway-agents-builtin-'));
  });
  afterAll(async () => {
    await gw?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const callsSince = (since: number, path: string) => gw.simulator!.requests.filter((r) => r.at >= since && r.path === path).length;

  it('Claude Code (--model claude-sonnet-4) finishes in a call or two over /v1/messages', async () => {
    const { work, home } = await agentWorkspace(root, 'claude');
    const since = Date.now();
    const result = await runClaudeCode({ gatewayUrl: gw.baseUrl, apiKey: key, work, home, model: 'claude-sonnet-4', prompt: 'Say hello and list the files here.' });
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    // Claude Code puts its environment (a <system-reminder>) before the prompt in the same user message.
    expect(result.stdout).toContain('This is a simulated answer to:');
    const calls = callsSince(since, '/v1/messages');
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(calls).toBeLessThanOrEqual(2);
  });

  it('Codex (model gpt-4o-mini) finishes in one call over the simulator native /v1/responses', async () => {
    const { work, home } = await agentWorkspace(root, 'codex');
    const since = Date.now();
    const result = await runCodex({ gatewayUrl: gw.baseUrl, apiKey: key, work, home, model: 'gpt-4o-mini', prompt: 'Say hello and list the files here.' });
    expect({ code: result.code, stderr: result.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(result.stdout).toContain('This is a simulated answer to: Say hello and list the files here.');
    expect(callsSince(since, '/v1/responses')).toBe(1);
    expect(callsSince(since, '/v1/chat/completions')).toBe(0);
    const { rows } = await gw.db.query("SELECT count(*)::int AS n FROM ledger WHERE token_name = 'agents-builtin' AND model = 'gpt-4o-mini'");
    expect(rows[0].n).toBe(1);
  });

  it('Gemini CLI (-m gemini-2.5-flash) finishes in one call over the simulator native Gemini API', async () => {
    const { work, home } = await agentWorkspace(root, 'gemini');
    const since = Date.now();
    const result = await runGeminiCli({ gatewayUrl: gw.baseUrl, apiKey: key, work, home, model: 'gemini-2.5-flash', prompt: 'Say hello and list the files here.' });
    expect({ code: result.code, stderr: result.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
    // Gemini CLI puts its session context before the prompt in the same user turn.
    expect(result.stdout).toContain('This is a simulated answer to:');
    expect(callsSince(since, '/v1beta/models/gemini-2.5-flash:streamGenerateContent')).toBe(1);
    const { rows } = await gw.db.query("SELECT count(*)::int AS n FROM ledger WHERE token_name = 'agents-builtin' AND model = 'gemini-2.5-flash'");
    expect(rows[0].n).toBe(1);
  });
});
