import { ConfigError, loadConfig, requireSettings } from '../../src/config';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('gives the embedded defaults for an empty environment, and treats empty strings as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '' })).toEqual({
      PORT: 3000,
      HOST: '127.0.0.1',
      GATEWAY_VIDEO_DEADLINE_SECONDS: 1200,
      VIDEO_RETENTION_DAYS: 7,
      VIDEO_MAX_RESULT_BYTES: 2 * 1024 ** 3,
      BATCH_CONCURRENCY: 64,
      BATCH_FILE_RETENTION_DAYS: 30,
      GATEWAY_PROCESSES: 'auto',
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: 'gateway',
      DATA_DIR: './data',
      LOG_LEVEL: 'info',
      GATEWAY_BODY_LIMIT_BYTES: 10 * 1024 * 1024,
      GATEWAY_JSON_MAX_DEPTH: 64,
      GATEWAY_JSON_MAX_ARRAY_LENGTH: 10_000,
      GATEWAY_MULTIPART_LIMIT_BYTES: 25 * 1024 * 1024,
      GATEWAY_REQUEST_TIMEOUT_SECONDS: 60,
      RESPONSES_WEBSOCKET: 'on',
      GATEWAY_MAX_CONNECTIONS: 10_000,
      TRUST_PROXY: [],
      OUTBOUND_ALLOWLIST: [],
      OTEL_SERVICE_NAME: 'ai-gateway',
    });
  });

  it('takes TRUST_PROXY as a list of addresses and CIDR ranges, and nothing else', () => {
    expect(loadConfig({ TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,fd00::/8' }).TRUST_PROXY).toEqual(['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);
    for (const bad of ['proxy.internal', '10.0.0.0/33', '1.2.3.4/8/9']) expect(() => loadConfig({ TRUST_PROXY: bad })).toThrow(/TRUST_PROXY/);
  });

  it('takes OUTBOUND_ALLOWLIST as host names, addresses and CIDR ranges', () => {
    expect(loadConfig({ OUTBOUND_ALLOWLIST: 'Hooks.Internal, 10.0.0.0/8,fd00::1' }).OUTBOUND_ALLOWLIST).toEqual(['hooks.internal', '10.0.0.0/8', 'fd00::1']);
    for (const bad of ['http://hooks.internal', '10.0.0.0/33', 'a b', '*.internal']) expect(() => loadConfig({ OUTBOUND_ALLOWLIST: bad })).toThrow(/OUTBOUND_ALLOWLIST/);
  });

  it('takes the video store as s3://bucket/prefix or file:///dir, a retention in days and a size limit', () => {
    expect(loadConfig({ VIDEO_STORE_URL: 's3://videos/prod', VIDEO_RETENTION_DAYS: '30', VIDEO_MAX_RESULT_BYTES: '1048576' })).toMatchObject({
      VIDEO_STORE_URL: 's3://videos/prod',
      VIDEO_RETENTION_DAYS: 30,
      VIDEO_MAX_RESULT_BYTES: 1048576,
    });
    expect(loadConfig({ VIDEO_STORE_URL: 'file:///srv/videos' }).VIDEO_STORE_URL).toBe('file:///srv/videos');
    expect(problems({ VIDEO_STORE_URL: 'https://videos.example.com', VIDEO_RETENTION_DAYS: '0' })).toEqual([
      expect.stringMatching(/^VIDEO_STORE_URL: must be s3:\/\/bucket\/prefix or file:\/\/\/absolute\/dir/),
      expect.stringMatching(/^VIDEO_RETENTION_DAYS: must be more than 0 days/),
    ]);
  });

  it('takes an OTLP endpoint only as an http(s) URL, and a worker metrics port', () => {
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', WORKER_METRICS_PORT: '9464' })).toMatchObject({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      WORKER_METRICS_PORT: 9464,
    });
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT: must be an http/);
    expect(() => loadConfig({ WORKER_METRICS_PORT: '70000' })).toThrow(/WORKER_METRICS_PORT/);
  });

  it('takes a worker nice value from 0 to 19 only', () => {
    expect(loadConfig({ WORKER_NICE: '19' }).WORKER_NICE).toBe(19);
    expect(loadConfig({}).WORKER_NICE).toBeUndefined();
    for (const bad of ['-5', '20', '3.5', 'low']) expect(() => loadConfig({ WORKER_NICE: bad })).toThrow(/WORKER_NICE/);
  });

  it('accepts a full production environment', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgresql://gateway:pw@db:5432/gateway',
      TEMPORAL_ADDRESS: 'temporal:7233',
      TEMPORAL_NAMESPACE: 'prod',
      TEMPORAL_TASK_QUEUE: 'gw',
      GATEWAY_SECRET: 'x'.repeat(32),
      DATA_DIR: '/var/lib/gateway',
      LOG_LEVEL: 'debug',
      GATEWAY_BOOTSTRAP_TOKEN: 'bootstrap_token-0123',
      GATEWAY_BODY_LIMIT_BYTES: '2097152',
    });
    expect(config).toMatchObject({ PORT: 8080, TEMPORAL_ADDRESS: 'temporal:7233', LOG_LEVEL: 'debug', GATEWAY_BODY_LIMIT_BYTES: 2097152 });
  });

  it.each([
    ['PORT', 'abc', 'PORT: must be a number'],
    ['PORT', '80.5', 'PORT: must be a whole number'],
    ['PORT', '70000', 'PORT: must be between 0 and 65535'],
    ['HOST', 'http://x', 'HOST: must be a host name or IP address, for example 127.0.0.1 or 0.0.0.0'],
    ['DATABASE_URL', 'mysql://db/x', 'DATABASE_URL: must be a postgres:// or postgresql:// URL'],
    ['DATABASE_URL', 'postgres://[bad', 'DATABASE_URL: is not a valid URL'],
    ['TEMPORAL_ADDRESS', 'http://temporal:7233', 'TEMPORAL_ADDRESS: must be host:port, for example 127.0.0.1:7233'],
    ['TEMPORAL_ADDRESS', 'temporal', 'TEMPORAL_ADDRESS: must be host:port, for example 127.0.0.1:7233'],
    ['GATEWAY_SECRET', 'short', 'GATEWAY_SECRET: must be at least 32 characters (it derives the key-encryption key)'],
    ['LOG_LEVEL', 'loud', 'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent'],
    ['GATEWAY_BOOTSTRAP_TOKEN', 'short', 'GATEWAY_BOOTSTRAP_TOKEN: must be at least 16 characters'],
    ['GATEWAY_BOOTSTRAP_TOKEN', 'has spaces in it, sadly', 'GATEWAY_BOOTSTRAP_TOKEN: may contain only letters, digits, _ and -'],
    ['GATEWAY_BODY_LIMIT_BYTES', '10MB', 'GATEWAY_BODY_LIMIT_BYTES: must be a number of bytes'],
    ['GATEWAY_BODY_LIMIT_BYTES', '100', 'GATEWAY_BODY_LIMIT_BYTES: must be at least 1024 bytes'],
  ])('rejects %s=%s with "%s"', (name, value, message) => {
    expect(problems({ [name]: value })).toEqual([message]);
  });

  it('reports every bad variable at once, in a message that lists each on its own line', () => {
    const env = { PORT: 'x', LOG_LEVEL: 'loud', GATEWAY_SECRET: 'short' };
    expect(problems(env)).toHaveLength(3);
    expect(() => loadConfig(env)).toThrow(
      /^Invalid configuration:\n {2}- PORT: must be a number\n {2}- GATEWAY_SECRET: .+\n {2}- LOG_LEVEL: .+$/,
    );
  });

  it('never echoes a bad value back (it may be a secret)', () => {
    const err = (() => {
      try {
        loadConfig({ GATEWAY_SECRET: 'hunter2-secret' });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).not.toContain('hunter2-secret');
  });
});

describe('requireSettings', () => {
  it('names every missing variable and why', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://db/x' });
    expect(() => requireSettings(config, ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'GATEWAY_SECRET'], 'by `gateway api`')).toThrow(
      new ConfigError(['TEMPORAL_ADDRESS: required by `gateway api`', 'GATEWAY_SECRET: required by `gateway api`']),
    );
    expect(() => requireSettings(config, ['DATABASE_URL'], 'here')).not.toThrow();
  });
});
