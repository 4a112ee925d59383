import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigStore } from '../../src/gateway-config/store';
import { startSimulator, type Simulator } from '../../src/simulator';
import { agentWorkspace, ensureAgents, runClaudeCode, runCodex, runGeminiCli } from '../helpers/agents';
import { newAccount, startGateway, testGatewayConfig, type TestGateway } from '../helpers/harness';

/**
 * Acceptance: the real Claude Code and Codex CLIs (pinned in test/agents), pointed at the gateway, complete a
 * tool-using task with their own default models: read a file through their own tool and answer with what it holds.
 * On every channel type: `anthropic`, `openai` with `responses_api: true`, `openai` without it, `gemini`, `azure`. The upstream is the
 * simulator, scripted by the prompt's marker `[[tool:NAME ARGUMENTS]]`: its first answer calls the agent's tool with
 * those arguments, its second answers with the tool's output. Everything stays on loopback.
 */
const CLAUDE_MODEL = 'claude-opus-5-5';
const SERVICE_ACCOUNT = 'agents@agents-project.iam.gserviceaccount.com';
const CODEX_MODEL = 'gpt-6.1-sol';
const SECRET = 'PERIWINKLE-4242';
/**
 * With its default model Codex offers one custom tool, `exec` (JavaScript that calls its other tools, such as
 * `exec_command`), inside a `functions` namespace of an `additional_tools` input item.
 */
const CODEX_SCRIPT = 'const out = await tools.exec_command({ cmd: "cat secret.txt" }); text(out);';

/**
 * Gemini CLI's default `auto` model: a routing call to its flash-lite model (JSON through `responseJsonSchema`) picks
 * the model of each turn, a Gemini 3 one; with a weaker connection it falls back to a flash model. Every one of them is
 * served, so whichever it picks is ours to relay.
 */
const GEMINI_CLI_MODELS = ['gemini-3.1-pro-preview', 'gemini-3.1-flash-lite', 'gemini-3.5-flash-lite', 'gemini-3.8-flash', 'gemini-3.5-flash', 'gemini-3-flash-preview', 'gemini-2.5-pro', 'gemini-2.5-flash'];
/** The models people route Codex to through a gateway, besides its default. */
const CODEX_NAMED = { 'openai-chat': 'gpt-4.1', anthropic: 'claude-sonnet-4-5' } as const;

const GROUPS = {
  anthropic: { type: 'anthropic', upstreamPath: '/v1/messages' },
  'openai-responses': { type: 'openai', responses_api: true, upstreamPath: '/v1/responses' },
  'openai-chat': { type: 'openai', upstreamPath: '/v1/chat/completions' },
  // generateContent and streamGenerateContent.
  gemini: { type: 'gemini', upstreamPath: 'enerateContent' },
  // Azure OpenAI: the Responses API at the resource's address.
  azure: { type: 'azure', responses_api: true, api_version: '2025-04-01-preview', upstreamPath: '/openai/responses' },
  // Vertex AI: Claude at Anthropic's rawPredict, the rest at Google's publisher paths, with a service account's tokens.
  vertex: { type: 'vertex', project: 'agents-project', region: 'us-east5', upstreamPath: '/v1/projects/agents-project/' },
  // AWS Bedrock: Claude through InvokeModel, signed with Signature V4 (Anthropic's models only: no Codex there).
  bedrock: { type: 'bedrock', region: 'us-east-1', upstreamPath: '/model/' },
} as const;
type Group = keyof typeof GROUPS;

describe('coding agents through the gateway', () => {
  let sim: Simulator;
  let gw: TestGateway;
  let root: string;
  const keys = {} as Record<Group, string>;
  let accountId: number;

  // A first install of the pinned agents takes a while; later runs find them in place.
  beforeAll(() => ensureAgents(), 600_000);
  beforeAll(async () => {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    sim = await startSimulator({
      apiKey: 'sim',
      bedrock: { accessKeyId: 'AKIAAGENTS0000000001', secretAccessKey: 'agents-secret-access-key' },
      googleServiceAccount: { project: 'agents-project', clientEmail: SERVICE_ACCOUNT, publicKeyPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString() },
    });
    const credentials = JSON.stringify({ type: 'service_account', client_email: SERVICE_ACCOUNT, private_key: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), token_uri: `${sim.url}/token` });
    const base = `${sim.url}/v1`;
    const config = testGatewayConfig({
      channels: (Object.keys(GROUPS) as Group[]).map((g) => {
        const { upstreamPath: _path, ...channel } = GROUPS[g];
        // The Gemini API and the clouds' addresses are rooted at the simulator itself.
        const cloud = g === 'vertex' ? { credentials } : g === 'bedrock' ? { aws: { access_key_id: 'AKIAAGENTS0000000001', secret_access_key: 'agents-secret-access-key' } } : { key: 'sim' };
        return { name: g, ...channel, base_url: g === 'gemini' || g === 'azure' || g === 'vertex' || g === 'bedrock' ? sim.url : base, ...cloud, models: [CLAUDE_MODEL, CODEX_MODEL, ...GEMINI_CLI_MODELS, ...Object.values(CODEX_NAMED)], groups: [g] };
      }),
      models: {
        ...Object.fromEntries(GEMINI_CLI_MODELS.map((m) => [m, { input_per_1m: 2, output_per_1m: 12, cache_read_per_1m: 0.2 }])),
        'gpt-4.1': { input_per_1m: 2, output_per_1m: 8 },
        'claude-sonnet-4-5': { input_per_1m: 3, output_per_1m: 15 },
        [CLAUDE_MODEL]: { input_per_1m: 5, output_per_1m: 25, cache_read_per_1m: 0.5, cache_write_per_1m: 6.25 },
        [CODEX_MODEL]: { input_per_1m: 1.25, output_per_1m: 10, cache_read_per_1m: 0.125 },
      },
    });
    gw = await startGateway({ config: ConfigStore.fixed(config) });
    const acct = await newAccount(gw.db);
    accountId = acct.id;
    for (const g of Object.keys(GROUPS) as Group[]) {
      keys[g] = `sk-${(await gw.deps.tokens.create(acct.id, { name: `agent-${g}`, group: g, remain_quota: 500_000_000 })).key}`;
    }
    root = await mkdtemp(join(tmpdir(), 'gateway-agents-'));
  });
  afterAll(async () => {
    await gw?.close();
    await sim?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** A fresh work folder holding the file to read, and an empty home for the agent. */
  async function workspace(name: string): Promise<{ work: string; home: string }> {
    const ws = await agentWorkspace(root, name);
    await writeFile(join(ws.work, 'secret.txt'), `the secret word is ${SECRET}\n`);
    return ws;
  }

  /** The ledger rows of one agent's key for one model (keys are named after their group; the account is this test's). */
  async function ledgerRows(group: Group, model: string): Promise<Array<{ quota: string }>> {
    const { rows } = await gw.db.query('SELECT quota FROM ledger WHERE account_id = $1 AND token_name = $2 AND model = $3', [accountId, `agent-${group}`, model]);
    return rows as Array<{ quota: string }>;
  }

  function upstreamPaths(since: number): string[] {
    return sim.requests.filter((r) => r.at >= since).map((r) => r.url);
  }

  it.each(Object.keys(GROUPS) as Group[])('Claude Code reads a file with its Read tool on an %s channel', async (group) => {
    const { work, home } = await workspace(`claude-${group}`);
    const file = join(work, 'secret.txt');
    const since = Date.now();
    const result = await runClaudeCode({
      gatewayUrl: gw.baseUrl,
      apiKey: keys[group],
      work,
      home,
      prompt: `Read the file secret.txt and tell me what it says. [[tool:Read {"file_path":"${file}"}]]`,
    });
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(result.stdout).toContain(SECRET);
    const paths = upstreamPaths(since);
    // Messages go over chat completions on the OpenAI-format types.
    const expected = GROUPS[group].type === 'openai' ? '/v1/chat/completions' : GROUPS[group].type === 'azure' ? '/chat/completions' : GROUPS[group].upstreamPath;
    expect(paths.some((p) => p.includes(expected))).toBe(true);
    const rows = await ledgerRows(group, CLAUDE_MODEL);
    // The tool call and the answer after it, each billed.
    expect(rows.length).toBeGreaterThanOrEqual(2);
    for (const r of rows) expect(Number(r.quota)).toBeGreaterThan(0);
  });

  it.each((Object.keys(GROUPS) as Group[]).filter((g) => g !== 'bedrock'))('Codex reads a file with its exec tool on an %s channel', async (group) => {
    const { work, home } = await workspace(`codex-${group}`);
    const since = Date.now();
    const result = await runCodex({
      gatewayUrl: gw.baseUrl,
      apiKey: keys[group],
      work,
      home,
      prompt: `Read the file secret.txt and tell me what it says. [[tool:exec ${CODEX_SCRIPT}]]`,
    });
    expect({ code: result.code, stderr: result.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(result.stdout).toContain(SECRET);
    expect(upstreamPaths(since).some((p) => p.includes(GROUPS[group].upstreamPath))).toBe(true);
    const rows = await ledgerRows(group, CODEX_MODEL);
    expect(rows.length).toBeGreaterThanOrEqual(2);
    for (const r of rows) expect(Number(r.quota)).toBeGreaterThan(0);
  });

  it.each(['gemini', 'openai-chat', 'anthropic', 'vertex'] as const)('Gemini CLI (its default auto model) reads a file with its read_file tool on a %s channel', async (group) => {
    const { work, home } = await workspace(`gemini-${group}`);
    const since = Date.now();
    const result = await runGeminiCli({
      gatewayUrl: gw.baseUrl,
      apiKey: keys[group],
      work,
      home,
      prompt: `Read the file secret.txt and tell me what it says. [[tool:read_file {"file_path":"${join(work, 'secret.txt')}"}]]`,
    });
    expect({ code: result.code, stderr: result.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(result.stdout).toContain(SECRET);
    // The routing call got the JSON it asked for: no failed strategy, no retries.
    expect(result.stderr).not.toMatch(/Routing\] .* failed|invalid content|Retry attempts/);
    const calls = sim.requests.filter((r) => r.at >= since);
    expect(calls.some((r) => r.url.includes(GROUPS[group].upstreamPath))).toBe(true);
    const routing = calls.find((r) => JSON.stringify(r.body ?? null).includes('complexity_score'));
    expect(routing).toBeDefined();
    const { rows } = await gw.db.query('SELECT model, quota FROM ledger WHERE account_id = $1 AND token_name = $2 AND created_at >= $3', [accountId, `agent-${group}`, Math.floor(since / 1000)]);
    // The routing call, the tool call and the answer after it, each billed.
    expect(rows.length).toBeGreaterThanOrEqual(3);
    for (const r of rows) expect(Number(r.quota)).toBeGreaterThan(0);
  });

  it.each(Object.entries(CODEX_NAMED) as Array<[keyof typeof CODEX_NAMED, string]>)('Codex with a named model reads a file on an %s channel (%s)', async (group, model) => {
    const { work, home } = await workspace(`codex-named-${group}`);
    const since = Date.now();
    const result = await runCodex({ gatewayUrl: gw.baseUrl, apiKey: keys[group], work, home, model, prompt: `Read the file secret.txt and tell me what it says. [[tool:exec_command {"cmd":"cat secret.txt"}]]` });
    expect({ code: result.code, stderr: result.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(result.stdout).toContain(SECRET);
    expect(upstreamPaths(since)).toContain(GROUPS[group].upstreamPath);
    const rows = await ledgerRows(group, model);
    expect(rows.length).toBeGreaterThanOrEqual(2);
  });

  it.each(['openai-chat', 'anthropic'] as const)('Codex over WebSocket (as its built-in provider speaks it) reads a file on an %s channel, without reconnecting', async (group) => {
    const { work, home } = await workspace(`codex-websockets-${group}`);
    const since = Date.now();
    const result = await runCodex({ gatewayUrl: gw.baseUrl, apiKey: keys[group], work, home, websockets: true, prompt: `Read the file secret.txt and tell me what it says. [[tool:exec ${CODEX_SCRIPT}]]` });
    expect({ code: result.code, stderr: result.stderr.slice(-2000) }).toEqual({ code: 0, stderr: expect.any(String) });
    expect(result.stdout).toContain(SECRET);
    expect(result.stderr).not.toMatch(/Reconnecting|Falling back/);
    expect(upstreamPaths(since)).toContain(GROUPS[group].upstreamPath);
    expect(gw.logs.text()).toContain('responses websocket opened');
  });
});
