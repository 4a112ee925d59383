import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import { ModelNotPricedError } from '../../src/domain/errors';
import { costOfTokens, costOfUnits } from '../../src/domain/pricing/cost';
import { decimal } from '../../src/domain/pricing/decimal';
import {
  ConfigStore,
  GatewayConfigError,
  SIMULATOR_PRICES,
  builtInGatewayConfig,
  channelsServing,
  groupMultiplier,
  interpolateString,
  loadGatewayConfig,
  modelPrice,
  parseGatewayConfig,
  upstreamModel,
} from '../../src/gateway-config';
import { SIMULATOR_MODELS } from '../../src/simulator/catalog';

/** The issue's minimal form, verbatim. */
const ISSUE_YAML = `channels:
  - name: main                      # unique
    type: openai                    # openai: any OpenAI-compatible upstream (chat, embeddings, images)
    base_url: http://127.0.0.1:9000/v1
    key: \${UPSTREAM_KEY}            # sent upstream as Authorization: Bearer <key>
    models: [gpt-4o-mini, text-embedding-3-small, dall-e-3]
  - name: claude
    type: anthropic                 # native messages API: POST {base_url}/messages, x-api-key, anthropic-version
    base_url: http://127.0.0.1:9001/v1
    key: \${ANTHROPIC_KEY}
    models: [claude-sonnet-4]
    priority: 10                    # optional, default 0: higher is tried first
    weight: 1                       # optional, default 1: share within one priority
    groups: [default]               # optional, default [default]
    model_mapping: {}               # optional: our model id -> the upstream's model id
models:                             # prices in USD: per 1M tokens, or per unit (one image)
  gpt-4o-mini: {input_per_1m: 0.15, output_per_1m: 0.60}
  claude-sonnet-4: {input_per_1m: 3, output_per_1m: 15}
  text-embedding-3-small: {input_per_1m: 0.02}
  dall-e-3: {per_unit: 0.04}
  o3-mini: {input_per_1m: 1.1, output_per_1m: 4.4, reasoning: true}
groups:                             # optional price multipliers by key group
  vip: {multiplier: 0.5}
`;

const UPSTREAM_KEY = 'sk-upstream-7f3a9c1e5b2d8046';
const ANTHROPIC_KEY = 'sk-ant-api03-Zq8xLw2Pv9';
const ENV = { UPSTREAM_KEY, ANTHROPIC_KEY };

const ISSUE_JSON = {
  channels: [
    {
      name: 'main',
      type: 'openai',
      base_url: 'http://127.0.0.1:9000/v1',
      key: '${UPSTREAM_KEY}',
      models: ['gpt-4o-mini', 'text-embedding-3-small', 'dall-e-3'],
    },
    {
      name: 'claude',
      type: 'anthropic',
      base_url: 'http://127.0.0.1:9001/v1',
      key: '${ANTHROPIC_KEY}',
      models: ['claude-sonnet-4'],
      priority: 10,
      weight: 1,
      groups: ['default'],
      model_mapping: {},
    },
  ],
  models: {
    'gpt-4o-mini': { input_per_1m: 0.15, output_per_1m: 0.6 },
    'claude-sonnet-4': { input_per_1m: 3, output_per_1m: 15 },
    'text-embedding-3-small': { input_per_1m: 0.02 },
    'dall-e-3': { per_unit: 0.04 },
    'o3-mini': { input_per_1m: 1.1, output_per_1m: 4.4, reasoning: true },
  },
  groups: { vip: { multiplier: 0.5 } },
};

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-config-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayConfigError);
    return (err as GatewayConfigError).problems;
  }
  throw new Error('expected a GatewayConfigError');
}

function yamlProblems(text: string, env: NodeJS.ProcessEnv = ENV): string[] {
  return problemsOf(() => parseGatewayConfig(text, { source: 'test.yaml', env }));
}

describe('loading the issue’s minimal form', () => {
  const expected = {
    channels: [
      {
        name: 'main',
        type: 'openai',
        base_url: 'http://127.0.0.1:9000/v1',
        key: UPSTREAM_KEY,
        models: ['gpt-4o-mini', 'text-embedding-3-small', 'dall-e-3'],
        priority: 0,
        weight: 1,
        groups: ['default'],
        model_mapping: {},
        timeout_ms: 60000,
        responses_api: false,
        batch_api: false,
        headers: {},
      },
      {
        name: 'claude',
        type: 'anthropic',
        base_url: 'http://127.0.0.1:9001/v1',
        key: ANTHROPIC_KEY,
        models: ['claude-sonnet-4'],
        priority: 10,
        weight: 1,
        groups: ['default'],
        model_mapping: {},
        timeout_ms: 60000,
        responses_api: false,
        batch_api: false,
        headers: {},
      },
    ],
    models: {
      'gpt-4o-mini': { input_per_1m: decimal('0.15'), output_per_1m: decimal('0.6'), reasoning: false, thinking: false, kind: 'chat' },
      'claude-sonnet-4': { input_per_1m: decimal(3), output_per_1m: decimal(15), reasoning: false, thinking: false, kind: 'chat' },
      'text-embedding-3-small': { input_per_1m: decimal('0.02'), output_per_1m: decimal(0), reasoning: false, thinking: false, kind: 'embedding' },
      'dall-e-3': { per_unit: decimal('0.04'), reasoning: false, thinking: false, kind: 'image' },
      'o3-mini': { input_per_1m: decimal('1.1'), output_per_1m: decimal('4.4'), reasoning: true, thinking: true, kind: 'chat' },
    },
    groups: { vip: { multiplier: decimal('0.5'), rpm_limit: 0, tpm_limit: 0, max_concurrency: 0, period_quota: 0, quota_period: null } },
    warnings: ['models.o3-mini: priced, but no enabled channel serves it'],
  };

  it('loads the YAML exactly as written, with ${VAR} secrets from the environment', () => {
    const p = file('gateway.yaml', ISSUE_YAML);
    const config = loadGatewayConfig(p, ENV);
    expect(config).toEqual({ ...expected, source: p });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.channels[0])).toBe(true);
    expect(Object.isFrozen(config.models['gpt-4o-mini']?.input_per_1m)).toBe(true);
  });

  it('loads the same config from JSON', () => {
    const p = file('gateway.json', JSON.stringify(ISSUE_JSON, null, 2));
    expect(loadGatewayConfig(p, ENV)).toEqual({ ...expected, source: p });
  });

  it('bills with the loaded prices: 1000 + 500 tokens of gpt-4o-mini = 225 credits, vip pays half', () => {
    const config = loadGatewayConfig(file('bill.yaml', ISSUE_YAML), ENV);
    const price = modelPrice(config, 'gpt-4o-mini');
    expect(costOfTokens(price, { promptTokens: 1000, completionTokens: 500 }, groupMultiplier(config, 'default'))).toBe(225);
    expect(costOfTokens(price, { promptTokens: 1000, completionTokens: 500 }, groupMultiplier(config, ''))).toBe(225);
    expect(costOfTokens(price, { promptTokens: 2000, completionTokens: 1000 }, groupMultiplier(config, 'vip'))).toBe(225);
    expect(costOfUnits(modelPrice(config, 'dall-e-3'), 1)).toBe(20_000);
    expect(() => modelPrice(config, 'gpt-4o')).toThrow(ModelNotPricedError);
    expect(() => modelPrice(config, 'gpt-4o')).toThrow("The model 'gpt-4o' has no price");
    expect(() => modelPrice(config, 'toString')).toThrow(ModelNotPricedError);
    expect(channelsServing(config, 'claude-sonnet-4', '').map((c) => c.name)).toEqual(['claude']);
    expect(channelsServing(config, 'claude-sonnet-4', 'vip')).toEqual([]);
  });
});

describe('optional fields and normalization', () => {
  it('accepts the video channel types, per_second prices, kind, owned_by, timeout_ms, enabled and model_mapping', () => {
    const config = parseGatewayConfig(
      `channels:
  - {name: va, type: video-a, base_url: "https://video.example.com/api/", key: k, models: [video-3.1], timeout_ms: 120000}
  - {name: vb, type: video-b, base_url: "https://b.example.com", models: [vendorA-2.7-r2v]}
  - name: vc
    type: video-c
    base_url: https://c.example.com/v1
    models: [video3, video3-fast]
    model_mapping: {video3: upstream-video3, not-served: x}
  - {name: off, type: openai, base_url: "http://x.example", models: [gpt-4o], enabled: false, key: "\${NOT_NEEDED_BUT_SET}"}
models:
  video-3.1: {per_unit: 3.2}
  vendorA-2.7-r2v: {per_second: 0.15, owned_by: vendorA}
  video3: {per_unit: "1"}
  video3-fast: {per_unit: 0.5, kind: video}
  gpt-4o: {input_per_1m: "2.50", output_per_1m: 10, kind: chat}
`,
      { source: 'video.yaml', env: { NOT_NEEDED_BUT_SET: 'x' } },
    );
    expect(config.channels.map((c) => c.name)).toEqual(['va', 'vb', 'vc']);
    expect(config.channels[0]).toMatchObject({ base_url: 'https://video.example.com/api', key: 'k', timeout_ms: 120000 });
    expect(config.channels[1]).toMatchObject({ key: '', timeout_ms: 60000, groups: ['default'] });
    expect(config.channels[2]?.model_mapping).toEqual({ video3: 'upstream-video3' });
    expect(upstreamModel(config.channels[2]!, 'video3')).toBe('upstream-video3');
    expect(upstreamModel(config.channels[2]!, 'video3-fast')).toBe('video3-fast');
    expect(config.models['video-3.1']).toEqual({ per_unit: decimal('3.2'), reasoning: false, thinking: false, kind: 'video' });
    expect(config.models['vendorA-2.7-r2v']).toEqual({ per_second: decimal('0.15'), reasoning: false, thinking: false, kind: 'video', owned_by: 'vendorA' });
    expect(config.models['gpt-4o']?.input_per_1m).toEqual(decimal('2.5'));
    expect(config.warnings).toEqual([
      'models.gpt-4o: priced, but no enabled channel serves it',
      'channels[2].model_mapping.not-served: not one of this channel\'s models (ignored)',
    ]);
  });

  it('warns, without failing, about a served model that has no price', () => {
    const config = parseGatewayConfig(
      `channels:
  - {name: a, type: openai, base_url: "http://a.example/v1", models: [gpt-4o, gpt-4.1]}
  - {name: b, type: openai, base_url: "http://b.example/v1", models: [gpt-4.1]}
models:
  gpt-4o: {input_per_1m: 2.5, output_per_1m: 10}
`,
      { source: 'unpriced.yaml', env: {} },
    );
    expect(config.warnings).toEqual([
      'models["gpt-4.1"]: not priced, but served by channel a, b; requests for it are refused (400) until it has a price',
    ]);
    expect(() => modelPrice(config, 'gpt-4.1')).toThrow(ModelNotPricedError);
  });
});

describe('validation reports every problem at once', () => {
  it('lists each problem as path: message', () => {
    const problems = yamlProblems(`channels:
  - name: main
    type: openia
    base_url: ftp://127.0.0.1/v1
    key: \${UPSTREAM_KEY}
    models: []
    priority: 1.5
    weight: 0
    groups: [""]
    model_mapping: {a: 1}
    timeout_ms: -5
    colour: blue
  - name: main
    type: anthropic
    base_url: not a url
    models: [x, x]
models:
  a: {input_per_1m: -1, output_per_1m: .inf}
  b: {per_unit: 0.04, input_per_1m: 1}
  c: {output_per_1m: 1}
  d: {}
  e: {per_unit: abc}
  f: {per_second: 1, kind: image}
  g: 0.15
groups:
  vip: {rpm_limit: -1}
  gold: {multiplier: -2}
extra: true
`);
    expect(problems).toEqual([
      'channels[0].type: must be one of openai, anthropic, video-a, video-b, video-c, openai-video, cohere, jina, gemini, azure, vertex, bedrock',
      'channels[0].base_url: must be an http:// or https:// URL',
      'channels[0].models: must list at least one model',
      'channels[0].priority: must be a whole number',
      'channels[0].weight: must be between 1 and 1000000',
      'channels[0].groups[0]: must not be empty',
      'channels[0].model_mapping.a: must be a string',
      'channels[0].timeout_ms: must be between 100 and 3600000',
      'channels[0].colour: unknown field',
      'channels[1].base_url: must be an http:// or https:// URL',
      'models.a.input_per_1m: must not be negative',
      'models.a.output_per_1m: must be a finite decimal number, for example 0.15',
      'models.e.per_unit: must be a finite decimal number, for example 0.15',
      'models.g: must be a mapping of prices, for example {input_per_1m: 0.15, output_per_1m: 0.6}',
      'groups.vip.rpm_limit: must be 0 (no limit) or more',
      'groups.gold.multiplier: must not be negative',
      'extra: unknown field',
      'channels[1].name: duplicate: channels[0] has the same name',
      'channels[1].models[1]: duplicate of models[0]',
      'models.b: token prices (input_per_1m, output_per_1m), per_unit, per_second and the quantity prices are exclusive: give one kind (token prices may go beside one quantity price)',
      'models.c.input_per_1m: is required for a token-priced model',
      'models.d: needs a price: input_per_1m (and output_per_1m) per 1M tokens, per_unit, per_second, input_characters_per_1m, per_minute or per_search_unit',
      'models.f.kind: kind image needs per_unit',
    ]);
  });

  it('reports a missing document, a non-mapping root, and missing channels', () => {
    expect(yamlProblems('')).toEqual(['(root): must be a mapping with channels and models']);
    expect(yamlProblems('- a\n- b\n')).toEqual(['(root): must be a mapping with channels and models']);
    expect(yamlProblems('models: {}\n')).toEqual(['channels: must be a list of channels']);
    expect(yamlProblems('channels: []\n')).toEqual(['channels: must list at least one channel']);
    expect(yamlProblems('channels: [{}]\n')).toEqual([
      'channels[0].name: must be a string',
      'channels[0].type: must be one of openai, anthropic, video-a, video-b, video-c, openai-video, cohere, jina, gemini, azure, vertex, bedrock',
      'channels[0].base_url: must be an http:// or https:// URL',
      'channels[0].models: must be a list of model ids',
    ]);
  });

  it('reports YAML and JSON syntax errors with a position and without quoting the file', () => {
    const yamlSecret = 'sk-literal-in-broken-yaml-123';
    const problems = yamlProblems(`channels:\n  - name: a\n    key: "${yamlSecret}\\q"\n   bad: [\n`);
    expect(problems.length).toBeGreaterThan(0);
    for (const p of problems) {
      expect(p).toMatch(/^test\.yaml: line \d+, column \d+: invalid YAML: /);
      expect(p).not.toContain(yamlSecret);
    }
    expect(yamlProblems('a: 1\na: 2\n')).toEqual(['test.yaml: line 2, column 1: invalid YAML: duplicate key']);

    const jsonSecret = 'sk-literal-in-broken-json-456';
    const p = file('broken.json', `{"channels": [{"key": ${jsonSecret}}]}`);
    const jsonProblems = problemsOf(() => loadGatewayConfig(p, {}));
    expect(jsonProblems).toHaveLength(1);
    expect(jsonProblems[0]).toMatch(/broken\.json: not valid JSON/);
    expect(jsonProblems[0]).not.toContain(jsonSecret);
  });

  it('reports an unreadable file', () => {
    const missing = path.join(dir, 'nope.yaml');
    expect(problemsOf(() => loadGatewayConfig(missing, {}))).toEqual([`${missing}: no such file`]);
    expect(problemsOf(() => loadGatewayConfig(dir, {}))).toEqual([`${dir}: is a directory`]);
  });
});

describe('secrets', () => {
  it('names a missing variable, never a value, and reports it with the other problems', () => {
    const problems = yamlProblems(ISSUE_YAML.replace('base_url: http://127.0.0.1:9000/v1', 'base_url: nope'), {
      UPSTREAM_KEY,
    });
    expect(problems).toEqual([
      'channels[1].key: environment variable ANTHROPIC_KEY is not set',
      'channels[0].base_url: must be an http:// or https:// URL',
    ]);
    expect(problems.join('\n')).not.toContain(UPSTREAM_KEY);
  });

  it('treats an empty variable as unset, and reports a malformed reference', () => {
    expect(yamlProblems(ISSUE_YAML, { UPSTREAM_KEY: '', ANTHROPIC_KEY })).toEqual([
      'channels[0].key: environment variable UPSTREAM_KEY is not set',
    ]);
    expect(
      yamlProblems(ISSUE_YAML.replace('${ANTHROPIC_KEY}', '"${ANTHROPIC KEY}"').replace('${UPSTREAM_KEY}', '"${UPSTREAM_KEY"')),
    ).toEqual([
      'channels[0].key: has a malformed ${...} reference: write ${NAME} with NAME made of letters, digits and _, or $${ for a literal ${',
      'channels[1].key: has a malformed ${...} reference: write ${NAME} with NAME made of letters, digits and _, or $${ for a literal ${',
    ]);
  });

  it('interpolates within strings, and $${ escapes', () => {
    expect(interpolateString('Bearer ${A}-${B_2}', { A: 'x', B_2: 'y' })).toEqual({ value: 'Bearer x-y', problems: [], substituted: ['x', 'y'] });
    expect(interpolateString('$${A} costs $5 {not} $', { A: 'x' }).value).toBe('${A} costs $5 {not} $');
    expect(interpolateString('$$${A}', { A: 'x' }).value).toBe('$${A}');
    const config = parseGatewayConfig(
      `channels:\n  - {name: a, type: openai, base_url: "http://\${HOST}:9000/v1", key: "pre-$\${LITERAL}", models: [m]}\nmodels:\n  m: {input_per_1m: "\${PRICE}"}\n`,
      { source: 'x.yaml', env: { HOST: 'upstream.internal', PRICE: '0.35' } },
    );
    expect(config.channels[0]).toMatchObject({ base_url: 'http://upstream.internal:9000/v1', key: 'pre-${LITERAL}' });
    expect(config.models.m?.input_per_1m).toEqual(decimal('0.35'));
  });

  it('takes channel headers: values with ${VAR}, names checked, framing headers refused, values never in a problem', () => {
    const config = parseGatewayConfig(
      `channels:\n  - {name: a, type: video-b, base_url: "http://a.example", key: k, models: [m], headers: {X-Async-Mode: "true", X-Tenant-Token: "\${TENANT}"}}\n`,
      { source: 'h.yaml', env: { TENANT: 'tenant-secret-77' } },
    );
    expect(config.channels[0].headers).toEqual({ 'X-Async-Mode': 'true', 'X-Tenant-Token': 'tenant-secret-77' });
    const problems = yamlProblems(
      `channels:\n  - {name: a, type: openai, base_url: "http://a.example", key: k, models: [m], headers: {"bad name": x, Host: y, Content-Length: "1", X-Ok: "\${TENANT}\\n"}}\n`,
      { ...ENV, TENANT: 'tenant-secret-77' },
    );
    expect(problems).toEqual([
      'channels[0].headers.X-Ok: must not contain line breaks',
      'channels[0].headers["bad name"]: must be an HTTP header name',
      'channels[0].headers.Host: is set by the gateway itself',
      'channels[0].headers.Content-Length: is set by the gateway itself',
    ]);
    expect(problems.join('\n')).not.toContain('tenant-secret-77');
  });

  it('never echoes a key or an interpolated value in a problem or a warning', () => {
    const literalKey = 'sk-literal-key-0a1b2c3d4e';
    const interpolatedModel = 'model-from-env-9z8y7x';
    const badUrl = 'secret-host-value-qq';
    const text = `channels:
  - name: a
    type: openai
    base_url: "\${BAD_URL}"
    key: ${literalKey}
    models: ["\${MODEL}", "\${MODEL}"]
    weight: "\${UPSTREAM_KEY}"
    priority: "\${ANTHROPIC_KEY}"
  - name: b
    type: anthropic
    base_url: http://b.example/v1
    key: {nested: "\${UPSTREAM_KEY}"}
    models: [claude]
models:
  claude: {input_per_1m: "\${UPSTREAM_KEY}", output_per_1m: "${literalKey}"}
`;
    const env = { ...ENV, BAD_URL: badUrl, MODEL: interpolatedModel };
    const problems = yamlProblems(text, env);
    expect(problems).toEqual([
      'channels[0].base_url: must be an http:// or https:// URL',
      'channels[0].priority: must be a number',
      'channels[0].weight: must be a number',
      'channels[1].key: must be a string',
      'models.claude.input_per_1m: must be a finite decimal number, for example 0.15',
      'models.claude.output_per_1m: must be a finite decimal number, for example 0.15',
      'channels[0].models[1]: duplicate of models[0]',
    ]);
    const all = problems.join('\n');
    for (const secret of [literalKey, interpolatedModel, badUrl, UPSTREAM_KEY, ANTHROPIC_KEY]) expect(all).not.toContain(secret);

    // A warning that would name an interpolated model id shows it redacted.
    const ok = parseGatewayConfig(
      `channels:\n  - {name: a, type: openai, base_url: "http://a.example", key: k, models: ["\${MODEL}"]}\n`,
      { source: 'w.yaml', env },
    );
    expect(ok.warnings).toEqual([
      'models.<redacted>: not priced, but served by channel a; requests for it are refused (400) until it has a price',
    ]);
    // The error's message (what a crash prints) carries the same lines.
    try {
      parseGatewayConfig(text, { source: 'm.yaml', env });
    } catch (err) {
      expect((err as Error).message).toContain('channels[0].base_url: must be an http:// or https:// URL');
      for (const secret of [literalKey, interpolatedModel, badUrl, UPSTREAM_KEY, ANTHROPIC_KEY]) {
        expect((err as Error).message).not.toContain(secret);
      }
    }
  });
});

describe('built-in config', () => {
  it('serves every simulator model with a price: chat and Anthropic channels at /v1, the video families at the simulator root', () => {
    const config = builtInGatewayConfig('http://127.0.0.1:4010/', SIMULATOR_MODELS);
    expect(config.source).toBe('built-in');
    expect(config.warnings).toEqual([]);
    expect(config.channels.map((c) => [c.name, c.type, c.base_url])).toEqual([
      ['simulator', 'openai', 'http://127.0.0.1:4010/v1'],
      ['simulator-anthropic', 'anthropic', 'http://127.0.0.1:4010/v1'],
      ['simulator-gemini', 'gemini', 'http://127.0.0.1:4010'],
      ['simulator-cohere', 'cohere', 'http://127.0.0.1:4010'],
      ['simulator-jina', 'jina', 'http://127.0.0.1:4010/v1'],
      ['simulator-video-a', 'video-a', 'http://127.0.0.1:4010'],
      ['simulator-video-b', 'video-b', 'http://127.0.0.1:4010'],
      ['simulator-video-c', 'video-c', 'http://127.0.0.1:4010'],
    ]);
    const served = config.channels.flatMap((c) => c.models).sort();
    expect(served).toEqual(SIMULATOR_MODELS.map((m) => m.id).sort());
    expect(() => (config.channels[1]?.models as string[]).push('x')).toThrow(TypeError); // frozen snapshot
    expect([...(config.channels[1]?.models ?? [])].sort()).toEqual(['claude-3-5-haiku', 'claude-opus-4', 'claude-sonnet-4']);
    for (const m of SIMULATOR_MODELS) {
      const price = modelPrice(config, m.id);
      expect({ id: m.id, kind: price.kind, owned_by: price.owned_by }).toEqual({ id: m.id, kind: m.kind, owned_by: m.owned_by });
      if (m.kind === 'image' || m.kind === 'video') expect(price.per_unit).toBeDefined();
      else expect(price.input_per_1m ?? price.input_characters_per_1m ?? price.per_minute ?? price.per_search_unit).toBeDefined();
    }
    expect(Object.keys(SIMULATOR_PRICES).sort()).toEqual(SIMULATOR_MODELS.map((m) => m.id).sort());
    expect(costOfTokens(modelPrice(config, 'gpt-4o-mini'), { promptTokens: 1000, completionTokens: 500 })).toBe(225);
    expect(modelPrice(config, 'o3-mini').reasoning).toBe(true);
  });

  it('reloads to itself in a fixed store (what serves without GATEWAY_CONFIG)', () => {
    const store = ConfigStore.fixed(builtInGatewayConfig('http://127.0.0.1:4010', SIMULATOR_MODELS));
    expect(store.reload()).toEqual({ ok: true, config: store.current() });
  });
});

describe('ConfigStore', () => {
  const twoModels = ISSUE_YAML.replace('models: [claude-sonnet-4]', 'models: [claude-sonnet-4, o3-mini]');

  it('swaps the snapshot on reload; a request keeps the snapshot it took', () => {
    const p = file('store.yaml', ISSUE_YAML);
    const store = ConfigStore.fromFile(p, ENV);
    const inFlight = store.current();
    const seen: string[][] = [];
    const off = store.onChange((c) => seen.push(c.channels[1]!.models));

    writeFileSync(p, twoModels);
    const result = store.reload();
    expect(result.ok).toBe(true);
    expect(store.current()).not.toBe(inFlight);
    expect(store.current().channels[1]?.models).toEqual(['claude-sonnet-4', 'o3-mini']);
    expect(seen).toEqual([['claude-sonnet-4', 'o3-mini']]);
    // The request that started before the reload still routes and bills with its own, unchanged snapshot.
    expect(inFlight.channels[1]?.models).toEqual(['claude-sonnet-4']);
    expect(costOfTokens(modelPrice(inFlight, 'gpt-4o-mini'), { promptTokens: 1000, completionTokens: 500 })).toBe(225);
    off();
  });

  it('keeps the old snapshot when the new file is bad, and returns every problem', () => {
    const p = file('bad-reload.yaml', ISSUE_YAML);
    const store = ConfigStore.fromFile(p, ENV);
    const before = store.current();
    writeFileSync(p, ISSUE_YAML.replace('type: openai', 'type: nope').replace('per_unit: 0.04', 'per_unit: -1'));
    expect(store.reload()).toEqual({
      ok: false,
      problems: [
        'channels[0].type: must be one of openai, anthropic, video-a, video-b, video-c, openai-video, cohere, jina, gemini, azure, vertex, bedrock',
        'models.dall-e-3.per_unit: must not be negative',
      ],
    });
    expect(store.current()).toBe(before);
    rmSync(p);
    expect(store.reload()).toEqual({ ok: false, problems: [`${p}: no such file`] });
    expect(store.current()).toBe(before);
  });

  it('throws every problem at start-up when the first load fails', () => {
    const p = file('bad-start.yaml', ISSUE_YAML);
    expect(problemsOf(() => ConfigStore.fromFile(p, {}))).toEqual([
      'channels[0].key: environment variable UPSTREAM_KEY is not set',
      'channels[1].key: environment variable ANTHROPIC_KEY is not set',
    ]);
  });

  it('reloads on SIGHUP, logs the outcome without secrets, and stops after unsubscribe', async () => {
    // Jest gives each test file a copy of `process` whose listeners never see a real signal; this is the real one.
    const realProcess = vm.runInThisContext('process') as NodeJS.Process;
    const sighupListeners = realProcess.listenerCount('SIGHUP');
    const p = file('sighup.yaml', ISSUE_YAML);
    const store = ConfigStore.fromFile(p, ENV);
    const lines: string[] = [];
    const log = {
      info: (m: string) => lines.push(`info ${m}`),
      warn: (m: string) => lines.push(`warn ${m}`),
      error: (m: string) => lines.push(`error ${m}`),
    };
    const nextSignal = () => new Promise<void>((resolve) => realProcess.once('SIGHUP', () => setImmediate(resolve)));
    const off = store.watchSighup(log, realProcess);
    try {
      writeFileSync(p, twoModels);
      let got = nextSignal();
      realProcess.kill(realProcess.pid, 'SIGHUP');
      await got;
      expect(store.current().channels[1]?.models).toEqual(['claude-sonnet-4', 'o3-mini']);
      expect(lines).toEqual([`info gateway config reloaded from ${p}: 2 channels, 5 priced models`]);

      const good = store.current();
      writeFileSync(p, ISSUE_YAML.replace('${UPSTREAM_KEY}', UPSTREAM_KEY).replace('weight: 1', 'weight: 0'));
      got = nextSignal();
      realProcess.kill(realProcess.pid, 'SIGHUP');
      await got;
      expect(store.current()).toBe(good);
      expect(lines[1]).toBe(
        'error gateway config reload failed, keeping the previous config:\n  - channels[1].weight: must be between 1 and 1000000',
      );
      expect(lines.join('\n')).not.toContain(UPSTREAM_KEY);
    } finally {
      off();
    }
    expect(realProcess.listenerCount('SIGHUP')).toBe(sighupListeners);
  });
});
