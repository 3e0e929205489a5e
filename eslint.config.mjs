// ESLint flat config: recommended JavaScript and TypeScript rules everywhere, type-aware rules
// for the library (floating promises and misused promises are lock bugs), Prettier for layout.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['dist/', 'dist-sample/', 'docs/api/', 'coverage/', 'bench/results/', '.dynamo-local/', '.scratch/']),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    files: ['lib/**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      // Signal reasons and caught errors are rethrown as they are.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
    },
  },
  {
    // The engine stays free of Nest and RxJS: the standalone entry point and the CLI run without them.
    // The CLI and the standalone entry point run where Nest is not installed, so they keep to the engine too.
    files: [
      'lib/core/**/*.ts',
      'lib/store/**/*.ts',
      'lib/utils/**/*.ts',
      'lib/errors/**/*.ts',
      'lib/interfaces/**/*.ts',
      'lib/leadership/**/*.ts',
      'lib/standalone/**/*.ts',
      'lib/cli/**/*.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@nestjs/*'],
              message: 'The engine (core, store, utils, errors, interfaces) must not depend on Nest: use LockLogger and plain types.',
            },
            { group: ['rxjs', 'rxjs/*'], message: 'The engine must not depend on RxJS.' },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  prettier,
);
