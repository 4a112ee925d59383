import { readFileSync } from 'node:fs';
import path from 'node:path';
// `yaml` arrives through @fastify/swagger; it is only read here, to check the compose file's structure.
import { parse } from 'yaml';
import { loadConfig, requireSettings } from '../../src/config';

const ROOT = path.resolve(__dirname, '../..');

/** Compose's `${NAME:-default}` interpolation, with the environment empty: every default applies. */
const interpolate = (text: string) => text.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  ports?: string[];
}

describe('docker-compose.yml (structure only: no Docker engine runs in the tests)', () => {
  const raw = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
  const compose = parse(interpolate(raw), { merge: true }) as { services: Record<string, Service> };
  const services = compose.services;

  it('has PostgreSQL, Temporal on PostgreSQL, the Temporal UI, two api replicas and a worker', () => {
    expect(Object.keys(services).sort()).toEqual(['api', 'api-backup', 'postgres', 'temporal', 'temporal-ui', 'worker']);
    expect(services.temporal.environment).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgres' });
    expect(services.temporal.depends_on?.postgres.condition).toBe('service_healthy');
    expect(services['temporal-ui'].environment?.TEMPORAL_ADDRESS).toBe('temporal:7233');
  });

  it('runs the gateway image as api (twice) and worker, after PostgreSQL and Temporal are healthy', () => {
    for (const [name, role] of [['api', 'api'], ['api-backup', 'api'], ['worker', 'worker']] as const) {
      const s = services[name];
      expect(s.build).toBe('.');
      expect(s.command).toEqual(['node', 'dist/src/cli/main.js', role]);
      expect(s.depends_on).toEqual({ postgres: { condition: 'service_healthy' }, temporal: { condition: 'service_healthy' } });
    }
    expect(services.api.ports).toEqual(['3000:3000']);
    expect(services['api-backup'].ports).toEqual(['3001:3000']);
  });

  it('gives the gateway an environment that passes its own start-up validation', () => {
    const config = loadConfig(services.api.environment);
    expect(() =>
      requireSettings(config, ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'GATEWAY_SECRET'], 'by `gateway api`'),
    ).not.toThrow();
    expect(config).toMatchObject({ HOST: '0.0.0.0', PORT: 3000, TEMPORAL_ADDRESS: 'temporal:7233' });
    expect(new URL(config.DATABASE_URL!).hostname).toBe('postgres');
  });

  it('health-checks PostgreSQL, Temporal and each api replica (on /readyz)', () => {
    expect(services.postgres.healthcheck?.test.join(' ')).toContain('pg_isready');
    expect(services.temporal.healthcheck?.test.join(' ')).toContain('cluster health');
    for (const name of ['api', 'api-backup']) {
      expect(services[name].healthcheck?.test.join(' ')).toContain('http://127.0.0.1:3000/readyz');
    }
  });

  it('builds from a Dockerfile that starts the api with node itself, so SIGTERM reaches it', () => {
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^CMD \["node", "dist\/src\/cli\/main.js", "api"\]$/m);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
  });
});
