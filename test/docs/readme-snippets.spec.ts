/**
 * Every TypeScript snippet of README.md and of the guide (docs/*.md) compiles when pasted into an
 * app, a CommonJS one and an ES-module one (see `support/readme-snippets.ts` for how they are
 * compiled), and the testing examples equal the specs that run next to them
 * (`app/invoices.service.spec.ts`, `app/invoices.service.vitest.spec.ts`). Also what the testing
 * page says about services made with `new`.
 */
import { describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DynamoLockModule, LockConfigurationError, LockService } from '../../lib';
import { InvoicesService } from './app/invoices.service';
import { PaymentsService } from './app/payments.service';
import { type AppKind, checkSnippets, extractSnippets, type Snippet } from './support/readme-snippets';

/** The repository root, from this file's path. */
function repoRoot(): string {
  const testPath = expect.getState().testPath;
  if (!testPath) throw new Error('expect.getState().testPath is not set');
  return path.resolve(path.dirname(testPath), '..', '..');
}

/** README.md and every page of the guide, relative to the repository. */
export function guidePages(root: string): string[] {
  const docs = readdirSync(path.join(root, 'docs')).filter((file) => file.endsWith('.md'));
  return ['README.md', ...docs.sort().map((file) => `docs/${file}`)];
}

/** Fragments allowed, by page: the one-line illustration atop the README; the CDK stack, which needs aws-cdk-lib. */
const FRAGMENTS: Record<string, RegExp> = {
  'README.md': /async pay\(invoiceId: string\): Promise<void> \{ \.\.\. \}/,
  'docs/infrastructure.md': /from 'aws-cdk-lib'/,
};

describe('snippets of the README and the guide', () => {
  const root = repoRoot();
  const snippets: Snippet[] = guidePages(root).flatMap((page) => extractSnippets(readFileSync(path.join(root, page), 'utf8'), page));

  it('are many, and fragments only where the page needs one', () => {
    const fragments = snippets.filter((s) => s.fragment);
    console.info(`${snippets.length - fragments.length} TypeScript snippets compiled, ${fragments.length} skipped as fragments`);
    expect(snippets.length - fragments.length).toBeGreaterThanOrEqual(30);
    for (const fragment of fragments) {
      expect(`${fragment.source}: ${FRAGMENTS[fragment.source]?.test(fragment.code) ? 'allowed' : fragment.code}`).toBe(
        `${fragment.source}: allowed`,
      );
    }
    // The testing page keeps both specs, and the Quick start its modules.
    expect(snippets.filter((s) => s.source === 'docs/testing.md').map((s) => s.fileName)).toEqual(
      expect.arrayContaining(['invoices.service.spec.ts', 'invoices.service.vitest.spec.ts']),
    );
    expect(snippets.filter((s) => s.source === 'README.md').map((s) => s.fileName)).toEqual(
      expect.arrayContaining(['app.module.ts', 'main.ts', 'invoices.service.ts', 'invoices.controller.ts', 'report.job.ts']),
    );
  });

  it.each<AppKind>(['commonjs', 'module'])(
    'compile, with their imports, in a %s app',
    (kind) => {
      const problems = checkSnippets(snippets, root, kind).map((p) => `${p.source}:${p.readmeLine}: ${p.message}`);
      expect(problems).toEqual([]);
    },
    180_000,
  );
});

describe('Testing your application', () => {
  it('a service made with new fails its first locked call, even given a LockService', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [DynamoLockModule.forTesting()] }).compile();
    const invoices = new InvoicesService(moduleRef.get(LockService), new PaymentsService());
    await expect(invoices.pay('42')).rejects.toBeInstanceOf(LockConfigurationError);
    await moduleRef.close();
  });
});
