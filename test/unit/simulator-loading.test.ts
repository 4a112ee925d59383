import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * The upstream simulator is code for a gateway without its own channels: a process given GATEWAY_CONFIG never loads
 * it. Its module is replaced here by one that records being loaded.
 */
const loaded = { count: 0 };
jest.mock('../../src/simulator/index', () => {
  loaded.count++;
  return {
    SIMULATOR_MODELS: jest.requireActual('../../src/simulator/catalog').SIMULATOR_MODELS,
    startSimulator: async () => ({ url: 'http://127.0.0.1:9', close: async () => {} }),
  };
});

import { openGatewayConfig } from '../../src/runtime/services';

describe('loading the upstream simulator', () => {
  it('is not loaded when GATEWAY_CONFIG names a file, and is loaded (once) when none is given', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'gateway-config-'));
    const file = path.join(dir, 'gateway.yaml');
    writeFileSync(file, 'channels:\n  - {name: main, type: openai, base_url: "https://api.example.com/v1", key: k, models: [m]}\nmodels:\n  m: {input_per_1m: 1, output_per_1m: 2}\n');
    const own = await openGatewayConfig(file, { env: {} });
    expect(own.simulator).toBeNull();
    expect(loaded.count).toBe(0);
    await own.close();

    const builtIn = await openGatewayConfig(undefined);
    expect(loaded.count).toBe(1);
    expect(builtIn.store.current().channels.flatMap((c) => c.models)).toContain('gpt-4o-mini');
    expect(builtIn.description).toBe('built-in upstream simulator at http://127.0.0.1:9');
    await builtIn.close();
  });
});
