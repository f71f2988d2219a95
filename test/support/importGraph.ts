/**
 * The import graph of the sources, read with TypeScript's parser: the one walker behind every test about what a
 * module loads (entry points, the CLI's lazy commands, the rooms of `src/`).
 *
 * Each import is classified the way the build treats it (`verbatimModuleSyntax`): `static` is loaded when the
 * importing module is (`import … from`, `import "x"`, `export … from`, including `import { type A } from`, which
 * is kept as `import {} from`), `dynamic` is an `import()` call, loaded when that code runs, and `type` vanishes
 * from the output (`import type`, `export type … from`, `typeof import("x")`).
 */
import { readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import ts from "typescript";

export const repositoryRoot = resolve(import.meta.dirname, "../..");

/** How an import is loaded: with the module, when an `import()` runs, or not at all (types only). */
export type ImportKind = "static" | "dynamic" | "type";

/** One import of a module. */
export type ModuleImport = {
  /** As written, e.g. `./engine.js`, `node:fs`, `@langchain/core/retrievers`. */
  specifier: string;
  kind: ImportKind;
  /** For a relative specifier: the imported source file (absolute, `.ts`). */
  file?: string;
};

const parsed = new Map<string, ModuleImport[]>();

/** The source file a relative specifier names (`./x.js` → `./x.ts`, a folder → its `index.ts`). */
function sourceFileOf(from: string, specifier: string): string {
  const target = resolve(dirname(from), specifier);
  if (target.endsWith(".js")) return `${target.slice(0, -3)}.ts`;
  if (target.endsWith(".ts")) return target;
  return resolve(target, "index.ts");
}

/** Every import of `file` (absolute path), in source order. */
export function importsOf(file: string): ModuleImport[] {
  const cached = parsed.get(file);
  if (cached) return cached;
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true);
  const found: ModuleImport[] = [];
  const add = (specifier: string, kind: ImportKind) => {
    found.push({
      specifier,
      kind,
      ...(specifier.startsWith(".") ? { file: sourceFileOf(file, specifier) } : {}),
    });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node.importClause?.isTypeOnly ? "type" : "static");
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier.text, node.isTypeOnly ? "type" : "static");
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      add(node.arguments[0].text, "dynamic");
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      add(node.argument.literal.text, "type");
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  parsed.set(file, found);
  return found;
}

/** The package a bare specifier belongs to: `@scope/name/sub` → `@scope/name`, `node:fs` → `node:fs`. */
export function packageOf(specifier: string): string {
  if (specifier.startsWith("node:")) return specifier;
  return specifier
    .split("/")
    .slice(0, specifier.startsWith("@") ? 2 : 1)
    .join("/");
}

/** What a module and everything it reaches through the followed kinds of import load. */
export type ReachedModules = {
  /** Source files reached, relative to the repository root (`src/knowledge/engine.ts`), the entry included. */
  files: Set<string>;
  /** Bare specifiers imported by those files through the followed kinds, as written (`node:fs`, `ai`, `zod`). */
  packages: Set<string>;
};

/**
 * The modules `entry` (relative to the repository root) reaches through imports of the `follow` kinds: `["static"]`
 * is what loads when the entry is imported; `["static", "dynamic"]` everything it may load at run time.
 */
export function reachFrom(entry: string, follow: readonly ImportKind[]): ReachedModules {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [resolve(repositoryRoot, entry)];
  while (pending.length > 0) {
    const file = pending.pop()!;
    const shown = relative(repositoryRoot, file).split("\\").join("/");
    if (files.has(shown)) continue;
    files.add(shown);
    for (const imported of importsOf(file)) {
      if (!follow.includes(imported.kind)) continue;
      if (imported.file) pending.push(imported.file);
      else packages.add(imported.specifier);
    }
  }
  return { files, packages };
}
