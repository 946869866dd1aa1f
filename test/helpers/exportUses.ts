/**
 * Which exported names another file imports, read from the syntax trees of the TypeScript compiler (its API,
 * typescript/unstable/sync, over the projects of tsconfig.json, agent/ and api/console/; no type check): every `import`, `export ... from`, `import()` (a string, with the names its destructuring takes, or all of
 * them) and `import('...').Name` type (in TypeScript types and in JSDoc), resolved as Node resolves them (a relative
 * path, `.js` standing for `.ts`; `edgehub-agent/*` by the agent package's `exports`), through re-exports (`export
 * * from`, `export { x } from`; a named re-export is an import, and an export that must be imported in turn). A namespace import (`import * as c`) uses the names read from it (`c.Name`), or all
 * of them when the namespace itself is passed on.
 *
 * What it reports is an export that no other file imports: its `export` keyword says something untrue (the name is
 * the file's own), and drops it from the linters' view of unused code.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { type Node, type SourceFile, SyntaxKind } from 'typescript/unstable/ast';
import * as is from 'typescript/unstable/ast/is';
import { API } from 'typescript/unstable/sync';

/** An exported declaration: its file (relative to the root), its name and where its `export` keyword starts. */
export interface ExportedName {
  file: string;
  name: string;
  /** Offset of the `export` keyword in the file (for a declaration that carries it; -1 for `export { x }` and re-exports). */
  keyword: number;
}

interface ModuleFacts {
  /** Names declared here and exported. */
  declared: ExportedName[];
  /** `export { a as b } from 'x'`: b -> [x, a]. */
  reexports: Map<string, [string, string]>;
  /** `export * from 'x'`. */
  stars: string[];
  /** What this file takes from others: [file, name] ('*' for every name). */
  uses: [string, string][];
}

/** The file a module specifier names, relative to the root, or undefined for a package or a built-in. */
function resolver(root: string): (from: string, spec: string) => string | undefined {
  const agentExports = JSON.parse(readFileSync(path.join(root, 'agent/package.json'), 'utf8')).exports as Record<string, string>;
  const existing = (candidates: string[]) => candidates.find((c) => existsSync(path.join(root, c)) && statSync(path.join(root, c)).isFile());
  return (from, spec) => {
    if (spec.startsWith('edgehub-agent/')) {
      const target = agentExports[`./${spec.slice('edgehub-agent/'.length)}`];
      return target ? path.join('agent', target) : undefined;
    }
    if (!spec.startsWith('.')) return undefined;
    const base = path.relative(root, path.resolve(root, path.dirname(from), spec));
    const stem = base.replace(/\.(js|ts|mjs)$/, '');
    return existing([base, `${stem}.ts`, `${stem}.js`, `${stem}.mjs`, path.join(base, 'index.ts'), path.join(base, 'index.js')]);
  };
}

const modifiers = (node: Node): readonly Node[] => (node as { modifiers?: readonly Node[] }).modifiers ?? [];
const hasExport = (node: Node) => modifiers(node).some((m) => m.kind === SyntaxKind.ExportKeyword);
const isDefault = (node: Node) => modifiers(node).some((m) => m.kind === SyntaxKind.DefaultKeyword);
const exportKeyword = (node: Node, source: SourceFile) =>
  modifiers(node)
    .find((m) => m.kind === SyntaxKind.ExportKeyword)!
    .getStart(source);
const isStringLiteralLike = (node: Node | undefined): node is Node & { text: string } =>
  node !== undefined && (node.kind === SyntaxKind.StringLiteral || node.kind === SyntaxKind.NoSubstitutionTemplateLiteral);

/** The names a binding pattern (or a plain name) declares. */
function boundNames(name: Node): string[] {
  if (is.isIdentifier(name)) return [name.text];
  const elements = (name as unknown as { elements: readonly Node[] }).elements;
  return elements.flatMap((e) => (is.isOmittedExpression(e) ? [] : boundNames((e as unknown as { name: Node }).name)));
}

function facts(root: string, file: string, source: SourceFile, resolve: (from: string, spec: string) => string | undefined): ModuleFacts {
  const text = source.text;
  const out: ModuleFacts = { declared: [], reexports: new Map(), stars: [], uses: [] };
  const namespaces = new Map<string, string>();
  const specOf = (node: Node | undefined) => (isStringLiteralLike(node) ? resolve(file, node.text) : undefined);

  for (const statement of source.statements) {
    if (is.isImportDeclaration(statement)) {
      const target = specOf(statement.moduleSpecifier);
      const clause = statement.importClause;
      if (!target || !clause) continue;
      if (clause.name) out.uses.push([target, 'default']);
      const bindings = clause.namedBindings;
      if (bindings && is.isNamespaceImport(bindings)) namespaces.set(bindings.name.text, target);
      else if (bindings) for (const e of bindings.elements) out.uses.push([target, (e.propertyName ?? e.name).text]);
    } else if (is.isExportDeclaration(statement)) {
      const target = specOf(statement.moduleSpecifier);
      if (statement.moduleSpecifier && !target) continue;
      if (!statement.exportClause) {
        if (target) out.stars.push(target);
      } else if (is.isNamedExports(statement.exportClause)) {
        for (const e of statement.exportClause.elements) {
          const local = (e.propertyName ?? e.name).text;
          // a re-export is an import of the name and an export of its own
          if (target) out.reexports.set(e.name.text, [target, local]);
          out.declared.push({ file, name: e.name.text, keyword: -1 });
        }
      } else if (target) out.uses.push([target, '*']);
    } else if (hasExport(statement)) {
      const name = isDefault(statement)
        ? ['default']
        : is.isVariableStatement(statement)
          ? statement.declarationList.declarations.flatMap((d) => boundNames(d.name))
          : (statement as unknown as { name?: { text: string } }).name
            ? [(statement as unknown as { name: { text: string } }).name.text]
            : [];
      for (const n of name) out.declared.push({ file, name: n, keyword: exportKeyword(statement, source) });
    }
  }

  const visit = (node: Node): void => {
    // import('x'), with the names a destructuring takes from it, or all of them
    if (is.isCallExpression(node) && node.expression.kind === SyntaxKind.ImportKeyword) {
      const target = specOf(node.arguments[0]);
      if (target) {
        const parent = is.isAwaitExpression(node.parent) ? node.parent.parent : node.parent;
        if (is.isVariableDeclaration(parent) && is.isObjectBindingPattern(parent.name)) {
          for (const e of parent.name.elements) {
            const taken = e.propertyName ?? e.name;
            out.uses.push([target, taken && is.isIdentifier(taken) ? taken.text : '*']);
          }
        } else out.uses.push([target, '*']);
      }
    }
    // import('x').Name as a type
    if (is.isImportTypeNode(node) && is.isLiteralTypeNode(node.argument) && is.isStringLiteral(node.argument.literal)) {
      const target = resolve(file, node.argument.literal.text);
      if (target) out.uses.push([target, node.qualifier ? node.qualifier.getText(source).split('.')[0] : '*']);
    }
    // c.Name of a namespace import; the namespace itself passed on uses every name
    if (is.isIdentifier(node) && namespaces.has(node.text) && !is.isNamespaceImport(node.parent)) {
      const target = namespaces.get(node.text)!;
      const parent = node.parent;
      if (is.isPropertyAccessExpression(parent) && parent.expression === node) out.uses.push([target, parent.name.text]);
      else if (is.isQualifiedName(parent) && parent.left === node) out.uses.push([target, parent.right.text]);
      else if (!(is.isPropertyAccessExpression(parent) && parent.name === node)) out.uses.push([target, '*']);
    }
    node.forEachChild(visit);
  };
  visit(source);
  // import('x').Name in JSDoc (the agent's JavaScript), which the parser keeps out of the tree walked above
  if (!file.endsWith('.ts')) {
    for (const m of text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)\.([A-Za-z_$][\w$]*)/g)) {
      const target = resolve(file, m[1]);
      if (target) out.uses.push([target, m[2]]);
    }
  }
  return out;
}

/** The projects whose files are read: the service with its tests and benchmarks, the agent, the web console. */
const PROJECTS = ['tsconfig.json', 'agent/tsconfig.json', 'api/console/tsconfig.json'];

/**
 * Every exported declaration under `sources` that no other file under `users` imports (files relative to `root`).
 */
export function unimportedExports(root: string, sources: string[], users: string[]): ExportedName[] {
  const resolve = resolver(root);
  const all = new Map<string, ModuleFacts>();
  const api = new API({ cwd: root });
  try {
    const configs = PROJECTS.map((p) => path.join(root, p));
    const snapshot = api.updateSnapshot({ openProjects: configs });
    for (const config of configs) {
      const program = snapshot.getProject(config)!.program;
      for (const name of program.getSourceFileNames()) {
        const file = path.relative(root, name);
        if (file.startsWith('..') || file.includes('node_modules') || file.endsWith('.d.ts') || all.has(file)) continue;
        if (![...sources, ...users].some((top) => file.startsWith(`${top}/`))) continue;
        all.set(file, facts(root, file, program.getSourceFile(name)!, resolve));
      }
    }
  } finally {
    api.close();
  }
  const used = new Set<string>();
  /** Marks `name` of `file` as imported by another file, through its re-exports. */
  const mark = (file: string, name: string, seen = new Set<string>()): void => {
    const key = `${file} ${name}`;
    if (seen.has(key)) return;
    seen.add(key);
    const m = all.get(file);
    if (!m) return;
    if (name === '*') {
      for (const d of m.declared) used.add(`${file} ${d.name}`);
      for (const [target, local] of m.reexports.values()) mark(target, local, seen);
      for (const star of m.stars) mark(star, '*', seen);
      return;
    }
    used.add(key);
    const re = m.reexports.get(name);
    if (re) mark(re[0], re[1], seen);
    if (!m.declared.some((d) => d.name === name)) for (const star of m.stars) mark(star, name, seen);
  };
  for (const [file, m] of all) {
    for (const [target, name] of m.uses) if (target !== file) mark(target, name);
    for (const [target, local] of m.reexports.values()) if (target !== file) mark(target, local);
  }
  const inSources = (file: string) => sources.some((s) => file === s || file.startsWith(`${s}/`));
  return [...all.entries()]
    .filter(([file]) => inSources(file))
    .flatMap(([, m]) => m.declared)
    .filter((d) => !used.has(`${d.file} ${d.name}`));
}
