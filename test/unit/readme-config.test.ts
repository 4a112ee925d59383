import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseGatewayConfig } from '../../src/gateway-config/load';

/** The GATEWAY_CONFIG example of docs/configuration.md is a working config: a reader copying it gets what it says. */
describe('docs/configuration.md: the channels-and-prices example', () => {
  const readme = readFileSync(path.resolve(__dirname, '../../docs/configuration.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Channels and prices (`GATEWAY_CONFIG`)'));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];

  it('is in docs/configuration.md', () => {
    expect(yaml).toBeDefined();
  });

  it('loads without problems or warnings, with ${VAR} secrets from the environment', () => {
    const config = parseGatewayConfig(yaml!, {
      source: 'docs/configuration.md',
      env: { OPENAI_API_KEY: 'sk-openai-secret', ANTHROPIC_API_KEY: 'sk-ant-secret' },
    });
    expect(config.warnings).toEqual([]);
    expect(config.channels.map((c) => [c.name, c.type, c.key])).toEqual([
      ['main', 'openai', 'sk-openai-secret'],
      ['claude', 'anthropic', 'sk-ant-secret'],
    ]);
    expect(Object.keys(config.models)).toEqual(expect.arrayContaining(['gpt-4o-mini', 'claude-sonnet-4', 'text-embedding-3-small', 'dall-e-3']));
  });

  it('names the missing variables when the environment lacks them', () => {
    expect(() => parseGatewayConfig(yaml!, { source: 'docs/configuration.md', env: {} })).toThrow(/OPENAI_API_KEY[\s\S]*ANTHROPIC_API_KEY|ANTHROPIC_API_KEY[\s\S]*OPENAI_API_KEY/);
  });
});
