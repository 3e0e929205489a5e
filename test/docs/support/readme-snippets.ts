/**
 * The README's TypeScript snippets, compiled as a reader would paste them: each ```ts block is a
 * module of a small app in `test/docs/app`, where `./payments.service` and the like are the
 * stand-ins of the app's own code, and `nestjs-dynamo-lock` (and its `/health` and `/standalone`
 * entry points) resolve to `lib/`. Compiled with the repository's compiler options, as CommonJS
 * modules, like the sample app.
 *
 * - A block whose first line is `// name.ts` is the module `name.ts`, so other blocks import it
 *   (`./invoices.service`). If `test/docs/app/name.ts` exists, the block must equal it (lines ending
 *   containing `// readme: omit` left out): that is how the README's test example runs in `npm test`.
 * - A block preceded by `<!-- snippet: fragment -->` is not compiled; use it sparingly.
 */
import { existsSync, readFileSync } from 'node:fs';
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
  /** Module name under `test/docs/app`: from a `// name.ts` first line, else `readme-L<line>.ts`. */
  fileName: string;
}

/** A compile error, or a difference from the file a snippet must equal, at a README line. */
export interface SnippetProblem {
  readmeLine: number;
  message: string;
}

const TS_FENCE = /^```(ts|typescript)\s*$/;
const ANY_TS_FENCE = /^\s*```\s*(ts|typescript|tsx)\b/i;
const NAMED = /^\/\/ ([\w.-]+\.ts)$/;

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
    const name = NAMED.exec(lines[i + 1] ?? '')?.[1];
    snippets.push({
      fenceLine: i + 1,
      code,
      fragment: lines[previous]?.trim() === FRAGMENT_MARKER,
      fileName: name ?? `${prefix}-L${i + 1}.ts`,
    });
    i = end;
  }
  return snippets;
}

/**
 * Type-checks the snippets that are not fragments in one program and returns every problem with
 * its README line. `root` is the repository.
 */
export function checkSnippets(snippets: readonly Snippet[], root: string): SnippetProblem[] {
  const appDir = path.join(root, 'test', 'docs', 'app');
  const problems: SnippetProblem[] = [];
  const virtual = new Map<string, string>();
  const byFile = new Map<string, Snippet>();

  for (const snippet of snippets.filter((s) => !s.fragment)) {
    const file = path.join(appDir, snippet.fileName);
    if (byFile.has(file)) {
      problems.push({ readmeLine: snippet.fenceLine, message: `a second snippet named ${snippet.fileName}` });
      continue;
    }
    byFile.set(file, snippet);
    if (!existsSync(file)) {
      virtual.set(file, snippet.code);
      continue;
    }
    const expected = readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => !line.includes(OMIT_MARKER))
      .join('\n');
    if (expected !== snippet.code) {
      problems.push({ readmeLine: snippet.fenceLine, message: `differs from ${path.relative(root, file)}, which it must equal` });
    }
  }

  const program = ts.createProgram({ rootNames: [...byFile.keys()], options: compilerOptions(root), host: hostWith(virtual) });
  for (const diagnostic of program.getOptionsDiagnostics()) problems.push({ readmeLine: 0, message: flatten(diagnostic) });
  for (const [file, snippet] of byFile) {
    const source = program.getSourceFile(file);
    if (!source) {
      problems.push({ readmeLine: snippet.fenceLine, message: `${snippet.fileName} was not compiled` });
      continue;
    }
    for (const diagnostic of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      const line = source.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line;
      if (virtual.has(file)) {
        problems.push({ readmeLine: snippet.fenceLine + 1 + line, message: flatten(diagnostic) });
      } else {
        // A file in test/docs/app may have lines the README leaves out: name the file's own line.
        problems.push({ readmeLine: snippet.fenceLine, message: `${path.relative(root, file)}:${line + 1}: ${flatten(diagnostic)}` });
      }
    }
  }
  return problems;
}

/** The repository's compiler options, with `nestjs-dynamo-lock` mapped to `lib/`. */
function compilerOptions(root: string): ts.CompilerOptions {
  const configPath = path.join(root, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
  if (config.error) throw new Error(flatten(config.error));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root, undefined, configPath);
  return {
    ...options,
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
  const { fileExists, readFile, getSourceFile } = host;
  return {
    ...host,
    fileExists: (file) => virtual.has(file) || fileExists.call(host, file),
    readFile: (file) => virtual.get(file) ?? readFile.call(host, file),
    getSourceFile: (file, language, onError, create) => {
      const text = virtual.get(file);
      return text === undefined ? getSourceFile.call(host, file, language, onError, create) : ts.createSourceFile(file, text, language);
    },
  };
}

function flatten(diagnostic: ts.Diagnostic): string {
  return ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
}
