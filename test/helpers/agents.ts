import { execFile, execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The real coding agents run against a gateway on loopback: an empty home each, their telemetry, update checks and
 * plugins off, nothing of the developer's own configuration or keys. They are pinned in a package of their own
 * (test/agents, with its own lock), so running the gateway never installs them: `ensureAgents()` does, once.
 */

const AGENTS_BIN = join(__dirname, '../agents/node_modules/.bin');

/** Installs test/agents when missing (scripts/ensure-agents.sh: a no-op when present; processes started together install once). */
export function ensureAgents(): void {
  execFileSync('bash', [join(__dirname, '../../scripts/ensure-agents.sh')], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 600_000 });
}

export interface AgentRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

const AGENT_TIMEOUT_MS = 120_000;

function run(bin: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<AgentRun> {
  return new Promise((resolve) => {
    const child = execFile(bin, args, { cwd, env, timeout: AGENT_TIMEOUT_MS, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr });
    });
    child.stdin?.end();
  });
}

function baseEnv(home: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8', TERM: 'dumb', NO_COLOR: '1' };
}

/** A work folder and an empty home under `root/name`. */
export async function agentWorkspace(root: string, name: string): Promise<{ work: string; home: string }> {
  const work = join(root, name, 'work');
  const home = join(root, name, 'home');
  await mkdir(work, { recursive: true });
  await mkdir(home, { recursive: true });
  return { work, home };
}

/** `claude -p PROMPT` with the gateway as its Anthropic base URL (and `--model` when given). */
export function runClaudeCode(o: { gatewayUrl: string; apiKey: string; work: string; home: string; prompt: string; model?: string }): Promise<AgentRun> {
  const args = ['-p', o.prompt, ...(o.model ? ['--model', o.model] : [])];
  return run(join(AGENTS_BIN, 'claude'), args, o.work, {
    ...baseEnv(o.home),
    ANTHROPIC_BASE_URL: o.gatewayUrl,
    ANTHROPIC_API_KEY: o.apiKey,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
  });
}

/** `codex exec PROMPT` with the gateway as a Responses provider in its config (and `model` when given). */
export async function runCodex(o: { gatewayUrl: string; apiKey: string; work: string; home: string; prompt: string; model?: string; websockets?: boolean }): Promise<AgentRun> {
  await writeFile(
    join(o.home, 'config.toml'),
    [
      ...(o.model ? [`model = "${o.model}"`] : []),
      'model_provider = "gateway"',
      'check_for_update_on_startup = false',
      // web_search stays on, as a user leaves it: offered on every turn, dropped where the channel cannot run it.
      '[model_providers.gateway]',
      'name = "gateway"',
      `base_url = "${o.gatewayUrl}/v1"`,
      'env_key = "GATEWAY_API_KEY"',
      'wire_api = "responses"',
      ...(o.websockets ? ['supports_websockets = true'] : []),
      '[features]',
      'plugins = false',
      '[analytics]',
      'enabled = false',
      '',
    ].join('\n'),
  );
  return run(join(AGENTS_BIN, 'codex'), ['exec', '--skip-git-repo-check', '--sandbox', 'read-only', o.prompt], o.work, {
    ...baseEnv(o.home),
    CODEX_HOME: o.home,
    GATEWAY_API_KEY: o.apiKey,
  });
}

/**
 * `gemini -p PROMPT` with the gateway as its Gemini API base URL and the key as GEMINI_API_KEY (its default `auto`
 * model unless `model` is given). settings.json picks the API key, turns telemetry, usage statistics and update
 * checks off; the work folder is trusted for a headless run.
 */
export async function runGeminiCli(o: { gatewayUrl: string; apiKey: string; work: string; home: string; prompt: string; model?: string }): Promise<AgentRun> {
  await mkdir(join(o.home, '.gemini'), { recursive: true });
  await writeFile(
    join(o.home, '.gemini', 'settings.json'),
    JSON.stringify({
      security: { auth: { selectedType: 'gemini-api-key' } },
      telemetry: { enabled: false },
      privacy: { usageStatisticsEnabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
    }),
  );
  return run(join(AGENTS_BIN, 'gemini'), ['-p', o.prompt, ...(o.model ? ['-m', o.model] : [])], o.work, {
    ...baseEnv(o.home),
    GOOGLE_GEMINI_BASE_URL: o.gatewayUrl,
    GEMINI_API_KEY: o.apiKey,
    GEMINI_CLI_TRUST_WORKSPACE: 'true',
  });
}
