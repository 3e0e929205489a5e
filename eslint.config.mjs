// ESLint flat config: recommended JavaScript and TypeScript rules everywhere, type-aware rules
// for the library (floating promises and misused promises are lock bugs), Prettier for layout,
// and guards of lib/'s architecture: file size and optional peers. Import cycles and layers are
// checked by tools/check-imports.mjs (also part of `npm run lint`).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const engineRunsWithout = (name) => `The engine, the standalone entry point and the CLI run where ${name} is not installed`;
const NEST = { group: ['@nestjs/*'], message: `${engineRunsWithout('Nest')}: use LockLogger and plain types.` };
const RXJS = { group: ['rxjs', 'rxjs/*'], message: `${engineRunsWithout('RxJS')}.` };
const REFLECT_METADATA = { group: ['reflect-metadata'], message: `${engineRunsWithout('reflect-metadata')}.` };
const OTEL_MESSAGE =
  'OpenTelemetry is an optional peer: only lib/observability/ uses it, loaded by loadOptionalPeer (lib/utils/optional-peer.ts).';
const OTEL = { group: ['@opentelemetry/*'], message: OTEL_MESSAGE };

/**
 * The packages that files must not import. In flat config a later object's options for a rule replace
 * an earlier one's for the same file, so each file gets all its patterns from one of these.
 */
function restrictedImports(files, patterns) {
  return { files, rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] } };
}

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
      // A file past 400 lines is split, not exempted.
      'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }],
    },
  },
  // The engine (and the standalone entry point and the CLI over it) stays free of Nest, RxJS and
  // reflect-metadata; OpenTelemetry, an optional peer, is loaded at run time by lib/observability/ alone.
  restrictedImports(
    ['core', 'store', 'utils', 'errors', 'interfaces', 'standalone', 'cli'].map((folder) => `lib/${folder}/**/*.ts`),
    [NEST, RXJS, REFLECT_METADATA, OTEL],
  ),
  restrictedImports(
    ['lib/observability/**/*.ts'],
    [NEST, RXJS, REFLECT_METADATA, { ...OTEL, allowTypeImports: true, message: `${OTEL_MESSAGE} A type-only import is fine.` }],
  ),
  restrictedImports(['decorators', 'interceptors', 'health', 'testing'].map((folder) => `lib/${folder}/**/*.ts`).concat('lib/*.ts'), [
    OTEL,
  ]),
  {
    files: ['**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  prettier,
);
