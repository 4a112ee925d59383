import { Writable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { lazyRequestLogger } from '../../src/api/request-logger';

/** request.log is made on first use: nothing for a request that never logs, the request id on every line of one that does. */
describe('lazyRequestLogger', () => {
  function parentLogger() {
    const lines: Array<Record<string, unknown>> = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        cb();
      },
    });
    const parent = pino({ level: 'info', redact: { paths: ['key'], censor: '[redacted]' } }, stream);
    const child = jest.spyOn(parent, 'child');
    return { parent: parent as unknown as FastifyBaseLogger, lines, child };
  }
  const make = (parent: FastifyBaseLogger) => lazyRequestLogger.call(undefined as never, parent, { request_id: 'req_1' }, {}, undefined as never);

  it('makes no child until it logs', () => {
    const { parent, child } = parentLogger();
    const log = make(parent);
    expect(log.level).toBe('info');
    expect(child).not.toHaveBeenCalled();
  });

  it('logs through one child with the bindings, the parent\'s level and its redaction', async () => {
    const { parent, lines, child } = parentLogger();
    const log = make(parent);
    log.warn({ key: 'secret', channel: 'a' }, 'first');
    log.error('second');
    log.debug('not at info');
    await new Promise((r) => setImmediate(r));
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, request_id: 'req_1', key: '[redacted]', channel: 'a', msg: 'first' }),
      expect.objectContaining({ level: 50, request_id: 'req_1', msg: 'second' }),
    ]);
    log.level = 'debug';
    log.debug('now');
    await new Promise((r) => setImmediate(r));
    expect(lines[2]).toMatchObject({ level: 20, msg: 'now' });
    expect(parent.level).toBe('info');
  });
});
