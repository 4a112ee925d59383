import { fstatSync, readFileSync, statSync } from 'node:fs';
import readline from 'node:readline';
import { Writable } from 'node:stream';

// Secrets (a system token, a password) never need to be typed on the command line, where they end up in the
// shell history, the process list and npm's debug log (~/.npm/_logs records the arguments of `npm run`).
// They are taken, first found first: the argument itself (still accepted, with a warning), a file option
// (`-` is standard input), an environment variable, standard input when it is a pipe or a file (`... | gateway`,
// `gateway ... < file`), and a prompt that does not echo when it is a terminal. Standard input that is neither
// (/dev/null under cron or systemd, the socket a parent process such as node's execFile leaves open) is never
// read unasked: it could block forever.

export interface SecretSpec {
  /** What it is, for messages: "system token", "password". */
  what: string;
  /** The option that takes the secret itself, e.g. `--token`. */
  argOption: string;
  /** The option that takes a file holding it, e.g. `--token-file`. */
  fileOption: string;
  /** The environment variable that may hold it. */
  envVar?: string;
  /** On a terminal: the prompt, and whether to ask twice (a new password). */
  prompt: string;
  confirm?: boolean;
}

export interface SecretInput {
  /** The value of `argOption`, when given. */
  arg?: string;
  /** The value of `fileOption`, when given. */
  file?: string;
}

export interface SecretIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  /** Standard input is a pipe or a regular file. */
  stdinPiped: boolean;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
}

function stdinPiped(): boolean {
  try {
    const st = fstatSync(0);
    return st.isFIFO() || st.isFile();
  } catch {
    return false;
  }
}

const processIo = (): SecretIo => ({ stdin: process.stdin, stdinPiped: stdinPiped(), stderr: process.stderr, env: process.env });

/** The first line of a file's or stream's text: a trailing newline is not part of a secret. */
const firstLine = (text: string) => text.split(/\r?\n/, 1)[0];

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Asks for a line on a terminal without echoing it: the question goes to stderr, and readline (which puts the
 * terminal in raw mode, so the terminal does not echo either) draws the typed line on a stream that drops it.
 * Ctrl-C, Ctrl-D or the end of input rejects.
 */
export function promptHidden(question: string, io: Pick<SecretIo, 'stdin' | 'stderr'>): Promise<string> {
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  const rl = readline.createInterface({ input: io.stdin, output: silent, terminal: true });
  // Only now, with the terminal in raw mode: an answer typed as soon as the question shows is not echoed.
  io.stderr.write(question);
  return new Promise<string>((resolve, reject) => {
    let answered = false;
    rl.on('line', (line) => {
      answered = true;
      rl.close();
      resolve(line);
    });
    rl.on('SIGINT', () => rl.close());
    rl.on('close', () => {
      io.stderr.write('\n');
      if (!answered) reject(new Error(`no ${question.replace(/:\s*$/, '').toLowerCase()} given`));
    });
  });
}

/** Where a secret comes from (see the top of this file); throws when none is given. Warns on `argOption`. */
export async function readSecret(spec: SecretSpec, input: SecretInput, io: SecretIo = processIo()): Promise<string> {
  const checked = (value: string, from: string) => {
    if (value === '') throw new Error(`the ${spec.what} from ${from} is empty`);
    return value;
  };
  if (input.arg !== undefined) {
    io.stderr.write(
      `warning: ${spec.argOption} puts the ${spec.what} in your shell history, the process list and npm's debug log; ` +
        `use ${[spec.envVar, `${spec.fileOption} FILE`, 'standard input'].filter(Boolean).join(', ')} ` +
        'or the prompt instead\n',
    );
    return checked(input.arg, spec.argOption);
  }
  if (input.file !== undefined) {
    if (input.file === '-') return checked(firstLine(await readAll(io.stdin)), 'standard input');
    let text: string;
    try {
      text = readFileSync(input.file, 'utf8');
    } catch (err) {
      throw new Error(`cannot read ${spec.fileOption} ${input.file}: ${(err as Error).message}`);
    }
    if ((statSync(input.file).mode & 0o077) !== 0) {
      io.stderr.write(`warning: ${input.file} can be read by other users; chmod 600 it\n`);
    }
    return checked(firstLine(text), input.file);
  }
  const fromEnv = spec.envVar ? io.env[spec.envVar] : undefined;
  if (spec.envVar && fromEnv) return fromEnv;
  if (io.stdinPiped) {
    const piped = firstLine(await readAll(io.stdin));
    if (piped !== '') return piped;
  }
  if (!io.stdin.isTTY) {
    throw new Error(
      `a ${spec.what} is needed: ${spec.envVar ? `set ${spec.envVar}, ` : ''}pass ${spec.fileOption} FILE ` +
        '(- for standard input), pipe it on standard input, or run on a terminal to be asked for it',
    );
  }
  const value = checked(await promptHidden(spec.prompt, io), 'the prompt');
  if (spec.confirm && (await promptHidden(`Repeat ${spec.prompt.charAt(0).toLowerCase()}${spec.prompt.slice(1)}`, io)) !== value) {
    throw new Error(`the two ${spec.what}s differ`);
  }
  return value;
}
