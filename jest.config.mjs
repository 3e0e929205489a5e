/**
 * Jest configuration.
 *
 * Tests run as native ES modules (NestJS 12 ships ESM only), so Jest must be
 * started with `node --experimental-vm-modules` (see the `test` scripts).
 * TypeScript is compiled by swc with the same decorator semantics as `tsc`
 * with `experimentalDecorators` + `emitDecoratorMetadata` at target ES2022.
 */

/** swc options mirroring tsconfig.json (ES2022, legacy decorators, metadata). */
const swcOptions = {
  swcrc: false,
  sourceMaps: 'inline',
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true },
    transform: {
      legacyDecorator: true,
      decoratorMetadata: true,
      // tsc uses [[Define]] semantics for class fields at target ES2022.
      useDefineForClassFields: true,
    },
    // NestJS uses class names in tokens and error messages.
    keepClassNames: true,
  },
};

/** @type {import('jest').Config} */
const config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test', '<rootDir>/lib'],
  testMatch: ['**/*.spec.ts', '**/*.e2e-spec.ts'],
  // The testing page's vitest spec runs under vitest (test/docs/vitest.e2e-spec.ts).
  testPathIgnorePatterns: ['/node_modules/', '\\.vitest\\.spec\\.ts$'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  extensionsToTreatAsEsm: ['.ts'],
  // Allow `./x.js` specifiers in TypeScript sources to resolve to `./x.ts`.
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    '^nestjs-dynamo-lock$': '<rootDir>/lib/index.ts',
  },
  transform: { '^.+\\.ts$': ['@swc/jest', swcOptions] },
  // The slowest suites first: a clean clone has no timings for Jest to order by.
  testSequencer: '<rootDir>/test/support/slow-first.sequencer.mjs',
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 15_000,
  clearMocks: true,
  restoreMocks: true,
};

export default config;
