/**
 * Every TypeScript snippet of README.md, docs/fencing.md and docs/infrastructure.md compiles when pasted into an app (see
 * `support/readme-snippets.ts` for how they are compiled), and the test example equals the spec
 * that runs next to it (`app/invoices.service.spec.ts`). Also what the README's testing section
 * says about services made with `new`.
 */
import { describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DynamoLockModule, LockConfigurationError, LockService } from '../../lib';
import { InvoicesService } from './app/invoices.service';
import { PaymentsService } from './app/payments.service';
import { checkSnippets, extractSnippets } from './support/readme-snippets';

/** The repository root, from this file's path. */
function repoRoot(): string {
  const testPath = expect.getState().testPath;
  if (!testPath) throw new Error('expect.getState().testPath is not set');
  return path.resolve(path.dirname(testPath), '..', '..');
}

describe('README snippets', () => {
  it('compile, with their imports, against the library', () => {
    const root = repoRoot();
    const snippets = extractSnippets(readFileSync(path.join(root, 'README.md'), 'utf8'));
    const fragments = snippets.filter((s) => s.fragment);
    console.info(
      `README.md: ${snippets.length - fragments.length} TypeScript snippets compiled, ${fragments.length} skipped as fragments` +
        (fragments.length ? ` (lines ${fragments.map((s) => s.fenceLine).join(', ')})` : ''),
    );
    expect(snippets.length - fragments.length).toBeGreaterThan(10);
    // Fragments are for the odd one-line illustration, not a way out.
    expect(fragments.length).toBeLessThanOrEqual(2);

    const problems = checkSnippets(snippets, root).map((p) => `README.md:${p.readmeLine}: ${p.message}`);
    expect(problems).toEqual([]);
  }, 90_000);
});

describe('docs/fencing.md snippets', () => {
  it("compile, with their imports, against the library (as the README's do)", () => {
    const root = repoRoot();
    const snippets = extractSnippets(readFileSync(path.join(root, 'docs', 'fencing.md'), 'utf8'), 'docs/fencing.md');
    const fragments = snippets.filter((s) => s.fragment);
    console.info(
      `docs/fencing.md: ${snippets.length - fragments.length} TypeScript snippets compiled, ${fragments.length} skipped as fragments`,
    );
    expect(snippets.length - fragments.length).toBeGreaterThanOrEqual(7);
    expect(fragments).toEqual([]);
    const problems = checkSnippets(snippets, root).map((p) => `docs/fencing.md:${p.readmeLine}: ${p.message}`);
    expect(problems).toEqual([]);
  }, 90_000);
});

describe('docs/infrastructure.md snippets', () => {
  it('compile, with their imports, against the library (the AWS CDK one, which needs aws-cdk-lib, is a fragment)', () => {
    const root = repoRoot();
    const snippets = extractSnippets(readFileSync(path.join(root, 'docs', 'infrastructure.md'), 'utf8'), 'docs/infrastructure.md');
    const fragments = snippets.filter((s) => s.fragment);
    expect(snippets.length - fragments.length).toBeGreaterThanOrEqual(1);
    expect(fragments.map((s) => s.code)).toEqual([expect.stringContaining("from 'aws-cdk-lib'")]);
    const problems = checkSnippets(snippets, root).map((p) => `docs/infrastructure.md:${p.readmeLine}: ${p.message}`);
    expect(problems).toEqual([]);
  }, 90_000);
});

describe('README: Testing your application', () => {
  it('a service made with new fails its first locked call, even given a LockService', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [DynamoLockModule.forTesting()] }).compile();
    const invoices = new InvoicesService(moduleRef.get(LockService), new PaymentsService());
    await expect(invoices.pay('42')).rejects.toBeInstanceOf(LockConfigurationError);
    await moduleRef.close();
  });
});
