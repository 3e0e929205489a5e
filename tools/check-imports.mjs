// @ts-check
// The import-graph guards of lib/, run by `npm run lint`: no import cycle and no import against the
// layers. A script rather than ESLint: eslint-plugin-import-x's no-cycle skips type-only imports, and
// a type-only cycle still ties two files together. The TypeScript compiler reads every import (type-only
// ones, `export ... from`, `import('…')` types and `require`) and resolves it as tsc does.
//
// Usage: node tools/check-imports.mjs   (exit 1 with one line per problem)
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(import.meta.dirname, '..');
const libDir = path.join(root, 'lib');

/**
 * A layer: a name for messages and the files of lib/ it holds, as `folder/**` (any depth),
 * `folder/*.ts` (directly in the folder) or `*.ts` (directly in lib/).
 * @typedef {{ name: string, files: string[] }} Layer
 */
/**
 * Layers by level, bottom first: a file imports only its own layer and lower levels. Layers of one
 * level are siblings that must not import each other. `free` layers may import and be imported freely
 * within the layering.
 * @typedef {{ levels: Layer[][], free?: Layer[], siblings?: string }} Layering
 */

/** @type {Layering} */
const LIB_LAYERS = {
  levels: [
    [{ name: 'errors', files: ['errors/**'] }],
    [{ name: 'utils', files: ['utils/**'] }],
    [{ name: 'interfaces', files: ['interfaces/**'] }],
    [{ name: 'store', files: ['store/**'] }],
    [{ name: 'observability', files: ['observability/**'] }],
    [{ name: 'core', files: ['core/**'] }],
    [{ name: 'the Nest layer', files: ['decorators/**', 'interceptors/**', 'health/**', 'testing/**', '*.ts'] }],
    [{ name: 'standalone', files: ['standalone/**'] }],
    [{ name: 'cli', files: ['cli/**'] }],
  ],
};

/**
 * Layerings inside one layer of {@link LIB_LAYERS}, by its name.
 * @type {Record<string, Layering>}
 */
const SUBLAYERS = {
  core: {
    levels: [
      [{ name: 'core/engine', files: ['core/engine/**'] }],
      [{ name: 'core/waiting', files: ['core/waiting/**'] }],
      [
        { name: 'core/mutex', files: ['core/mutex/**'] },
        { name: 'core/semaphore', files: ['core/semaphore/**'] },
        // Read locks: readers on mutex items (writers are the mutex's callers).
        { name: 'core/rw', files: ['core/rw/**'] },
      ],
      [
        { name: 'core/leadership', files: ['core/leadership/**'] },
        // Multi-key locks: sets of mutex locks, taken in one global key order.
        { name: 'core/multi', files: ['core/multi/**'] },
      ],
      // The manager and the primitive registry.
      [{ name: 'core/*.ts', files: ['core/*.ts'] }],
    ],
    siblings: 'shared code goes to core/engine or core/waiting',
  },
  store: {
    levels: [
      [{ name: 'store/dynamo', files: ['store/dynamo/**'] }],
      [
        { name: 'store/mutex', files: ['store/mutex/**'] },
        { name: 'store/semaphore', files: ['store/semaphore/**'] },
      ],
      // Fenced writes: the caller's writes conditioned on a mutex's lock item or token.
      [
        { name: 'store/fencing', files: ['store/fencing/**'] },
        // Readers' writes on mutex items.
        { name: 'store/rw', files: ['store/rw/**'] },
      ],
    ],
    free: [{ name: 'store/*.ts', files: ['store/*.ts'] }],
    siblings: 'shared protocol code goes to the top-level store/*.ts files',
  },
};

/** Imports across layers that are forbidden although the levels allow them, with the reason. */
const FORBIDDEN = [
  { from: 'standalone', to: 'the Nest layer', reason: 'the standalone entry point is a barrel over the engine, for apps without Nest' },
  { from: 'cli', to: 'the Nest layer', reason: 'the CLI runs the engine without Nest' },
];

/** Imports against the layers that are allowed, file to file: the main entry point re-exports the standalone one. */
const ALLOWED = new Set(['lib/index.ts -> lib/standalone/index.ts']);

/**
 * @param {string} file path relative to lib/, with `/`
 * @param {string} pattern
 */
function matches(file, pattern) {
  if (pattern.endsWith('/**')) return file.startsWith(pattern.slice(0, -2));
  if (pattern.endsWith('*.ts')) return path.posix.dirname(file) === path.posix.dirname(pattern) && file.endsWith('.ts');
  return file === pattern;
}

/**
 * The layer of a file and its level (undefined for a free layer), or undefined when it is in none.
 * @param {Layering} layering
 * @param {string} file path relative to lib/
 * @returns {{ layer: Layer, level: number | undefined } | undefined}
 */
function classify(layering, file) {
  const holds = (/** @type {Layer} */ layer) => layer.files.some((pattern) => matches(file, pattern));
  for (const [level, layers] of layering.levels.entries()) {
    const layer = layers.find(holds);
    if (layer) return { layer, level };
  }
  const free = layering.free?.find(holds);
  return free && { layer: free, level: undefined };
}

/** @param {Layering} layering */
function order(layering) {
  return layering.levels.map((layers) => layers.map((layer) => layer.name).join(' | ')).join(' → ');
}

/**
 * Why an import breaks a layering, or undefined when it keeps it.
 * @param {Layering} layering
 * @param {{ layer: Layer, level: number | undefined }} importer
 * @param {{ layer: Layer, level: number | undefined }} imported
 */
function layeringProblem(layering, importer, imported) {
  if (importer.layer === imported.layer || importer.level === undefined || imported.level === undefined) return undefined;
  const rule = `${importer.layer.name} must not import ${imported.layer.name}`;
  if (imported.level > importer.level) return `${rule}: ${imported.layer.name} is a higher layer`;
  if (imported.level === importer.level) return `${rule}: ${layering.siblings}`;
  return undefined;
}

/**
 * What is wrong with an import between two files of lib/ (paths relative to the repository), if anything.
 * @param {string} from
 * @param {string} to
 * @returns {string | undefined}
 */
function layerProblem(from, to) {
  if (ALLOWED.has(`${from} -> ${to}`)) return undefined;
  const [fromFile, toFile] = [from, to].map((file) => file.slice('lib/'.length));
  const importer = classify(LIB_LAYERS, fromFile);
  const imported = classify(LIB_LAYERS, toFile);
  if (!importer || !imported) return undefined; // reported once per file by `unlayered`
  const forbidden = FORBIDDEN.find((rule) => rule.from === importer.layer.name && rule.to === imported.layer.name);
  if (forbidden) return `${forbidden.from} must not import ${forbidden.to}: ${forbidden.reason}`;
  const problem = layeringProblem(LIB_LAYERS, importer, imported);
  const sublayers = SUBLAYERS[importer.layer.name];
  if (problem || importer.layer !== imported.layer || !sublayers) return problem;
  const [subImporter, subImported] = [classify(sublayers, fromFile), classify(sublayers, toFile)];
  return subImporter && subImported ? layeringProblem(sublayers, subImporter, subImported) : undefined;
}

/**
 * A file that no layer holds, or undefined.
 * @param {string} file path relative to the repository
 */
function unlayered(file) {
  const libFile = file.slice('lib/'.length);
  const top = classify(LIB_LAYERS, libFile);
  const sublayers = top && SUBLAYERS[top.layer.name];
  if (!top || (sublayers && !classify(sublayers, libFile)))
    return `${file} is in no layer: add its folder to the layers in tools/check-imports.mjs`;
  return undefined;
}

/**
 * The module specifiers a file names, each with its line and whether it is used for types only.
 * @param {ts.SourceFile} source
 * @returns {{ specifier: string, line: number, typeOnly: boolean }[]}
 */
function importsOf(source) {
  /** @type {{ specifier: string, line: number, typeOnly: boolean }[]} */
  const found = [];
  /** @param {ts.Node} node @param {boolean} typeOnly */
  const add = (node, typeOnly) => {
    if (!ts.isStringLiteralLike(node)) return;
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    found.push({ specifier: node.text, line, typeOnly });
  };
  /** @param {ts.Node} node */
  const visit = (node) => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      const onlyTypeSpecifiers =
        !!clause &&
        !clause.name &&
        !!bindings &&
        ts.isNamedImports(bindings) &&
        bindings.elements.length > 0 &&
        bindings.elements.every((e) => e.isTypeOnly);
      add(node.moduleSpecifier, !!clause && (clause.isTypeOnly || onlyTypeSpecifiers));
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      const clause = node.exportClause;
      const onlyTypeSpecifiers =
        !!clause && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly);
      add(node.moduleSpecifier, node.isTypeOnly || onlyTypeSpecifiers);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node.moduleReference.expression, node.isTypeOnly);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node.argument.literal, true);
    } else if (
      ts.isCallExpression(node) &&
      node.arguments.length === 1 &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
    ) {
      add(node.arguments[0], false);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * The strongly connected components of a graph (Tarjan), each with more than one file.
 * @param {Map<string, Map<string, unknown>>} graph
 * @returns {string[][]}
 */
function cyclicGroups(graph) {
  /** @type {Map<string, { index: number, low: number }>} */
  const seen = new Map();
  /** @type {string[]} */
  const stack = [];
  const onStack = new Set();
  /** @type {string[][]} */
  const groups = [];
  /** @param {string} file */
  const connect = (file) => {
    const node = { index: seen.size, low: seen.size };
    seen.set(file, node);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file)?.keys() ?? []) {
      const known = seen.get(next);
      if (!known) {
        connect(next);
        node.low = Math.min(node.low, /** @type {{ low: number }} */ (seen.get(next)).low);
      } else if (onStack.has(next)) {
        node.low = Math.min(node.low, known.index);
      }
    }
    if (node.low !== node.index) return;
    /** @type {string[]} */
    const group = [];
    let member;
    do {
      member = /** @type {string} */ (stack.pop());
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1) groups.push(group.sort());
  };
  for (const file of graph.keys()) if (!seen.has(file)) connect(file);
  return groups;
}

/**
 * A shortest cycle through `start` inside `group` (breadth first).
 * @param {Map<string, Map<string, unknown>>} graph
 * @param {string[]} group
 * @param {string} start
 * @returns {string[]} the files of the cycle, `start` first (and not repeated at the end)
 */
function shortestCycle(graph, group, start) {
  const inGroup = new Set(group);
  /** @type {Map<string, string>} */
  const cameFrom = new Map();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    for (const next of graph.get(queue[i])?.keys() ?? []) {
      if (!inGroup.has(next) || cameFrom.has(next)) continue;
      cameFrom.set(next, queue[i]);
      if (next === start) {
        const cycle = [];
        for (let file = queue[i]; file !== start; file = /** @type {string} */ (cameFrom.get(file))) cycle.unshift(file);
        return [start, ...cycle];
      }
      queue.push(next);
    }
  }
  return [start];
}

const config = ts.getParsedCommandLineOfConfigFile(path.join(root, 'tsconfig.json'), undefined, {
  ...ts.sys,
  onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
    throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
  },
});
const options = /** @type {ts.ParsedCommandLine} */ (config).options;
const resolutionCache = ts.createModuleResolutionCache(root, (name) => name, options);
const relative = (/** @type {string} */ file) => path.relative(root, file).split(path.sep).join('/');

const files = readdirSync(libDir, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
  .map((file) => path.join(libDir, file))
  .sort();

/** @type {string[]} */
const problems = [];
/** The imports between files of lib/: importer → imported → where and whether for types only. */
/** @type {Map<string, Map<string, { line: number, typeOnly: boolean }>>} */
const graph = new Map();
let importCount = 0;
for (const file of files) {
  const from = relative(file);
  const notInLayer = unlayered(from);
  if (notInLayer) problems.push(notInLayer);
  const edges = new Map();
  graph.set(from, edges);
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  for (const { specifier, line, typeOnly } of importsOf(source)) {
    const resolved = ts.resolveModuleName(specifier, file, options, ts.sys, resolutionCache).resolvedModule;
    if (!resolved) {
      if (specifier.startsWith('.')) problems.push(`${from}:${line}: cannot resolve '${specifier}' (tsc tells why)`);
      continue;
    }
    if (resolved.isExternalLibraryImport || !resolved.resolvedFileName.startsWith(libDir + path.sep)) continue;
    const to = relative(resolved.resolvedFileName);
    importCount++;
    const problem = layerProblem(from, to);
    if (problem) problems.push(`${from}:${line}: imports '${specifier}' (${to}): ${problem}`);
    const edge = edges.get(to);
    if (!edge) edges.set(to, { line, typeOnly });
    else edge.typeOnly &&= typeOnly;
  }
}

for (const group of cyclicGroups(graph)) {
  const cycle = shortestCycle(graph, group, group[0]);
  const steps = cycle.map((file, i) => {
    const edge = /** @type {{ line: number, typeOnly: boolean }} */ (graph.get(file)?.get(cycle[(i + 1) % cycle.length]));
    return `${file}:${edge.line}${edge.typeOnly ? ' (type-only)' : ''}`;
  });
  const others = group.length > cycle.length ? `; the cycles tie together ${group.length} files: ${group.join(', ')}` : '';
  problems.push(`import cycle: ${steps.join(' → ')} → ${cycle[0]}${others}`);
}

if (problems.length > 0) {
  console.error(problems.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).join('\n'));
  console.error(
    `\ncheck-imports: ${problems.length} problem(s) in the imports of lib/. A file imports only its own and lower layers (| separates siblings, which do not import each other), from the bottom:`,
  );
  for (const layering of [LIB_LAYERS, ...Object.values(SUBLAYERS)]) console.error(`  ${order(layering)}`);
  process.exit(1);
}
console.log(`check-imports: ${files.length} files, ${importCount} imports inside lib/: no cycle, every import keeps the layers`);
