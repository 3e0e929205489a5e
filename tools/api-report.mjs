// @ts-check
// The public API report: what a consumer of the package sees, so that the published surface cannot
// grow (or change) by accident. It reads the built declarations of the three entry points (run
// `npm run build` first) and lists every export with its declaration as printed from dist/*.d.ts,
// without members marked @internal or private (the .d.ts keep them: stripInternal would break the
// `implements` of classes whose lifecycle hooks are @internal). Then it lists the package's types that
// the exported declarations reach but no entry point exports: leaked internal types, which consumers
// see but cannot name.
//
// Usage: node tools/api-report.mjs            print the report
//        node tools/api-report.mjs --check    fail with a diff when api/nestjs-dynamo-lock.api.md differs
//        node tools/api-report.mjs --update   rewrite api/nestjs-dynamo-lock.api.md
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as prettier from 'prettier';
import ts from 'typescript';

const root = path.resolve(import.meta.dirname, '..');
const distDir = path.join(root, 'dist');
const reportFile = path.join(root, 'api', 'nestjs-dynamo-lock.api.md');
const ENTRY_POINTS = [
  { name: 'nestjs-dynamo-lock', file: 'index.d.ts' },
  { name: 'nestjs-dynamo-lock/health', file: 'health/index.d.ts' },
  { name: 'nestjs-dynamo-lock/standalone', file: 'standalone/index.d.ts' },
];

const mode = process.argv[2];
if (mode !== undefined && mode !== '--check' && mode !== '--update') {
  console.error('usage: node tools/api-report.mjs [--check | --update]');
  process.exit(2);
}

const entryFiles = ENTRY_POINTS.map((entry) => path.join(distDir, entry.file));
const missing = entryFiles.filter((file) => !existsSync(file));
if (missing.length > 0) {
  console.error(`api-report: ${missing.map((file) => path.relative(root, file)).join(', ')} missing: run npm run build first`);
  process.exit(2);
}

const program = ts.createProgram(entryFiles, {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.Node20,
  moduleResolution: ts.ModuleResolutionKind.Node16,
  strict: true,
  skipLibCheck: true,
  noEmit: true,
  types: ['node'],
});
const checker = program.getTypeChecker();
const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });

/** @param {ts.Node} node */
const isOurs = (node) => node.getSourceFile().fileName.startsWith(distDir + '/');
/** @param {ts.Node} node */
const distPath = (node) => path.relative(distDir, node.getSourceFile().fileName).replace(/\.d\.ts$/, '');
/** @param {ts.Node} node */
const isInternal = (node) => ts.getJSDocTags(node).some((tag) => tag.tagName.text === 'internal');
/** @param {ts.Symbol} symbol */
const resolveAlias = (symbol) => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol);

/**
 * A member the consumer cannot use: marked @internal, `private` (but a private constructor, which says
 * that the class cannot be constructed), or the `#private;` of ES private fields.
 * @param {ts.Node} node
 */
function isHidden(node) {
  if (!ts.isClassElement(node) && !ts.isTypeElement(node)) return false;
  if (isInternal(node)) return true;
  if (ts.isConstructorDeclaration(node)) return false;
  const isPrivate = ts.canHaveModifiers(node) && ts.getModifiers(node)?.some((modifier) => modifier.kind === ts.SyntaxKind.PrivateKeyword);
  return !!isPrivate || (node.name !== undefined && ts.isPrivateIdentifier(node.name));
}

/**
 * The declaration as the consumer sees it: without hidden members (and, for a variable, without the
 * other variables of its statement).
 * @param {ts.Declaration} declaration
 * @returns {ts.Node}
 */
function publicView(declaration) {
  /** @type {ts.Node} */
  let node = declaration;
  if (ts.isVariableDeclaration(declaration)) {
    const statement = /** @type {ts.VariableStatement} */ (declaration.parent.parent);
    node = ts.factory.updateVariableStatement(
      statement,
      statement.modifiers,
      ts.factory.updateVariableDeclarationList(statement.declarationList, [declaration]),
    );
  }
  /** @type {ts.TransformerFactory<ts.Node>} */
  const dropHidden = (context) => {
    /** @type {ts.Visitor} */
    const visit = (child) => (isHidden(child) ? undefined : ts.visitEachChild(child, visit, context));
    return (top) => ts.visitEachChild(top, visit, context);
  };
  const result = ts.transform(node, [dropHidden]);
  const [view] = result.transformed;
  result.dispose();
  return view;
}

/**
 * The symbols of the package's own declarations that a declaration names (through type references,
 * heritage clauses, `typeof` and `import('…')` types), type parameters excepted.
 * @param {ts.Node} node
 * @returns {Set<ts.Symbol>}
 */
function referencedSymbols(node) {
  /** @type {Set<ts.Symbol>} */
  const found = new Set();
  /** @param {ts.EntityName | ts.Expression | undefined} name */
  const add = (name) => {
    while (name && (ts.isQualifiedName(name) || ts.isPropertyAccessExpression(name)))
      name = ts.isQualifiedName(name) ? name.left : name.expression;
    const symbol = name && name.pos >= 0 ? checker.getSymbolAtLocation(name) : undefined;
    if (!symbol) return;
    const target = resolveAlias(symbol);
    if (target.flags & ts.SymbolFlags.TypeParameter) return;
    if (target.declarations?.some(isOurs)) found.add(target);
  };
  /** @param {ts.Node} child */
  const visit = (child) => {
    if (ts.isTypeReferenceNode(child)) add(child.typeName);
    else if (ts.isExpressionWithTypeArguments(child)) add(child.expression);
    else if (ts.isTypeQueryNode(child)) add(child.exprName);
    else if (ts.isImportTypeNode(child) && child.pos >= 0) {
      const type = checker.getTypeFromTypeNode(child);
      const symbol = type.aliasSymbol ?? type.getSymbol();
      if (symbol?.declarations?.some(isOurs)) found.add(symbol);
    }
    ts.forEachChild(child, visit);
  };
  visit(node);
  return found;
}

/** @param {ts.Declaration} declaration */
function kindOf(declaration) {
  if (ts.isClassDeclaration(declaration)) return 'class';
  if (ts.isInterfaceDeclaration(declaration)) return 'interface';
  if (ts.isTypeAliasDeclaration(declaration)) return 'type';
  if (ts.isFunctionDeclaration(declaration)) return 'function';
  if (ts.isEnumDeclaration(declaration)) return 'enum';
  if (ts.isModuleDeclaration(declaration)) return 'namespace';
  if (ts.isVariableDeclaration(declaration)) return declaration.parent.flags & ts.NodeFlags.Const ? 'const' : 'let';
  return ts.SyntaxKind[declaration.kind];
}

/**
 * What the report says of one symbol: its kind(s), where it is declared and its printed declarations.
 * @param {ts.Symbol} symbol
 */
function describe(symbol) {
  const declarations = symbol.declarations ?? [];
  const kinds = [...new Set(declarations.map(kindOf))].join(' + ');
  const internal = declarations.some(isInternal) ? ', @internal' : '';
  const where = declarations.length > 0 ? distPath(declarations[0]) : '?';
  const views = declarations.map(publicView);
  const code = views.map((view, i) => printer.printNode(ts.EmitHint.Unspecified, view, declarations[i].getSourceFile()));
  return {
    kinds: `${kinds}${internal}`,
    where,
    code: code.join('\n'),
    references: new Set(views.flatMap((view) => [...referencedSymbols(view)])),
  };
}

/**
 * The exports of each entry point, by name, with the symbols they stand for.
 * @type {{ name: string, exports: { name: string, symbol: ts.Symbol }[] }[]}
 */
const entries = ENTRY_POINTS.map((entry, index) => {
  const source = /** @type {ts.SourceFile} */ (program.getSourceFile(entryFiles[index]));
  const moduleSymbol = /** @type {ts.Symbol} */ (checker.getSymbolAtLocation(source));
  const exports = checker
    .getExportsOfModule(moduleSymbol)
    .map((symbol) => ({ name: symbol.getName(), symbol: resolveAlias(symbol) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { name: entry.name, exports };
});
const exported = new Set(entries.flatMap((entry) => entry.exports.map((item) => item.symbol)));

/**
 * Each symbol is described once (the entry points share most of theirs), under a title unique in the report.
 * @type {Map<ts.Symbol, { title: string } & ReturnType<typeof describe>>}
 */
const described = new Map();
const titles = new Set();
/** @param {ts.Symbol} symbol @param {string} name */
function describeOnce(symbol, name) {
  let item = described.get(symbol);
  if (!item) {
    const description = describe(symbol);
    const title = titles.has(name) ? `${name} (${description.where})` : name;
    titles.add(title);
    item = { title, ...description };
    described.set(symbol, item);
  }
  return item;
}

for (const entry of entries) for (const { name, symbol } of entry.exports) describeOnce(symbol, name);

/**
 * The package's types that the exported declarations reach (directly or through other leaked ones) but
 * no entry point exports, with the exports that reach them.
 * @type {Map<ts.Symbol, Set<string>>}
 */
const leaked = new Map();
const queue = [...described.values()].map((item) => ({ item, via: item.title }));
for (let i = 0; i < queue.length; i++) {
  const { item, via } = queue[i];
  for (const reference of item.references) {
    if (exported.has(reference)) continue;
    const firstTime = !leaked.has(reference);
    const users = leaked.get(reference) ?? new Set();
    users.add(via);
    leaked.set(reference, users);
    if (firstTime) queue.push({ item: describeOnce(reference, reference.getName()), via });
  }
}

/** The id GitHub gives a heading. @param {string} title */
const anchor = (title) =>
  title
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');
const byTitle = (/** @type {{ title: string }} */ a, /** @type {{ title: string }} */ b) =>
  a.title < b.title ? -1 : a.title > b.title ? 1 : 0;
/** @param {{ title: string, kinds: string, where: string, code: string }} item @param {string} note */
const section = (item, note) => [
  `### ${item.title}`,
  '',
  `${item.kinds}, declared in \`${item.where}\`${note}`,
  '',
  '```ts',
  item.code,
  '```',
  '',
];

const lines = [
  '# API report: nestjs-dynamo-lock',
  '',
  'What consumers of the package see, from `dist/*.d.ts`. Written by `npm run api:update` (tools/api-report.mjs);',
  '`npm run api:check` fails when the built API differs from this file. Members marked `@internal` and private members (but private constructors) are left out.',
  '',
  '## Entry points',
  '',
];
for (const entry of entries) {
  lines.push(`### ${entry.name}`, '');
  for (const { name, symbol } of entry.exports) {
    const item = /** @type {{ title: string, kinds: string }} */ (described.get(symbol));
    lines.push(`- [${name}](#${anchor(item.title)}): ${item.kinds}`);
  }
  lines.push('');
}
lines.push('## Exported declarations', '');
const exportedItems = [...described.entries()].filter(([symbol]) => exported.has(symbol)).map(([, item]) => item);
for (const item of exportedItems.sort(byTitle)) lines.push(...section(item, ''));
lines.push('## Leaked internal types', '');
lines.push(
  'Types of the package that the exported declarations reach but no entry point exports: consumers see them but cannot name them.',
);
lines.push('Export them, or keep them out of the public declarations.', '');
const leakedItems = [...leaked.entries()].map(([symbol, users]) => ({
  item: /** @type {{ title: string, kinds: string, where: string, code: string }} */ (described.get(symbol)),
  users,
}));
if (leakedItems.length === 0) lines.push('None.', '');
for (const { item, users } of leakedItems.sort((a, b) => byTitle(a.item, b.item))) {
  lines.push(
    ...section(
      item,
      `; reached from ${[...users]
        .sort()
        .map((user) => `\`${user}\``)
        .join(', ')}`,
    ),
  );
}

const report = await prettier.format(lines.join('\n'), { ...(await prettier.resolveConfig(reportFile)), filepath: reportFile });

if (mode === undefined) {
  process.stdout.write(report);
} else if (mode === '--update') {
  writeFileSync(reportFile, report);
  console.log(`api-report: wrote ${path.relative(root, reportFile)} (${leakedItems.length} leaked internal type(s))`);
} else {
  const committed = existsSync(reportFile) ? readFileSync(reportFile, 'utf8') : '';
  if (committed === report) {
    console.log(`api-report: the public API matches ${path.relative(root, reportFile)}`);
  } else {
    const relativeReport = path.relative(root, reportFile);
    const diff = spawnSync(
      'diff',
      ['-u', '--label', `${relativeReport} (committed)`, '--label', `${relativeReport} (built)`, reportFile, '-'],
      {
        input: report,
        encoding: 'utf8',
      },
    );
    console.error(diff.stdout || diff.error?.message || '');
    console.error(
      `api-report: the public API differs from ${relativeReport}. If the change is meant, run npm run api:update and commit the report.`,
    );
    process.exit(1);
  }
}
