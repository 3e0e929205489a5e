/**
 * The TypeScript snippets of the README and the guide, compiled as a reader would paste them: each
 * ```ts block of a page is a module of a small app, where `./payments.service.js` and the like are
 * the stand-ins of the app's own code (`test/docs/app`), and `nestjs-dynamo-lock` (and its `/health`
 * and `/standalone` entry points) resolve to `lib/`. Every page is its own app, compiled twice with
 * the repository's strict options: once as a CommonJS project (a Nest 11 app) and once as an
 * ES-module project (`"type": "module"`, a Nest 12 app); both with `"module": "nodenext"` and
 * `isolatedModules`, as `nest new` writes them. The apps are virtual: nothing is written to disk.
 *
 * - A block whose first line is `// name.ts` is the module `name.ts`, so other blocks of its page
 *   import it (`./invoices.service.js`); `// name.spec.ts, with vitest` is `name.vitest.spec.ts`. If
 *   `test/docs/app/<that name>` exists, the block must equal it (lines containing
 *   `// readme: omit` left out): that is how the testing examples run in `npm test`.
 * - A block preceded by `<!-- snippet: fragment -->` is not compiled; use it sparingly.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Marks the next code block as a fragment that is not compiled. */
export const FRAGMENT_MARKER = '<!-- snippet: fragment -->';
/** Lines of a file in `test/docs/app` containing this are not part of the README's copy. */
export const OMIT_MARKER = '// readme: omit';

/** One fenced TypeScript block of the README. */
export interface Snippet {
  /** 1-based line of the opening fence. */
  fenceLine: number;
  code: string;
  fragment: boolean;
  /** Module name in its page's app: from a `// name.ts` first line, else `<page>-L<line>.ts`. */
  fileName: string;
  /** The page, relative to the repository: `README.md`, `docs/cli.md`. */
  source: string;
}

/** A compile error, or a difference from the file a snippet must equal, at a README line. */
export interface SnippetProblem {
  /** The page, relative to the repository. */
  source: string;
  readmeLine: number;
  message: string;
}

/** The two kinds of app a snippet must compile in. */
export type AppKind = 'commonjs' | 'module';

const TS_FENCE = /^```(ts|typescript)\s*$/;
const ANY_TS_FENCE = /^\s*```\s*(ts|typescript|tsx)\b/i;
const NAMED = /^\/\/ ([\w.-]+?)((?:\.spec)?\.ts)(?:, with (\w+))?$/;

/**
 * Every ```ts and ```typescript block of a Markdown text. `source` names the page in errors and in
 * the module names of unnamed blocks (`readme-L<line>.ts` for README.md, `fencing-L<line>.ts` for
 * docs/fencing.md).
 */
export function extractSnippets(markdown: string, source = 'README.md'): Snippet[] {
  const prefix = path.basename(source, '.md').toLowerCase();
  const lines = markdown.split('\n');
  const snippets: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!TS_FENCE.test(lines[i])) {
      // An indented or annotated TypeScript fence would escape the check unseen.
      if (ANY_TS_FENCE.test(lines[i])) throw new Error(`${source}:${i + 1}: write TypeScript blocks as a bare \`\`\`ts fence`);
      continue;
    }
    const end = lines.findIndex((line, j) => j > i && line.startsWith('```'));
    if (end < 0) throw new Error(`${source}:${i + 1}: code block without its closing fence`);
    const code = lines.slice(i + 1, end).join('\n') + '\n';
    let previous = i - 1;
    while (previous >= 0 && lines[previous].trim() === '') previous--;
    const named = NAMED.exec(lines[i + 1] ?? '');
    const name = named && (named[3] ? `${named[1]}.${named[3]}${named[2]}` : `${named[1]}${named[2]}`);
    snippets.push({
      fenceLine: i + 1,
      code,
      fragment: lines[previous]?.trim() === FRAGMENT_MARKER,
      fileName: name ?? `${prefix}-L${i + 1}.ts`,
      source,
    });
    i = end;
  }
  return snippets;
}

/**
 * Type-checks the snippets that are not fragments, each page as an app of the given kind, all in
 * one program, and returns every problem with its page and line. `root` is the repository.
 */
export function checkSnippets(snippets: readonly Snippet[], root: string, kind: AppKind = 'commonjs'): SnippetProblem[] {
  const appDir = path.join(root, 'test', 'docs', 'app');
  const kindDir = path.join(root, 'test', 'docs', `.${kind}-apps`);
  const problems: SnippetProblem[] = [];
  // The apps: a package.json of their kind, and in each page's folder the stand-ins of test/docs/app.
  const virtual = new Map<string, string>([[path.join(kindDir, 'package.json'), JSON.stringify({ type: kind })]]);
  const standIns = readdirSync(appDir).filter((file) => file.endsWith('.ts'));
  const byFile = new Map<string, Snippet>();

  for (const snippet of snippets.filter((s) => !s.fragment)) {
    const pageDir = path.join(kindDir, snippet.source.replace(/\.md$/, '').replace(/[/\\]/g, '-'));
    if (!virtual.has(path.join(pageDir, standIns[0] ?? ''))) {
      for (const file of standIns) virtual.set(path.join(pageDir, file), readFileSync(path.join(appDir, file), 'utf8'));
    }
    const file = path.join(pageDir, snippet.fileName);
    if (byFile.has(file)) {
      problems.push({ source: snippet.source, readmeLine: snippet.fenceLine, message: `a second snippet named ${snippet.fileName}` });
      continue;
    }
    byFile.set(file, snippet);
    const real = path.join(appDir, snippet.fileName);
    if (existsSync(real)) {
      const expected = readFileSync(real, 'utf8')
        .split('\n')
        .filter((line) => !line.includes(OMIT_MARKER))
        .join('\n');
      if (expected !== snippet.code) {
        problems.push({
          source: snippet.source,
          readmeLine: snippet.fenceLine,
          message: `differs from ${path.relative(root, real)}, which it must equal`,
        });
        continue;
      }
    }
    virtual.set(file, snippet.code);
  }

  const program = ts.createProgram({ rootNames: [...byFile.keys()], options: compilerOptions(root), host: hostWith(virtual) });
  for (const diagnostic of program.getOptionsDiagnostics())
    problems.push({ source: 'tsconfig', readmeLine: 0, message: flatten(diagnostic) });
  for (const [file, snippet] of byFile) {
    const source = program.getSourceFile(file);
    if (!source) {
      problems.push({ source: snippet.source, readmeLine: snippet.fenceLine, message: `${snippet.fileName} was not compiled` });
      continue;
    }
    for (const diagnostic of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      const line = source.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line;
      problems.push({ source: snippet.source, readmeLine: snippet.fenceLine + 1 + line, message: `(${kind}) ${flatten(diagnostic)}` });
    }
  }
  return problems;
}

/**
 * The repository's strict compiler options as a `nest new` app sets its module system
 * (`nodenext`, `isolatedModules`), with `nestjs-dynamo-lock` mapped to `lib/`.
 */
function compilerOptions(root: string): ts.CompilerOptions {
  const configPath = path.join(root, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
  if (config.error) throw new Error(flatten(config.error));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root, undefined, configPath);
  return {
    ...options,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    isolatedModules: true,
    noEmit: true,
    paths: {
      'nestjs-dynamo-lock': [path.join(root, 'lib', 'index.ts')],
      'nestjs-dynamo-lock/health': [path.join(root, 'lib', 'health', 'index.ts')],
      'nestjs-dynamo-lock/standalone': [path.join(root, 'lib', 'standalone', 'index.ts')],
      // Not a dependency of this repository: the types the SQS recipe uses, from the real package.
      '@aws-sdk/client-sqs': [path.join(root, 'test', 'docs', 'support', 'client-sqs.d.ts')],
    },
  };
}

/** A compiler host that also serves the snippets as files under `test/docs/app`. */
function hostWith(virtual: ReadonlyMap<string, string>): ts.CompilerHost {
  const host = ts.createCompilerHost({});
  const { fileExists, readFile, getSourceFile, directoryExists } = host;
  const virtualDirs = new Set([...virtual.keys()].flatMap((file) => ancestors(path.dirname(file))));
  return {
    ...host,
    fileExists: (file) => virtual.has(file) || fileExists.call(host, file),
    directoryExists: (dir) => virtualDirs.has(dir) || (directoryExists?.call(host, dir) ?? true),
    readFile: (file) => virtual.get(file) ?? readFile.call(host, file),
    getSourceFile: (file, language, onError, create) => {
      const text = virtual.get(file);
      return text === undefined ? getSourceFile.call(host, file, language, onError, create) : ts.createSourceFile(file, text, language);
    },
  };
}

/** `dir` and every folder above it. */
function ancestors(dir: string): string[] {
  const parent = path.dirname(dir);
  return parent === dir ? [dir] : [dir, ...ancestors(parent)];
}

function flatten(diagnostic: ts.Diagnostic): string {
  return ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
}
