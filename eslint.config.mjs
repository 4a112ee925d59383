// ESLint flat config: typescript-eslint's recommended rules (syntax only, not type-checked, so `npm test`
// stays fast), plus the Temporal workflow sandbox rules for src/workflows.
import js from '@eslint/js';
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

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
    // The domain owns its ports (src/domain/ports); the adapters implement them and the composition root wires
    // them. A domain module that reached for an adapter or the simulator would make the dependency run both ways.
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^(\\.\\./)+(upstream|simulator|runtime|workflows|activities|worker)(/|$)', message: 'src/domain imports nothing from the adapters, the simulator or the processes: declare a port in src/domain/ports.' },
          ],
        },
      ],
    },
  },
  {
    // The simulator plays the providers: it shares no rule with the gateway, so a drift between them shows in tests.
    files: ['src/simulator/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(\\.\\./)+(domain|upstream|api|runtime|gateway-config)(/|$)', message: 'The simulator imports nothing of the gateway.' }] },
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
