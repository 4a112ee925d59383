// Compiles the gateway's TypeScript (src/, and bench/ for the benchmarks' api process) to CommonJS in dist/, file by
// file with esbuild (no bundling, no type check: `npm run typecheck` does that). `npm start`, the gateway CLI and the
// Docker image run dist/: Node then loads plain JavaScript, without tsx's compiler and its loader thread in every
// gateway process (about 35 MiB of resident memory; bench/RESULTS.md, relay). Run by scripts/ensure-setup.sh
// whenever a source is newer than the last build.
import { build } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const out = path.join(root, 'dist');

function files(dir, pick) {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? files(p, pick) : pick(p) ? [p] : [];
  });
}

rmSync(out, { recursive: true, force: true });
const ts = (p) => p.endsWith('.ts');
// bench/ is not in the Docker image; only the source tree has it.
const entryPoints = [...files(path.join(root, 'src'), ts), ...(existsSync(path.join(root, 'bench')) ? files(path.join(root, 'bench'), ts) : [])];
await build({
  entryPoints,
  outdir: out,
  outbase: root,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  sourcemap: 'linked',
  logLevel: 'warning',
});
// esbuild leaves `import('../x')` as it is in CommonJS output, and Node resolves a dynamic import as ES modules do:
// only with the file extension. Relative dynamic imports (the lazily loaded worker and dev server) get theirs.
for (const file of files(out, (p) => p.endsWith('.js'))) {
  const code = readFileSync(file, 'utf8');
  const fixed = code.replace(/\bimport\((["'])(\.{1,2}\/[^"']+?)\1\)/g, (m, q, spec) => (spec.endsWith('.js') ? m : `import(${q}${spec}.js${q})`));
  if (fixed !== code) writeFileSync(file, fixed);
}
// Files the code reads at run time, next to the compiled modules that read them: the SQL, and the worker threads'
// plain JavaScript (src/runtime/*.worker.js), loaded by path.
for (const sql of [...files(path.join(root, 'src'), (p) => p.endsWith('.worker.js')), ...files(path.join(root, 'src/db/migrations'), (p) => p.endsWith('.sql')), path.join(root, 'src/db/functions.sql')]) {
  const dest = path.join(out, path.relative(root, sql));
  mkdirSync(path.dirname(dest), { recursive: true });
  copyFileSync(sql, dest);
}

// The web console (console/): one bundle of Preact pages, its stylesheet and page, served at /console by the
// gateway itself (src/api/routes/console.ts). No CDN: everything it loads comes from dist/console.
const consoleOut = path.join(out, 'console');
await build({
  entryPoints: [path.join(root, 'console/src/main.tsx')],
  outfile: path.join(consoleOut, 'app.js'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['chrome110', 'firefox110', 'safari16'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  sourcemap: 'linked',
  logLevel: 'warning',
});
for (const file of ['console/index.html', 'console/src/styles.css']) copyFileSync(path.join(root, file), path.join(consoleOut, path.basename(file)));

// The workflow bundle the compiled worker runs (src/worker/workflow-bundle.ts), from the compiled workflows: a worker
// that bundled at start would keep webpack loaded for its whole life.
{
  const { bundleGatewayWorkflows, PREBUILT_BUNDLE_PATH } = createRequire(import.meta.url)(path.join(out, 'src/worker/workflow-bundle.js'));
  writeFileSync(PREBUILT_BUNDLE_PATH, (await bundleGatewayWorkflows()).code);
}

writeFileSync(path.join(out, '.built'), `${new Date().toISOString()}\n`);
console.log(`[setup] compiled ${entryPoints.length} TypeScript files, the workflow bundle and the console to dist/`);
