import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';

/**
 * The layers' import rules are one list (eslint.layers.mjs): ESLint enforces it (eslint-plugin-boundaries), and
 * docs/architecture.md shows it. This checks that the table in the docs is that list, and that the rules do catch
 * what they forbid, by linting source text placed in each layer.
 */

const root = path.resolve(__dirname, '../..');

interface Layer {
  type: string;
  folder: string;
  what: string;
  mayImport: string[];
  typesOnly?: string[];
  packages?: string[];
}

async function layers(): Promise<Layer[]> {
  return ((await import(path.join(root, 'eslint.layers.mjs'))) as { LAYERS: Layer[] }).LAYERS;
}

/** The table as docs/architecture.md must show it. */
function renderTable(all: Layer[]): string {
  const cell = (l: Layer) => {
    const parts = l.mayImport.map((t) => (t === '*' ? 'everything' : `\`${t}\``));
    if (l.typesOnly?.length) parts.push(`types of ${l.typesOnly.map((t) => `\`${t}\``).join(', ')}`);
    const allowed = parts.length > 0 ? parts.join(', ') : 'nothing of the gateway';
    return l.packages?.length ? `${allowed}; never ${l.packages.map((p) => `\`${p}\``).join(', ')}` : allowed;
  };
  const rows = all.map((l) => `| \`${l.type}\` | \`${l.folder}\` | ${l.what} | ${cell(l)} |`);
  return ['| layer | files | what it is | may import |', '|---|---|---|---|', ...rows].join('\n');
}

const eslint = new ESLint({ cwd: root });

/** The boundaries errors ESLint reports for `code` as if it were the file `file`. */
async function violations(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return result.messages.filter((m) => m.ruleId?.startsWith('boundaries/')).map((m) => `${m.ruleId}: ${m.message}`);
}

describe('layer rules', () => {
  it('docs/architecture.md shows the import table of the lint config', async () => {
    const docs = readFileSync(path.join(root, 'docs/architecture.md'), 'utf8');
    expect(docs).toContain(renderTable(await layers()));
  });

  it.each([
    ['src/domain/keys/x.ts', "import { createPool } from '../../db/pool';\nexport const x = createPool;"],
    ['src/domain/keys/x.ts', "import type { GatewayDeps } from '../../api/deps';\nexport type X = GatewayDeps;"],
    ['src/domain/keys/x.ts', "import { Pool } from 'pg';\nexport const x = Pool;"],
    ['src/domain/keys/x.ts', "import { S3Client } from '@aws-sdk/client-s3';\nexport const x = S3Client;"],
    ['src/domain/keys/x.ts', "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;"],
    ['src/domain/keys/x.ts', "import http from 'node:http';\nexport const x = http;"],
    ['src/domain/keys/x.ts', "import { postOutbound } from '../../upstream/public-request';\nexport const x = postOutbound;"],
    ['src/worker/x.ts', "import { buildApp } from '../api/app';\nexport const x = buildApp;"],
    ['src/activities/x.ts', "import { keyLimitsPlugin } from '../api/plugins/key-limits';\nexport const x = keyLimitsPlugin;"],
    ['src/workflows/x.ts', "import { createActivities } from '../activities';\nexport const x = createActivities;"],
    ['src/api/routes/x.ts', "import { createRepositories } from '../../db/repositories';\nexport const x = createRepositories;"],
    ['src/simulator/x.ts', "import { ValidationError } from '../domain/errors';\nexport const x = ValidationError;"],
    ['src/schemas/x.ts', "import { buildApp } from '../api/app';\nexport const x = buildApp;"],
  ])('%s may not: %s', async (file, code) => {
    expect(await violations(file, code)).not.toEqual([]);
  });

  it.each([
    ['src/domain/keys/x.ts', "import type { Tx } from '../ports/transactions';\nimport { randomUUID } from 'node:crypto';\nexport type X = Tx;\nexport const y = randomUUID;"],
    ['src/db/x.ts', "import type { Repositories } from '../domain/ports/repositories';\nexport type X = Repositories;"],
    ['src/workflows/x.ts', "import type { Activities } from '../activities';\nexport type X = Activities;"],
    ['src/api/routes/x.ts', "import { ValidationError } from '../../domain/errors';\nimport { chatCompletionBody } from '../../schemas/chat';\nexport const x = [ValidationError, chatCompletionBody];"],
    ['src/runtime/x.ts', "import { buildApp } from '../api/app';\nimport { createRepositories } from '../db/repositories';\nexport const x = [buildApp, createRepositories];"],
  ])('%s may: %s', async (file, code) => {
    expect(await violations(file, code)).toEqual([]);
  });
});
