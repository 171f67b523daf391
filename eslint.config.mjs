// ESLint with typescript-eslint: the recommended rules, plus the type-aware
// ones that catch what the compiler cannot: a promise neither awaited nor
// handled (a lost error, or a write that outlives close()), a promise passed
// where a callback's result is ignored, and code nothing uses.
// `npm run lint`; `npm test` runs it.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'build/', 'node_modules/', 'bench/.trees/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's describe() and test() return promises the runner awaits itself.
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'test', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }] },
      ],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // Control characters are matched on purpose: names, queries and tool text escape or split on them.
      'no-control-regex': 'off',
    },
  },
  {
    // A function past 100 lines is a room not yet split (issue 36 named serveHttp and the watcher backends, now
    // classes): a warning that says where, not an error that blocks a change elsewhere. Tests are sequences of steps.
    files: ['src/**/*.ts'],
    rules: { 'max-lines-per-function': ['warn', { max: 100, skipBlankLines: true, skipComments: true }] },
  },
  { files: ['**/*.mjs', '**/*.js'], ...tseslint.configs.disableTypeChecked },
);
