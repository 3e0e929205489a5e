/**
 * Every link of README.md and of the guide (docs/*.md) that points into this repository resolves:
 * relative links to a file or folder that exists, and `#anchors` to a heading of the page they
 * name (as GitHub makes anchors of headings). The README links to the guide with absolute links to
 * the repository on GitHub, because npm shows the README without the rest of the repository; those
 * are checked as the files they name. Other web links are not fetched.
 */
import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const REPOSITORY = 'https://github.com/nestjs-dynamo-lock/nestjs-dynamo-lock';

/** The repository root, from this file's path. */
function repoRoot(): string {
  const testPath = expect.getState().testPath;
  if (!testPath) throw new Error('expect.getState().testPath is not set');
  return path.resolve(path.dirname(testPath), '..', '..');
}

/** Markdown without its fenced code blocks and inline code, lines kept. */
function prose(markdown: string): string {
  return markdown
    .replace(/^```[\s\S]*?^```/gm, (block) => block.replace(/[^\n]/g, ''))
    .replace(/`[^`\n]*`/g, (code) => ' '.repeat(code.length));
}

/** The anchors GitHub gives the headings of a Markdown page. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const line of markdown.replace(/^```[\s\S]*?^```/gm, '').split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count ? `${slug}-${count}` : slug);
  }
  return result;
}

/** Every link target of a page, with its line. */
function links(markdown: string): { line: number; target: string }[] {
  const found: { line: number; target: string }[] = [];
  prose(markdown)
    .split('\n')
    .forEach((text, i) => {
      for (const match of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) found.push({ line: i + 1, target: match[1] });
    });
  return found;
}

function pages(root: string): string[] {
  const docs = readdirSync(path.join(root, 'docs')).filter((file) => file.endsWith('.md'));
  return ['README.md', ...docs.sort().map((file) => `docs/${file}`)];
}

/** What is wrong with one link of `page`, or undefined. */
function problem(root: string, page: string, target: string): string | undefined {
  let local: string;
  if (/^[a-z]+:/i.test(target)) {
    const inRepository = new RegExp(`^${REPOSITORY}/(?:blob|tree)/main/([^#?]*)(#.*)?$`).exec(target);
    if (!inRepository) return undefined; // another site (or the repository's issues): not fetched
    local = inRepository[1] + (inRepository[2] ?? '');
  } else if (target.startsWith('#')) {
    local = page + target;
  } else {
    local = path.posix.join(path.posix.dirname(page), target);
  }
  const [file, anchor] = local.split('#', 2);
  const absolute = path.join(root, decodeURIComponent(file));
  if (!existsSync(absolute)) return `${file} does not exist`;
  if (anchor === undefined) return undefined;
  if (!statSync(absolute).isFile() || !file.endsWith('.md')) return `#${anchor} in ${file}, which is not a Markdown page`;
  return anchors(readFileSync(absolute, 'utf8')).has(anchor) ? undefined : `${file} has no heading #${anchor}`;
}

describe('links of the README and the guide', () => {
  it('resolve: files, folders and #headings', () => {
    const root = repoRoot();
    const problems: string[] = [];
    let count = 0;
    for (const page of pages(root)) {
      for (const { line, target } of links(readFileSync(path.join(root, page), 'utf8'))) {
        count++;
        const wrong = problem(root, page, target);
        if (wrong) problems.push(`${page}:${line}: ${target}: ${wrong}`);
      }
    }
    expect(count).toBeGreaterThan(100);
    expect(problems).toEqual([]);
  });

  it('from the README into the repository are absolute, so they work on npm and in node_modules', () => {
    const root = repoRoot();
    const relative = links(readFileSync(path.join(root, 'README.md'), 'utf8'))
      .map(({ target }) => target)
      .filter((target) => !/^[a-z]+:/i.test(target) && !target.startsWith('#'));
    expect(relative).toEqual([]);
  });

  it('point where package.json says the repository is', () => {
    const packageJson = JSON.parse(readFileSync(path.join(repoRoot(), 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(packageJson.repository).toEqual({ type: 'git', url: `git+${REPOSITORY}.git` });
    expect(packageJson.homepage).toBe(`${REPOSITORY}#readme`);
    expect(packageJson.bugs).toEqual({ url: `${REPOSITORY}/issues` });
  });

  it('make the anchors GitHub makes', () => {
    expect([...anchors('# `@WithLock(template, options?)`\n## How waiting works, and what it costs\n## FAQ\n## FAQ')]).toEqual([
      'withlocktemplate-options',
      'how-waiting-works-and-what-it-costs',
      'faq',
      'faq-1',
    ]);
  });
});
