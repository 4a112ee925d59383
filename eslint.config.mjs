// ESLint flat config: typescript-eslint's recommended rules (syntax only, not type-checked, so `npm test`
// stays fast), the layers' import rules (eslint-plugin-boundaries, from eslint.layers.mjs), and the Temporal
// workflow sandbox rules for src/workflows.
import js from '@eslint/js';
import boundaries from 'eslint-plugin-boundaries';
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';
import { LAYERS } from './eslint.layers.mjs';

/** Node built-ins, bare (`fs`, `fs/promises`) and prefixed (`node:fs`). */
const nodeBuiltins = builtinModules.filter((name) => !name.startsWith('_'));

export default tseslint.config(
  {
    ignores: ['node_modules/**', 'dist/**', 'data/**', 'coverage/**', '**/*.d.ts'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      // Node and jest globals (process, Buffer, setTimeout, describe, expect...) are type-checked by tsc,
      // which knows them from @types/node and @types/jest; ESLint's own undefined-variable check only
      // duplicates that, without the types.
    },
    rules: {
      'no-undef': 'off',
      // `_name` marks a parameter or binding kept on purpose (callback signatures, destructuring to omit).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Tests and tools parse arbitrary JSON bodies and poke at internals; `any` there is deliberate.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // CommonJS config files (jest.config.js) use require/module.exports.
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // One rule per layer: a file may import its own layer and the layers eslint.layers.mjs lists for it (types only
    // where it says so); anything else is an error. docs/architecture.md shows the same table.
    files: ['src/**/*.ts'],
    plugins: { boundaries },
    settings: {
      'boundaries/elements': LAYERS.filter((l) => l.element !== false).map((l) => ({ type: l.type, pattern: l.folder })),
      'boundaries/include': ['src/**/*.ts'],
      'import/resolver': { node: { extensions: ['.ts', '.js', '.mjs'] } },
    },
    rules: {
      'boundaries/dependencies': [
        'error',
        {
          default: 'disallow',
          message: '{{from.type}} may not import {{to.type}} (eslint.layers.mjs, docs/architecture.md)',
          checkAllOrigins: true,
          policies: [
            // Packages and Node's modules: allowed, but for those a layer names as never to be imported (below).
            { allow: { to: { origin: ['external', 'core'] } } },
            ...LAYERS.filter((l) => l.element !== false).flatMap((l) => {
              const from = { element: { type: l.type } };
              const own = l.mayImport.includes('*') ? '*' : [l.type, ...l.mayImport];
              return [
                { from, allow: { to: { element: { type: own } } } },
                ...(l.typesOnly?.length ? [{ from, allow: { to: { element: { type: l.typesOnly } }, dependency: { kind: 'type' } } }] : []),
                ...(l.packages?.length
                  ? [{
                    from,
                    disallow: { to: { origin: ['external', 'core'], module: { source: l.packages } } },
                    message: `${l.type} may not import ${l.packages.join(', ')}: a port in src/domain/ports stands for them (eslint.layers.mjs)`,
                  }]
                  : []),
              ];
            }),
          ],
        },
      ],
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node built-ins, and activities only as types
    // (proxyActivities<Activities>), never their implementation.
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Workflow code runs in the Temporal sandbox: no Node built-ins (use @temporalio/workflow APIs).',
          })),
          patterns: [
            {
              group: ['node:*'],
              message: 'Workflow code runs in the Temporal sandbox: no Node built-ins (use @temporalio/workflow APIs).',
            },
            {
              group: ['**/activities', '**/activities/**'],
              allowTypeImports: true,
              message: 'Workflows import activities as types only (`import type`) and call them through proxyActivities.',
            },
          ],
        },
      ],
    },
  },
);
