/**
 * vitest for the testing page's vitest spec (`app/invoices.service.vitest.spec.ts`), run by
 * `vitest.e2e-spec.ts`: as a Nest app's vitest configuration does, SWC compiles the TypeScript with
 * decorator metadata (vitest's default transform, esbuild, emits none), and the package resolves
 * to the build in `dist/` (`npm test` builds it first).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export default defineConfig({
  root,
  plugins: [
    swc.vite({
      jsc: {
        target: 'es2022',
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: true },
      },
    }),
  ],
  resolve: { alias: { 'nestjs-dynamo-lock': path.join(root, 'dist', 'index.js') } },
  test: { include: ['test/docs/app/*.vitest.spec.ts'], environment: 'node' },
});
