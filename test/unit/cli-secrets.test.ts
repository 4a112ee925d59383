import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { readSecret, SecretIo, SecretSpec } from '../../src/cli/secrets';

const TOKEN: SecretSpec = {
  what: 'system token',
  argOption: '--token',
  fileOption: '--token-file',
  envVar: 'GATEWAY_SYSTEM_TOKEN',
  prompt: 'System token: ',
};

/** Fake standard input (a pipe, or a terminal with raw mode) and standard error, capturing what is written. */
function fakeIo(opts: { tty?: boolean; env?: NodeJS.ProcessEnv; input?: string; piped?: boolean } = {}) {
  const stdin = new PassThrough() as PassThrough & { isTTY?: boolean; setRawMode?: (m: boolean) => unknown };
  const raw: boolean[] = [];
  if (opts.tty) {
    stdin.isTTY = true;
    stdin.setRawMode = (m: boolean) => raw.push(m);
  }
  const stderr = new PassThrough();
  let written = '';
  stderr.on('data', (c) => (written += c.toString()));
  if (opts.input !== undefined) stdin.end(opts.input);
  const io: SecretIo = { stdin, stdinPiped: opts.piped ?? opts.input !== undefined, stderr, env: opts.env ?? {} };
  return { io, stdin, raw, stderr: () => written };
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-secrets-'));
function secretFile(name: string, text: string, mode = 0o600): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  chmodSync(file, mode);
  return file;
}

describe('readSecret: where the CLI takes a system token or password from', () => {
  it('the environment variable, silently', async () => {
    const f = fakeIo({ env: { GATEWAY_SYSTEM_TOKEN: 'from-env' } });
    await expect(readSecret(TOKEN, {}, f.io)).resolves.toBe('from-env');
    expect(f.stderr()).toBe('');
  });

  it('a file option: its first line, without the newline; it wins over the environment', async () => {
    const f = fakeIo({ env: { GATEWAY_SYSTEM_TOKEN: 'from-env' } });
    await expect(readSecret(TOKEN, { file: secretFile('t', 'from-file\n') }, f.io)).resolves.toBe('from-file');
    expect(f.stderr()).toBe('');
  });

  it('a file option warns when other users can read the file', async () => {
    const f = fakeIo();
    const file = secretFile('open', 'from-file\r\n', 0o644);
    await expect(readSecret(TOKEN, { file }, f.io)).resolves.toBe('from-file');
    expect(f.stderr()).toBe(`warning: ${file} can be read by other users; chmod 600 it\n`);
  });

  it('a missing or empty file fails, naming the option', async () => {
    await expect(readSecret(TOKEN, { file: path.join(dir, 'nope') }, fakeIo().io)).rejects.toThrow(/cannot read --token-file .*nope/);
    await expect(readSecret(TOKEN, { file: secretFile('empty', '\n') }, fakeIo().io)).rejects.toThrow(/system token from .*empty is empty/);
  });

  it('`--token-file -` reads standard input, even with the variable set', async () => {
    const f = fakeIo({ env: { GATEWAY_SYSTEM_TOKEN: 'from-env' }, input: 'from-stdin\n' });
    await expect(readSecret(TOKEN, { file: '-' }, f.io)).resolves.toBe('from-stdin');
  });

  it('piped standard input when nothing else is given', async () => {
    const f = fakeIo({ input: 'piped\nsecond line ignored\n' });
    await expect(readSecret(TOKEN, {}, f.io)).resolves.toBe('piped');
    expect(f.stderr()).toBe('');
  });

  it('nothing at all (empty piped standard input, no terminal) fails, naming every safe way', async () => {
    await expect(readSecret(TOKEN, {}, fakeIo({ input: '' }).io)).rejects.toThrow(
      'a system token is needed: set GATEWAY_SYSTEM_TOKEN, pass --token-file FILE (- for standard input), pipe it on '
        + 'standard input, or run on a terminal to be asked for it',
    );
  });

  it('standard input that is neither a pipe, a file nor a terminal (a socket left open) is not read unasked', async () => {
    const f = fakeIo({ piped: false });
    // Never ended: reading it would block forever.
    await expect(readSecret(TOKEN, {}, f.io)).rejects.toThrow('a system token is needed');
    f.stdin.end('late\n');
    await expect(readSecret(TOKEN, { file: '-' }, fakeIo({ piped: false, input: 'asked for\n' }).io)).resolves.toBe('asked for');
  });

  it('the argument itself still works, with a warning on stderr, and wins over everything else', async () => {
    const f = fakeIo({ env: { GATEWAY_SYSTEM_TOKEN: 'from-env' } });
    await expect(readSecret(TOKEN, { arg: 'from-arg', file: secretFile('t2', 'from-file') }, f.io)).resolves.toBe('from-arg');
    expect(f.stderr()).toBe(
      "warning: --token puts the system token in your shell history, the process list and npm's debug log; use "
        + 'GATEWAY_SYSTEM_TOKEN, --token-file FILE, standard input or the prompt instead\n',
    );
  });

  it('on a terminal: prompts on stderr in raw mode and never echoes what is typed', async () => {
    const f = fakeIo({ tty: true });
    const answer = readSecret(TOKEN, {}, f.io);
    await new Promise((r) => setImmediate(r));
    expect(f.stderr()).toBe('System token: ');
    f.stdin.write('hunter2-secret\r');
    await expect(answer).resolves.toBe('hunter2-secret');
    expect(f.stderr()).not.toContain('hunter2');
    expect(f.stderr()).toBe('System token: \n');
    expect(f.raw).toEqual([true, false]);
  });

  it('on a terminal, a new password is asked twice and must match; Ctrl-C gives up', async () => {
    const spec = { ...TOKEN, what: 'password', prompt: 'Password: ', confirm: true };
    const ok = fakeIo({ tty: true });
    const answer = readSecret(spec, {}, ok.io);
    await new Promise((r) => setImmediate(r));
    ok.stdin.write('pass-word-1\r');
    await new Promise((r) => setImmediate(r));
    ok.stdin.write('pass-word-1\r');
    await expect(answer).resolves.toBe('pass-word-1');
    expect(ok.stderr()).toBe('Password: \nRepeat password: \n');

    const differ = fakeIo({ tty: true });
    const mismatch = readSecret(spec, {}, differ.io);
    await new Promise((r) => setImmediate(r));
    differ.stdin.write('pass-word-1\r');
    await new Promise((r) => setImmediate(r));
    differ.stdin.write('pass-word-2\r');
    await expect(mismatch).rejects.toThrow('the two passwords differ');

    const cancelled = fakeIo({ tty: true });
    const gaveUp = readSecret(spec, {}, cancelled.io);
    await new Promise((r) => setImmediate(r));
    cancelled.stdin.write('\x03');
    await expect(gaveUp).rejects.toThrow('no password given');
  });
});
